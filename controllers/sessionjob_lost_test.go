package controllers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// TestLostSessionJobs (review finding 1, session side): when its session no longer knows a
// running job, only a stateless job is submitted again. A savepoint or last-state job would
// start with no state: it is reported ("Job Not Found") and left for the user, as upstream;
// when the session recovers it (HA), it is observed running again.
func TestLostSessionJobs(t *testing.T) {
	env := kubeenv.Start(t)
	flink := fakeflink.New(t)
	c := env.Client
	ctx := context.Background()
	const ns = "lost-jobs"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))
	session := newDeployment(t, ns, "session")
	session.Spec.Job = nil
	require.NoError(t, c.Create(ctx, session))
	session = get(t, c, ns, "session")
	session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, session))
	events := startSessionJobOperator(t, env, flink)

	running := func(name string, mode flinkv1beta1.UpgradeMode) (client.ObjectKey, string) {
		job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{
				JarURI: "file://" + jar, Parallelism: 1, UpgradeMode: mode, State: flinkv1beta1.JobStateRunning}}}
		require.NoError(t, c.Create(ctx, job))
		key := client.ObjectKeyFromObject(job)
		var id string
		require.Eventually(t, func() bool {
			j := &flinkv1beta1.FlinkSessionJob{}
			require.NoError(t, c.Get(ctx, key, j))
			id = j.Status.JobStatus.JobID
			if id != "" && flink.Job(id) == "" {
				for _, r := range flink.Runs() {
					if r.JobID == id {
						flink.SetJob(id, "RUNNING")
					}
				}
			}
			return j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
		}, 20*time.Second, 50*time.Millisecond, "%s never ran", name)
		return key, id
	}
	runsOf := func(id string) int {
		n := 0
		for _, r := range flink.Runs() {
			if r.JobID == id {
				n++
			}
		}
		return n
	}
	jobStatus := func(key client.ObjectKey) flinkv1beta1.FlinkSessionJobStatus {
		j := &flinkv1beta1.FlinkSessionJob{}
		require.NoError(t, c.Get(ctx, key, j))
		return j.Status
	}

	statefulKey, statefulID := running("stateful", flinkv1beta1.UpgradeModeSavepoint)
	statelessKey, statelessID := running("stateless", flinkv1beta1.UpgradeModeStateless)
	statefulRuns, statelessRuns := runsOf(statefulID), runsOf(statelessID)

	// The session restarted without its jobs.
	flink.SetJob(statefulID, "")
	flink.SetJob(statelessID, "")
	require.Eventually(t, func() bool { return runsOf(statelessID) > statelessRuns }, 20*time.Second, 50*time.Millisecond,
		"the stateless job was not submitted again")
	require.Eventually(t, func() bool {
		return flinkv1beta1.ErrorReason(jobStatus(statefulKey).Error) == flinkv1beta1.ErrorReasonJobNotFound
	}, 20*time.Second, 50*time.Millisecond, "the lost stateful job was not reported")
	assert.Never(t, func() bool { return runsOf(statefulID) > statefulRuns }, time.Second, 50*time.Millisecond,
		"a savepoint-mode job is never submitted again with no state")
	assert.Contains(t, flinkv1beta1.ErrorMessage(jobStatus(statefulKey).Error), "Job Not Found")
	assert.True(t, events.has("Missing"))

	// HA brings it back: it is observed running again and the report goes.
	flink.SetJob(statefulID, "RUNNING")
	require.Eventually(t, func() bool {
		st := jobStatus(statefulKey)
		return st.JobStatus.State == flinkv1beta1.JobStatusRunning && st.Error == ""
	}, 20*time.Second, 50*time.Millisecond, "the recovered job was not observed")
	_ = statelessKey
}

// TestSessionJobUpdateTimeIsTheLastChange (review finding 36): jobStatus.updateTime is when the
// job's state last changed, so an unchanged job is not written on every reconcile.
func TestSessionJobUpdateTimeIsTheLastChange(t *testing.T) {
	env := kubeenv.Start(t)
	flink := fakeflink.New(t)
	c := env.Client
	ctx := context.Background()
	const ns = "update-time"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))
	session := newDeployment(t, ns, "session")
	session.Spec.Job = nil
	require.NoError(t, c.Create(ctx, session))
	session = get(t, c, ns, "session")
	session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, session))
	startSessionJobOperator(t, env, flink)

	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{
			JarURI: "file://" + jar, Parallelism: 1, State: flinkv1beta1.JobStateRunning}}}
	require.NoError(t, c.Create(ctx, job))
	key := client.ObjectKeyFromObject(job)
	current := func() *flinkv1beta1.FlinkSessionJob {
		j := &flinkv1beta1.FlinkSessionJob{}
		require.NoError(t, c.Get(ctx, key, j))
		return j
	}
	require.Eventually(t, func() bool {
		if id := current().Status.JobStatus.JobID; id != "" && len(flink.Runs()) > 0 {
			flink.SetJob(id, "RUNNING")
		}
		return current().Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	}, 20*time.Second, 50*time.Millisecond)
	seen := current()
	assert.Never(t, func() bool {
		now := current()
		return now.Status.JobStatus.UpdateTime != seen.Status.JobStatus.UpdateTime || now.ResourceVersion != seen.ResourceVersion
	}, 1500*time.Millisecond, 50*time.Millisecond, "an unchanged running job is not written again")
}

