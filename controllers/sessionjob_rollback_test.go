package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestSessionJobRollsBackToItsLastStableSpec: a session job upgraded (savepoint mode) to a spec
// whose program fails at submission, as a missing entry class does, is not RUNNING within the
// readiness timeout; with rollback enabled it goes ROLLING_BACK then ROLLED_BACK, its last
// stable spec submitted again from the savepoint the upgrade took, which the Rollback operation
// names. The failed spec is not tried again, and setting the spec back to the stable one is
// recorded without a restart.
func TestSessionJobRollsBackToItsLastStableSpec(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "sj-rollback", false, "session")
	key, stableID := e.runWith("orders", flinkv1beta1.UpgradeModeSavepoint, flinkv1beta1.NewFlinkConfiguration(map[string]string{
		"kubernetes.operator.deployment.rollback.enabled":  "true",
		"kubernetes.operator.deployment.readiness.timeout": "3s",
	}))
	e.waitSessionJob(key, "stable", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.LifecycleState == flinkv1beta1.LifecycleStable
	})
	const missing = "org.apache.flink.client.program.ProgramInvocationException: java.lang.ClassNotFoundException: com.example.Missing"
	e.flink.SetRunFailure(func(r fakeflink.RunRequest) string {
		if r.Parallelism == 2 {
			return missing
		}
		return ""
	})
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })

	rolledBack := e.waitSessionJob(key, "ROLLED_BACK and RUNNING", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationRolledBack &&
			j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	})
	stops := e.flink.StopsOf(stableID)
	require.Len(t, stops, 1, "the stable job stopped once, with a savepoint, for the upgrade")
	savepoint := e.flink.SavepointLocation(stableID, stops[0])

	var failedRuns, stableRuns []fakeflink.RunRequest
	for _, r := range e.flink.Runs() {
		if r.Parallelism == 2 {
			failedRuns = append(failedRuns, r)
		} else if r.JobID == rolledBack.Status.JobStatus.JobID {
			stableRuns = append(stableRuns, r)
		}
	}
	require.NotEmpty(t, failedRuns, "the failed spec was submitted")
	assert.Equal(t, savepoint, failedRuns[0].SavepointPath, "the upgrade submitted the failed spec from its savepoint")
	require.Len(t, stableRuns, 1, "the stable spec is submitted once, under a new job id")
	assert.NotEqual(t, stableID, rolledBack.Status.JobStatus.JobID)
	assert.NotEqual(t, failedRuns[0].JobID, rolledBack.Status.JobStatus.JobID)
	assert.Equal(t, 1, stableRuns[0].Parallelism, "the last stable spec runs")
	assert.Equal(t, savepoint, stableRuns[0].SavepointPath, "restored from the savepoint the upgrade took")
	assert.Equal(t, "RUNNING", e.flink.Job(rolledBack.Status.JobStatus.JobID))

	// The status says what happened, as a FlinkDeployment's does.
	assert.Equal(t, flinkv1beta1.LifecycleRolledBack, rolledBack.Status.LifecycleState)
	assert.Contains(t, rolledBack.Status.ReconciliationStatus.LastReconciledSpec, `"parallelism":2`, "the failed spec stays the last reconciled one")
	assert.Contains(t, rolledBack.Status.ReconciliationStatus.LastStableSpec, `"parallelism":1`)
	assert.Equal(t, savepoint, rolledBack.Status.JobStatus.UpgradeSavepointPath)
	if degraded := meta.FindStatusCondition(rolledBack.Status.Conditions, lifecycle.ConditionDegraded); assert.NotNil(t, degraded) {
		assert.Equal(t, string(lifecycle.ReasonRolledBack), degraded.Reason)
		assert.Equal(t, rolledBack.Generation, degraded.ObservedGeneration)
	}
	// The Rollback operation (Progressing was RollingBack) names the savepoint it restored; the
	// upgrade it replaced failed.
	want := []string{"Deploy Succeeded ", "Upgrade Failed " + savepoint, "Rollback Succeeded " + savepoint}
	e.waitSessionJob(key, "operations "+strings.Join(want, ", "), func(j *flinkv1beta1.FlinkSessionJob) bool {
		return slices.Equal(operations(j.Status.Operations), want)
	})
	e.events.seen(t, "rolling back to the last stable spec")
	e.events.seen(t, "Rolled back to the last stable spec, restoring "+savepoint)
	assert.True(t, e.events.has(jobs.ReasonRollback))

	// The failed spec is not tried again until the spec changes.
	n := len(failedRuns)
	wait.Never(t, 2*time.Second, "the failed spec submitted again", func() bool {
		count := 0
		for _, r := range e.flink.Runs() {
			if r.Parallelism == 2 {
				count++
			}
		}
		return count > n
	})

	// The spec set back to the stable one is what runs already: recorded, not restarted.
	runningID := rolledBack.Status.JobStatus.JobID
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 1 })
	back := e.waitSessionJob(key, "STABLE again", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.LifecycleState == flinkv1beta1.LifecycleStable
	})
	assert.Equal(t, runningID, back.Status.JobStatus.JobID, "not restarted")
	assert.Len(t, e.flink.StopsOf(runningID), 0)
}
