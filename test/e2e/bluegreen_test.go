//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/wait"
)

func updateBlueGreen(t *testing.T, key client.ObjectKey, change func(*flinkv1beta1.FlinkBlueGreenDeployment)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		bg := &flinkv1beta1.FlinkBlueGreenDeployment{}
		if err := env.Client.Get(context.Background(), key, bg); err != nil {
			return err
		}
		change(bg)
		return env.Client.Update(context.Background(), bg)
	}))
}

// TestBlueGreen is the blue/green scenario on real Flink 1.20: a template change switches blue to
// green with the job's state carried by a savepoint of blue (Flink says green's job restored
// from it), and a broken next child (an image no node can run) is aborted while the active
// child's job runs on, never stopped or restarted.
func TestBlueGreen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	// The checkpoint-ha example's cluster (without HA: each child is a cluster of its own) as
	// the template; both children share the hostPath volume, so green reads blue's savepoint.
	dep := example(t, "examples/checkpoint-ha/checkpoint-ha.yaml", "e2e-bluegreen")
	conf, err := dep.Spec.FlinkConfiguration.Flatten()
	require.NoError(t, err)
	for k := range conf {
		if strings.HasPrefix(k, "high-availability") {
			delete(conf, k)
		}
	}
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
	bg := &flinkv1beta1.FlinkBlueGreenDeployment{}
	bg.Namespace, bg.Name = dep.Namespace, "bluegreen"
	bg.Spec.Configuration = map[string]string{
		"kubernetes.operator.bluegreen.abort.grace-period":                 "3 min",
		"kubernetes.operator.bluegreen.reconciliation.reschedule-interval": "2s",
		"kubernetes.operator.bluegreen.deployment-deletion.delay":          "0ms",
	}
	bg.Spec.Template.Spec = dep.Spec
	key := client.ObjectKeyFromObject(bg)
	blueKey := client.ObjectKey{Namespace: key.Namespace, Name: "bluegreen-blue"}
	greenKey := client.ObjectKey{Namespace: key.Namespace, Name: "bluegreen-green"}
	require.NoError(t, env.Client.Create(ctx, bg))

	waitFor(t, key, "ACTIVE_BLUE", 3*time.Minute, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
		return bg.Status.BlueGreenState == flinkv1beta1.BlueGreenActiveBlue
	})
	blue := waitFor(t, blueKey, "Ready and RUNNING", time.Minute, readyAndRunning)
	blueJob := blue.Status.JobStatus.JobID
	allTasksRunning(t, blueKey, blueJob)
	cp := completedCheckpoint(t, blueKey, blueJob)
	logf(t, "blue up in %s, checkpoint %d", time.Since(start).Round(time.Second), cp.ID)

	// A template change: another checkpoint interval.
	updateBlueGreen(t, key, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) {
		bg.Spec.Template.Spec.FlinkConfiguration = setConfig(t, bg.Spec.Template.Spec.FlinkConfiguration, "execution.checkpointing.interval", "4s")
	})
	switching := waitFor(t, key, "TRANSITIONING_TO_GREEN", 2*time.Minute, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
		return bg.Status.BlueGreenState == flinkv1beta1.BlueGreenTransitioningToGreen
	})
	snap := &flinkv1beta1.FlinkStateSnapshot{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: switching.Status.SavepointTriggerID}, snap))
	require.Equal(t, flinkv1beta1.SnapshotCompleted, snap.Status.State)
	waitFor(t, key, "ACTIVE_GREEN", 3*time.Minute, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
		return bg.Status.BlueGreenState == flinkv1beta1.BlueGreenActiveGreen
	})
	green := waitFor(t, greenKey, "Ready and RUNNING", time.Minute, readyAndRunning)
	greenJob := green.Status.JobStatus.JobID
	allTasksRunning(t, greenKey, greenJob) // else the next switch's savepoint of green fails
	restored := restoredFrom(t, greenKey, greenJob)
	require.True(t, restored.IsSavepoint, "green's job restored a savepoint")
	require.Equal(t, localPath(snap.Status.Path), localPath(restored.ExternalPath), "green restored blue's savepoint of the switch")
	require.Equal(t, int64(4000), checkpointInterval(t, greenKey, greenJob), "green runs the new template")
	wait.For(t, time.Minute, "blue deleted", func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, blueKey, &flinkv1beta1.FlinkDeployment{}))
	})
	logf(t, "switched to green in %s", time.Since(start).Round(time.Second))

	// A broken next child: its image is not Flink's, so its JobManager never runs. The switch is aborted after the grace
	// period; green's job is the same job, never restarted.
	before, err := flinkREST(t, greenKey).JobDetails(ctx, greenJob)
	require.NoError(t, err)
	updateBlueGreen(t, key, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) {
		bg.Spec.Configuration["kubernetes.operator.bluegreen.abort.grace-period"] = "20s"
		bg.Spec.Template.Spec.Image = notRunnableImage // not a Flink image: ImageNotRunnable
	})
	aborted := waitFor(t, key, "aborted back to ACTIVE_GREEN", 2*time.Minute, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
		return bg.Status.BlueGreenState == flinkv1beta1.BlueGreenActiveGreen && bg.Status.Error != ""
	})
	require.Contains(t, aborted.Status.Error, "Aborting deployment 'bluegreen-blue'")
	require.Equal(t, flinkv1beta1.JobStatusFailing, aborted.Status.JobStatus.State)
	after, err := flinkREST(t, greenKey).JobDetails(ctx, greenJob)
	require.NoError(t, err)
	require.Equal(t, flinkv1beta1.JobStatusRunning, flinkv1beta1.JobStatusState(after.State), "green's job runs on")
	require.Equal(t, before.StartTime, after.StartTime, "green's job was never restarted")
	green = waitFor(t, greenKey, "still Ready", 10*time.Second, readyAndRunning)
	require.Equal(t, greenJob, green.Status.JobStatus.JobID)
	logf(t, "aborted the broken switch; total %s", time.Since(start).Round(time.Second))

	// A savepoint redeploy back to an older, known state: blue's savepoint of the first switch.
	// No savepoint of green is taken, and Flink says the new blue job restored exactly the
	// path the user chose.
	chosen := snap.Status.Path
	redeployAt := time.Now().Truncate(time.Second) // creation timestamps have seconds
	updateBlueGreen(t, key, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) {
		nonce := int64(1)
		bg.Spec.Configuration["kubernetes.operator.bluegreen.abort.grace-period"] = "3 min"
		bg.Spec.Template.Spec.Image = dep.Spec.Image
		bg.Spec.Template.Spec.Job.SavepointRedeployNonce = &nonce
		bg.Spec.Template.Spec.Job.InitialSavepointPath = chosen
	})
	redeploying := waitFor(t, key, "TRANSITIONING_TO_BLUE (savepoint redeploy)", 2*time.Minute, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
		return bg.Status.BlueGreenState == flinkv1beta1.BlueGreenTransitioningToBlue && bg.Status.Error == ""
	})
	require.Empty(t, redeploying.Status.SavepointTriggerID, "a savepoint redeploy takes no savepoint")
	waitFor(t, key, "ACTIVE_BLUE after the savepoint redeploy", 3*time.Minute, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
		return bg.Status.BlueGreenState == flinkv1beta1.BlueGreenActiveBlue && bg.Status.Error == ""
	})
	blue = waitFor(t, blueKey, "Ready and RUNNING", time.Minute, readyAndRunning)
	require.Equal(t, chosen, blue.Spec.Job.InitialSavepointPath)
	restored = restoredFrom(t, blueKey, blue.Status.JobStatus.JobID)
	require.True(t, restored.IsSavepoint, "blue's job restored a savepoint")
	require.Equal(t, localPath(chosen), localPath(restored.ExternalPath), "blue restored the savepoint the user chose")
	var snaps flinkv1beta1.FlinkStateSnapshotList
	require.NoError(t, env.Client.List(ctx, &snaps, client.InNamespace(key.Namespace)))
	for _, s := range snaps.Items {
		if s.Spec.JobReference != nil && s.Spec.JobReference.Name == greenKey.Name {
			require.True(t, s.CreationTimestamp.Time.Before(redeployAt), "no savepoint of green for the redeploy: %s", s.Name)
		}
	}
	logf(t, "savepoint redeploy restored %s; total %s", chosen, time.Since(start).Round(time.Second))

	require.NoError(t, env.Client.Delete(ctx, bg))
}