// TestSessionJobStaysOnItsSession (review finding 26): without the webhook, a changed
// deploymentName is refused by the controller itself, naming the field, and the job keeps
// running on its session; nothing is cancelled or submitted elsewhere.
func TestSessionJobStaysOnItsSession(t *testing.T) {
	env := kubeenv.Start(t)
	flink := fakeflink.New(t)
	c := env.Client
	ctx := context.Background()
	const ns = "moved-job"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))
	for _, name := range []string{"session", "other"} {
		session := newDeployment(t, ns, name)
		session.Spec.Job = nil
		require.NoError(t, c.Create(ctx, session))
		session = get(t, c, ns, name)
		session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
		require.NoError(t, c.Status().Update(ctx, session))
	}
	startSessionJobOperator(t, env, flink)
	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{
			JarURI: "file://" + jar, Parallelism: 1, UpgradeMode: flinkv1beta1.UpgradeModeStateless, State: flinkv1beta1.JobStateRunning}}}
	require.NoError(t, c.Create(ctx, job))
	key := client.ObjectKeyFromObject(job)
	current := func() *flinkv1beta1.FlinkSessionJob {
		j := &flinkv1beta1.FlinkSessionJob{}
		require.NoError(t, c.Get(ctx, key, j))
		return j
	}
	require.Eventually(t, func() bool {
		if id := current().Status.JobStatus.JobID; id != "" && len(flink.Runs()) > 0 {
			flink.SetJob(id, "RUNNING")
		}
		return current().Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	}, 20*time.Second, 50*time.Millisecond)
	jobID, runs := current().Status.JobStatus.JobID, len(flink.Runs())

	require.Eventually(t, func() bool {
		j := current()
		j.Spec.DeploymentName = "other"
		return c.Update(ctx, j) == nil
	}, 10*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		return strings.Contains(current().Status.Error, "spec.deploymentName")
	}, 20*time.Second, 50*time.Millisecond, "the move is refused, naming the field")
	assert.Never(t, func() bool { return len(flink.Runs()) != runs || flink.Job(jobID) != "RUNNING" }, time.Second, 50*time.Millisecond,
		"the job keeps running where it is; nothing is submitted elsewhere")
}

// TestDeletedSessionJobNeverRunsUnmanaged (review finding 7): while its HA session cannot be
// asked, a deleted session job keeps its finalizer; once the session answers, the job is
// cancelled and only then does the resource go.
func TestDeletedSessionJobNeverRunsUnmanaged(t *testing.T) {
	env := kubeenv.Start(t)
	flink := fakeflink.New(t)
	c := env.Client
	ctx := context.Background()
	const ns = "delete-session-job"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))
	session := haDeployment(t, ns, "session", nil)
	session.Spec.Job = nil
	require.NoError(t, c.Create(ctx, session))
	setSession := func(jm flinkv1beta1.JobManagerDeploymentStatus) {
		require.Eventually(t, func() bool {
			s := get(t, c, ns, "session")
			s.Status.JobManagerDeploymentStatus = jm
			return c.Status().Update(ctx, s) == nil
		}, 10*time.Second, 50*time.Millisecond)
	}
	setSession(flinkv1beta1.JobManagerReady)
	startSessionJobOperator(t, env, flink)
	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{
			JarURI: "file://" + jar, Parallelism: 1, UpgradeMode: flinkv1beta1.UpgradeModeStateless, State: flinkv1beta1.JobStateRunning}}}
	require.NoError(t, c.Create(ctx, job))
	key := client.ObjectKeyFromObject(job)
	current := func() *flinkv1beta1.FlinkSessionJob {
		j := &flinkv1beta1.FlinkSessionJob{}
		if err := c.Get(ctx, key, j); err != nil {
			return nil
		}
		return j
	}
	require.Eventually(t, func() bool {
		j := current()
		if id := j.Status.JobStatus.JobID; id != "" && len(flink.Runs()) > 0 {
			flink.SetJob(id, "RUNNING")
		}
		return j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	}, 20*time.Second, 50*time.Millisecond)
	jobID := current().Status.JobStatus.JobID

	setSession(flinkv1beta1.JobManagerDeploying) // its JobManager restarts
	require.NoError(t, c.Delete(ctx, current()))
	assert.Never(t, func() bool { return current() == nil }, time.Second, 50*time.Millisecond,
		"the finalizer stays while the job may still run")
	assert.Equal(t, "RUNNING", flink.Job(jobID))

	setSession(flinkv1beta1.JobManagerReady)
	require.Eventually(t, func() bool { return current() == nil }, 20*time.Second, 50*time.Millisecond, "deleted once the job is stopped")
	assert.Equal(t, "CANCELED", flink.Job(jobID), "the job was cancelled before its resource went")
}

