package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestLostSessionJobs: when its session no longer knows a
// running job, only a stateless job is submitted again. A savepoint or last-state job would
// start with no state: it is reported ("Job Not Found") and left for the user, as upstream;
// when the session recovers it (HA), it is observed running again.
func TestLostSessionJobs(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "lost-jobs", false, "session")
	statefulKey, statefulID := e.run("stateful", flinkv1beta1.UpgradeModeSavepoint)
	_, statelessID := e.run("stateless", flinkv1beta1.UpgradeModeStateless)
	statefulRuns, statelessRuns := e.submitted(statefulID), e.submitted(statelessID)

	// The session restarted without its jobs.
	e.flink.SetJob(statefulID, "")
	e.flink.SetJob(statelessID, "")
	wait.For(t, 20*time.Second, "the stateless job submitted again", func() bool { return e.submitted(statelessID) > statelessRuns })
	wait.For(t, 20*time.Second, "the lost stateful job reported", func() bool {
		return flinkv1beta1.ErrorReason(e.get(statefulKey).Status.Error) == flinkv1beta1.ErrorReasonJobNotFound
	})
	wait.Never(t, time.Second, "a savepoint-mode job is never submitted again with no state", func() bool { return e.submitted(statefulID) > statefulRuns })
	assert.Contains(t, flinkv1beta1.ErrorMessage(e.get(statefulKey).Status.Error), "Job Not Found")
	e.events.seen(t, "Missing")

	// HA brings it back: it is observed running again and the report goes.
	e.flink.SetJob(statefulID, "RUNNING")
	wait.For(t, 20*time.Second, "the recovered job observed", func() bool {
		st := e.get(statefulKey).Status
		return st.JobStatus.State == flinkv1beta1.JobStatusRunning && st.Error == ""
	})
}

// TestSessionJobUpdateTimeIsTheLastChange: jobStatus.updateTime is when the
// job's state last changed, so an unchanged job is not written on every reconcile.
func TestSessionJobUpdateTimeIsTheLastChange(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "update-time", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	seen := e.get(key)
	since := len(e.flink.Requests())
	wait.Never(t, 2500*time.Millisecond, "an unchanged running job is not written again", func() bool {
		now := e.get(key)
		return now.Status.JobStatus.UpdateTime != seen.Status.JobStatus.UpdateTime || now.ResourceVersion != seen.ResourceVersion
	})
	// The liveness witness: the job was observed (asked of Flink) during the window, more than
	// once, so nothing was written because nothing changed, not because nothing ran.
	observes := 0
	for _, r := range e.flink.Requests()[since:] {
		if strings.HasPrefix(r, "GET ") && strings.Contains(r, jobID) {
			observes++
		}
	}
	assert.GreaterOrEqual(t, observes, 2, "observes of the job during the window; requests %v", e.flink.Requests()[since:])
}

// TestSessionJobStaysOnItsSession: without the webhook, a changed
// deploymentName is refused by the controller itself, naming the field, and the job keeps
// running on its session; nothing is cancelled or submitted elsewhere.
func TestSessionJobStaysOnItsSession(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "moved-job", false, "session", "other")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	runs := len(e.flink.Runs())
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.DeploymentName = "other" })
	wait.For(t, 20*time.Second, "the move is refused, naming the field", func() bool {
		return strings.Contains(e.get(key).Status.Error, "spec.deploymentName")
	})
	wait.Never(t, time.Second, "the job keeps running where it is; nothing is submitted elsewhere", func() bool { return len(e.flink.Runs()) != runs || e.flink.Job(jobID) != "RUNNING" })
}

// TestDeletedSessionJobNeverRunsUnmanaged: while its HA session cannot be
// asked, a deleted session job keeps its finalizer; once the session answers, the job is
// cancelled and only then does the resource go.
func TestDeletedSessionJobNeverRunsUnmanaged(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "delete-session-job", true, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	e.setSession("session", flinkv1beta1.JobManagerDeploying) // its JobManager restarts
	require.NoError(t, e.c.Delete(context.Background(), e.get(key)))
	wait.Never(t, time.Second, "the finalizer stays while the job may still run", func() bool { return e.get(key) == nil })
	assert.Equal(t, "RUNNING", e.flink.Job(jobID))

	e.setSession("session", flinkv1beta1.JobManagerReady)
	wait.For(t, 20*time.Second, "deleted once the job is stopped", func() bool { return e.get(key) == nil })
	assert.Equal(t, "CANCELED", e.flink.Job(jobID), "the job was cancelled before its resource went")
}

// TestFailedSessionJobRestoresItsLastCheckpoint: a savepoint-mode session
// job that failed is submitted again (on a spec change) from its latest checkpoint, recorded
// while it was failed, never with no state.
func TestFailedSessionJobRestoresItsLastCheckpoint(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "failed-session-job", false, "session")
	key, failedID := e.run("orders", flinkv1beta1.UpgradeModeSavepoint)
	e.flink.SetJob(failedID, "FAILED")
	wait.For(t, 20*time.Second, "the failed job's latest checkpoint is recorded", func() bool {
		return e.get(key).Status.JobStatus.UpgradeSavepointPath == fakeflink.CheckpointPath(failedID)
	})
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
	assert.Equal(t, fakeflink.CheckpointPath(failedID), e.lastSubmission(failedID).SavepointPath, "submitted from the failed job's last checkpoint")
}

// TestLastStateSessionJobRestoresTheLatestCheckpoint: a
// checkpoint completing while a last-state session job is cancelled for an upgrade is the one
// restored, not the one read before the cancel (which it subsumed).
func TestLastStateSessionJobRestoresTheLatestCheckpoint(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "session-cancel-race", false, "session")
	key, oldID := e.run("orders", flinkv1beta1.UpgradeModeLastState)
	newer := "file:/flink/checkpoints/" + oldID + "/chk-8"
	e.flink.OnCancel(func(jobID string) {
		if jobID == oldID {
			e.flink.SetLatestCheckpoint(jobID, newer)
		}
	})
	defer e.flink.OnCancel(nil)
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
	assert.Equal(t, newer, e.lastSubmission(oldID).SavepointPath, "restored from the checkpoint that completed during the cancel")
}
