package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestLegacyManualSavepointGracePeriod: in legacy snapshot mode a manual savepoint that fails
// within kubernetes.operator.savepoint.trigger.grace-period of its trigger is triggered again;
// one failing after it is reported and not retried (upstream's SnapshotObserver).
func TestLegacyManualSavepointGracePeriod(t *testing.T) {
	t.Parallel()
	const grace = 5 * time.Second
	e := newSessionJobs(t, "legacy-sp-grace", false, "session")
	key, jobID := e.runLegacySessionJob("orders", map[string]string{"kubernetes.operator.savepoint.trigger.grace-period": "5 s"})
	e.flink.SetAutoComplete(false)
	e.update(key, savepointNonce(1))
	wait.For(t, 20*time.Second, "triggered", func() bool { return len(e.flink.Triggered()) == 1 })
	e.flink.CompleteSavepoint(jobID, e.flink.Triggered()[0], "tasks not running yet")
	wait.For(t, 20*time.Second, "a savepoint failing within the grace period is triggered again", func() bool { return len(e.flink.Triggered()) == 2 })

	retry := e.flink.Triggered()[1]
	time.Sleep(grace + time.Second)
	e.flink.CompleteSavepoint(jobID, retry, "checkpoint coordinator shut down")
	wait.For(t, 20*time.Second, "e.events.has(\"checkpoint coordinator shut down\")", func() bool { return e.events.has("checkpoint coordinator shut down") })
	wait.Never(t, 1500*time.Millisecond, "a savepoint failing after the grace period triggered again", func() bool { return len(e.flink.Triggered()) > 2 })
	assert.Contains(t, e.get(key).Status.ReconciliationStatus.LastReconciledSpec, `"savepointTriggerNonce":1`, "the nonce is handled")
}

// TestLegacyManualCheckpointGracePeriod: a manual checkpoint failing within
// kubernetes.operator.checkpoint.trigger.grace-period (default 1 min) is triggered again until
// one completes.
func TestLegacyManualCheckpointGracePeriod(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "legacy-cp-grace", false, "session")
	key, _ := e.runLegacySessionJob("orders", nil)
	e.flink.SetCheckpointFailure("not all required tasks are currently running")
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.CheckpointTriggerNonce = fixtures.Ptr(int64(5)) })
	wait.For(t, 20*time.Second, "a checkpoint failing within the grace period is triggered again", func() bool { return len(e.flink.Triggered()) >= 2 })
	e.flink.SetCheckpointFailure("")
	e.waitSessionJob(key, "the manual checkpoint recorded", func(j *flinkv1beta1.FlinkSessionJob) bool {
		cp := j.Status.JobStatus.CheckpointInfo
		return cp != nil && cp.LastCheckpoint != nil && cp.LastCheckpoint.TriggerNonce != nil && *cp.LastCheckpoint.TriggerNonce == 5
	})
}