// TestFailedSessionJobRestoresItsLastCheckpoint (review finding 4): a savepoint-mode session
// job that failed is submitted again (on a spec change) from its latest checkpoint, recorded
// while it was failed, never with no state.
func TestFailedSessionJobRestoresItsLastCheckpoint(t *testing.T) {
	env := kubeenv.Start(t)
	flink := fakeflink.New(t)
	c := env.Client
	ctx := context.Background()
	const ns = "failed-session-job"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))
	session := newDeployment(t, ns, "session")
	session.Spec.Job = nil
	require.NoError(t, c.Create(ctx, session))
	session = get(t, c, ns, "session")
	session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, session))
	startSessionJobOperator(t, env, flink)
	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{
			JarURI: "file://" + jar, Parallelism: 1, UpgradeMode: flinkv1beta1.UpgradeModeSavepoint, State: flinkv1beta1.JobStateRunning}}}
	require.NoError(t, c.Create(ctx, job))
	key := client.ObjectKeyFromObject(job)
	current := func() *flinkv1beta1.FlinkSessionJob {
		j := &flinkv1beta1.FlinkSessionJob{}
		require.NoError(t, c.Get(ctx, key, j))
		return j
	}
	require.Eventually(t, func() bool {
		if id := current().Status.JobStatus.JobID; id != "" && len(flink.Runs()) > 0 {
			flink.SetJob(id, "RUNNING")
		}
		return current().Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	}, 20*time.Second, 50*time.Millisecond)
	failedID := current().Status.JobStatus.JobID

	flink.SetJob(failedID, "FAILED")
	require.Eventually(t, func() bool {
		return current().Status.JobStatus.UpgradeSavepointPath == fakeflink.CheckpointPath(failedID)
	}, 20*time.Second, 50*time.Millisecond, "the failed job's latest checkpoint is recorded")
	require.Eventually(t, func() bool {
		j := current()
		j.Spec.Job.Parallelism = 2
		return c.Update(ctx, j) == nil
	}, 10*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		runs := flink.Runs()
		last := runs[len(runs)-1]
		return last.JobID != failedID && last.Parallelism == 2
	}, 20*time.Second, 50*time.Millisecond, "never submitted again")
	runs := flink.Runs()
	assert.Equal(t, fakeflink.CheckpointPath(failedID), runs[len(runs)-1].SavepointPath, "submitted from the failed job's last checkpoint")
}

// TestLastStateSessionJobRestoresTheLatestCheckpoint (review finding 16, session side): a
// checkpoint completing while a last-state session job is cancelled for an upgrade is the one
// restored, not the one read before the cancel (which it subsumed).
func TestLastStateSessionJobRestoresTheLatestCheckpoint(t *testing.T) {
	env := kubeenv.Start(t)
	flink := fakeflink.New(t)
	c := env.Client
	ctx := context.Background()
	const ns = "session-cancel-race"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))
	session := newDeployment(t, ns, "session")
	session.Spec.Job = nil
	require.NoError(t, c.Create(ctx, session))
	session = get(t, c, ns, "session")
	session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, session))
	startSessionJobOperator(t, env, flink)
	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{
			JarURI: "file://" + jar, Parallelism: 1, UpgradeMode: flinkv1beta1.UpgradeModeLastState, State: flinkv1beta1.JobStateRunning}}}
	require.NoError(t, c.Create(ctx, job))
	key := client.ObjectKeyFromObject(job)
	current := func() *flinkv1beta1.FlinkSessionJob {
		j := &flinkv1beta1.FlinkSessionJob{}
		require.NoError(t, c.Get(ctx, key, j))
		return j
	}
	require.Eventually(t, func() bool {
		if id := current().Status.JobStatus.JobID; id != "" && len(flink.Runs()) > 0 {
			flink.SetJob(id, "RUNNING")
		}
		return current().Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	}, 20*time.Second, 50*time.Millisecond)
	oldID := current().Status.JobStatus.JobID
	newer := "file:/flink/checkpoints/" + oldID + "/chk-8"
	flink.OnCancel(func(jobID string) {
		if jobID == oldID {
			flink.SetLatestCheckpoint(jobID, newer)
		}
	})
	defer flink.OnCancel(nil)
	require.Eventually(t, func() bool {
		j := current()
		j.Spec.Job.Parallelism = 2
		return c.Update(ctx, j) == nil
	}, 10*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		runs := flink.Runs()
		return runs[len(runs)-1].JobID != oldID
	}, 20*time.Second, 50*time.Millisecond, "never submitted again")
	runs := flink.Runs()
	assert.Equal(t, newer, runs[len(runs)-1].SavepointPath, "restored from the checkpoint that completed during the cancel")
}
