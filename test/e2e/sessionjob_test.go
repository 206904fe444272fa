//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/wait"
)

// sessionJobs loads examples/session-job/session-jobs.yaml; the jars are pointed at the
// local example jar (file://, fetched by the operator from its own filesystem) so the suite
// needs no network.
func sessionJobs(t *testing.T, namespace string) []*flinkv1beta1.FlinkSessionJob {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "examples/session-job/session-jobs.yaml"))
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*flinkv1beta1.FlinkSessionJob
	for {
		j := &flinkv1beta1.FlinkSessionJob{}
		if err := dec.Decode(j); err != nil {
			break
		}
		j.Namespace = namespace
		j.Spec.Job.JarURI = "file://" + filepath.Join(root, "bin/flink/2.3.0/examples/TopSpeedWindowing.jar")
		out = append(out, j)
	}
	require.Len(t, out, 2)
	return out
}

func jobReady(j *flinkv1beta1.FlinkSessionJob) bool {
	c := meta.FindStatusCondition(j.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == j.Generation &&
		j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
}

// TestSessionJobs: two jobs on one session cluster; a savepoint upgrade of one restores from
// its savepoint while the other keeps running; suspend and resume; the session's deletion
// waits for its jobs, and deleting the jobs cancels them.
func TestSessionJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "e2e-session"
	session := example(t, "examples/session-job/session-cluster.yaml", ns)
	sessionKey := client.ObjectKeyFromObject(session)
	require.NoError(t, env.Client.Create(ctx, session))
	waitFor(t, sessionKey, "session Ready", 3*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionTrue
	})

	jobs := sessionJobs(t, ns)
	for _, j := range jobs {
		require.NoError(t, env.Client.Create(ctx, j))
	}
	stateful, stateless := client.ObjectKeyFromObject(jobs[0]), client.ObjectKeyFromObject(jobs[1])
	first := waitFor(t, stateful, "RUNNING", 3*time.Minute, jobReady)
	other := waitFor(t, stateless, "RUNNING", 3*time.Minute, jobReady)
	allTasksRunning(t, sessionKey, first.Status.JobStatus.JobID)
	allTasksRunning(t, sessionKey, other.Status.JobStatus.JobID)

	t.Run("savepoint upgrade of one job restores its savepoint; the other keeps running", func(t *testing.T) {
		before := first.Status.JobStatus.JobID
		patchJob(t, stateful, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
		j := waitFor(t, stateful, "upgraded", 3*time.Minute, func(j *flinkv1beta1.FlinkSessionJob) bool {
			return jobReady(j) && j.Status.JobStatus.JobID != before
		})
		sp := j.Status.JobStatus.SavepointInfo.LastSavepoint
		require.Equal(t, flinkv1beta1.SnapshotTriggerUpgrade, sp.TriggerType)
		restored := restoredFrom(t, sessionKey, j.Status.JobStatus.JobID)
		require.True(t, restored.IsSavepoint)
		require.Equal(t, localPath(sp.Location), localPath(restored.ExternalPath))
		state, err := flinkREST(t, sessionKey).JobStatus(ctx, other.Status.JobStatus.JobID)
		require.NoError(t, err)
		require.Equal(t, flink.JobState("RUNNING"), state, "the other job was not touched")
		first = j
	})

	t.Run("suspend and resume", func(t *testing.T) {
		patchJob(t, stateful, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.State = flinkv1beta1.JobStateSuspended })
		waitFor(t, stateful, "SUSPENDED", 2*time.Minute, func(j *flinkv1beta1.FlinkSessionJob) bool {
			return j.Status.LifecycleState == flinkv1beta1.LifecycleSuspended
		})
		patchJob(t, stateful, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.State = flinkv1beta1.JobStateRunning })
		j := waitFor(t, stateful, "resumed", 2*time.Minute, jobReady)
		logf(t, "resumed as job %s from %q (last savepoint %+v)", j.Status.JobStatus.JobID, j.Status.JobStatus.UpgradeSavepointPath,
			j.Status.JobStatus.SavepointInfo.LastSavepoint)
		restored := restoredFrom(t, sessionKey, j.Status.JobStatus.JobID)
		require.Equal(t, localPath(j.Status.JobStatus.SavepointInfo.LastSavepoint.Location), localPath(restored.ExternalPath))
	})

	t.Run("the session waits for its jobs; deleting the jobs cancels them", func(t *testing.T) {
		require.NoError(t, env.Client.Delete(ctx, session))
		wait.Never(t, 5*time.Second, "the session went while its jobs exist", func() bool {
			return env.Client.Get(ctx, sessionKey, &flinkv1beta1.FlinkDeployment{}) != nil
		})
		cl := flinkREST(t, sessionKey)
		var ids []string
		for _, key := range []client.ObjectKey{stateful, stateless} {
			j := &flinkv1beta1.FlinkSessionJob{}
			require.NoError(t, env.Client.Get(ctx, key, j))
			ids = append(ids, j.Status.JobStatus.JobID)
			require.NoError(t, env.Client.Delete(ctx, j))
		}
		for _, key := range []client.ObjectKey{stateful, stateless} {
			wait.For(t, 2*time.Minute, key.Name+" deleted", func() bool {
				return apierrors.IsNotFound(env.Client.Get(ctx, key, &flinkv1beta1.FlinkSessionJob{}))
			})
		}
		// A job's finalizer goes only once Flink reports the job terminal; the session may be
		// going already, so only an answer that is not CANCELED would be a failure.
		for _, id := range ids {
			if state, err := cl.JobStatus(ctx, id); err == nil {
				require.Equal(t, flink.JobState("CANCELED"), state, "job %s", id)
			}
		}
		wait.For(t, 2*time.Minute, "the session deleted after its jobs", func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, sessionKey, &flinkv1beta1.FlinkDeployment{}))
		})
		requireNoPods(t, sessionKey)
	})
}

func patchJob(t *testing.T, key client.ObjectKey, change func(*flinkv1beta1.FlinkSessionJob)) {
	t.Helper()
	j := &flinkv1beta1.FlinkSessionJob{}
	require.NoError(t, env.Client.Get(context.Background(), key, j))
	before := j.DeepCopy()
	change(j)
	require.NoError(t, env.Client.Patch(context.Background(), j, client.MergeFrom(before)))
}
