package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestSessionJobRollbackAfterARestartLoop: a session job upgraded (savepoint mode) to a spec
// that Flink accepts but that never becomes RUNNING (it restarts in a loop: RESTARTING,
// FAILING, RESTARTING) is rolled back once the readiness timeout passes: the failed job is
// cancelled after its latest checkpoint is recorded, the last stable spec (its parallelism and
// entry class) is submitted under a new job id from that checkpoint, and the status says
// ROLLED_BACK with a Rollback operation naming the checkpoint.
func TestSessionJobRollbackAfterARestartLoop(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "sj-rollback-loop", false, "session")
	const stableEntry, failedEntry = "com.example.Orders", "com.example.OrdersV2"

	// The stable job, as runWith creates one, with an entry class of its own.
	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "orders"},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session",
			FlinkConfiguration: flinkv1beta1.NewFlinkConfiguration(map[string]string{
				"kubernetes.operator.deployment.rollback.enabled":  "true",
				"kubernetes.operator.deployment.readiness.timeout": "5s",
			}),
			Job: &flinkv1beta1.JobSpec{JarURI: "file://" + e.jar, EntryClass: stableEntry, Parallelism: 1,
				UpgradeMode: flinkv1beta1.UpgradeModeSavepoint, State: flinkv1beta1.JobStateRunning}}}
	require.NoError(t, e.c.Create(context.Background(), job))
	key := client.ObjectKeyFromObject(job)
	stable := e.waitSessionJob(key, "stable and RUNNING", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.LifecycleState == flinkv1beta1.LifecycleStable && j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	})
	stableID := stable.Status.JobStatus.JobID
	require.NotEmpty(t, stableID)

	// Flink accepts the new spec's submission, then the job restarts: it is never RUNNING. The
	// fake marks every accepted run RUNNING; the hook, called while the fake holds its lock for
	// the run, sets the job RESTARTING as soon as the run is answered (before the operator can
	// look at it: one RUNNING observation would make the failed spec stable).
	var (
		mu       sync.Mutex
		failedID string
	)
	e.flink.SetRunFailure(func(r fakeflink.RunRequest) string {
		if r.Parallelism != 2 {
			return ""
		}
		mu.Lock()
		defer mu.Unlock()
		if failedID == "" {
			failedID = r.JobID
			go e.flink.SetJob(r.JobID, "RESTARTING") // blocks until this run is answered
		}
		return ""
	})
	failed := func() string {
		mu.Lock()
		defer mu.Unlock()
		return failedID
	}
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) {
		j.Spec.Job.Parallelism = 2
		j.Spec.Job.EntryClass = failedEntry
		j.Spec.Job.Args = []string{"--mode", "v2"}
	})
	wait.For(t, 20*time.Second, "the new spec submitted", func() bool { return failed() != "" })
	id := failed()
	// Its latest completed checkpoint, newer than the savepoint it restored from.
	chk := "file:/flink/checkpoints/" + id + "/chk-12"
	e.flink.SetLatestCheckpoint(id, chk)
	e.flink.AddException(id, "java.lang.IllegalStateException", "boom", "Source: orders", time.Now().UnixMilli())

	// The restart loop as the operator sees it, well within the readiness timeout.
	e.waitSessionJob(key, "the new job observed RESTARTING", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.JobStatus.JobID == id && j.Status.JobStatus.State == flinkv1beta1.JobStatusRestarting
	})
	e.flink.SetJob(id, "FAILING")
	e.waitSessionJob(key, "the new job observed FAILING", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.JobStatus.JobID == id && j.Status.JobStatus.State == flinkv1beta1.JobStatusFailing
	})
	e.flink.SetJob(id, "RESTARTING")
	upgraded := e.get(key)
	require.Equal(t, flinkv1beta1.ReconciliationDeployed, upgraded.Status.ReconciliationStatus.State, "not rolled back yet: %+v", upgraded.Status.ReconciliationStatus)
	assert.Contains(t, upgraded.Status.ReconciliationStatus.LastStableSpec, `"parallelism":1`, "the failed spec never became stable")

	rolledBack := e.waitSessionJob(key, "ROLLED_BACK and RUNNING", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationRolledBack &&
			j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	})
	rolledBackID := rolledBack.Status.JobStatus.JobID

	// The upgrade stopped the stable job with a savepoint and submitted the new spec from it.
	stops := e.flink.StopsOf(stableID)
	require.Len(t, stops, 1, "the stable job stopped once, with a savepoint, for the upgrade")
	savepoint := e.flink.SavepointLocation(stableID, stops[0])
	var failedRuns, rollbackRuns []fakeflink.RunRequest
	for _, r := range e.flink.Runs() {
		switch r.JobID {
		case id:
			failedRuns = append(failedRuns, r)
		case rolledBackID:
			rollbackRuns = append(rollbackRuns, r)
		}
	}
	require.Len(t, failedRuns, 1, "the new spec submitted once")
	assert.Equal(t, failedEntry, failedRuns[0].EntryClass)
	assert.Equal(t, savepoint, failedRuns[0].SavepointPath, "the upgrade submitted the new spec from its savepoint")

	// The failed job was cancelled (not stopped with a savepoint: it is not running).
	assert.Equal(t, "CANCELED", e.flink.Job(id), "the failed job was cancelled")
	assert.Contains(t, e.flink.Requests(), "PATCH /jobs/"+id, "the fake Flink received the cancel")
	assert.Empty(t, e.flink.StopsOf(id), "no stop-with-savepoint of a job that is not running")

	// The last stable spec runs, under a new job id, restored from the failed job's checkpoint.
	require.Len(t, rollbackRuns, 1, "the stable spec is submitted once, under a new job id")
	assert.NotEqual(t, stableID, rolledBackID)
	assert.NotEqual(t, id, rolledBackID)
	assert.Equal(t, 1, rollbackRuns[0].Parallelism, "the stable spec's parallelism")
	assert.Equal(t, stableEntry, rollbackRuns[0].EntryClass, "the stable spec's entry class")
	assert.Equal(t, chk, rollbackRuns[0].SavepointPath, "restored from the failed job's latest checkpoint")
	assert.Equal(t, "RUNNING", e.flink.Job(rolledBackID))
	for _, r := range e.flink.Runs() {
		assert.False(t, r.JobID != id && r.Parallelism == 2, "the failed spec submitted again: %+v", r)
	}

	// The status.
	assert.Equal(t, flinkv1beta1.ReconciliationRolledBack, rolledBack.Status.ReconciliationStatus.State)
	assert.Equal(t, flinkv1beta1.LifecycleRolledBack, rolledBack.Status.LifecycleState)
	assert.Equal(t, chk, rolledBack.Status.JobStatus.UpgradeSavepointPath)
	assert.Contains(t, rolledBack.Status.ReconciliationStatus.LastReconciledSpec, `"parallelism":2`, "the failed spec stays the last reconciled one")
	assert.Contains(t, rolledBack.Status.ReconciliationStatus.LastStableSpec, `"parallelism":1`)
	assert.Contains(t, rolledBack.Status.ReconciliationStatus.LastStableSpec, stableEntry)
	e.events.seen(t, "(RESTARTING); rolling back to the last stable spec")
	e.events.seen(t, "Rolled back to the last stable spec, restoring "+chk)
	// The Rollback operation names the checkpoint it restored.
	e.waitSessionJob(key, "a Rollback Succeeded operation restoring "+chk, func(j *flinkv1beta1.FlinkSessionJob) bool {
		ops := j.Status.Operations
		return len(ops) > 0 && ops[len(ops)-1].Type == flinkv1beta1.OperationRollback &&
			ops[len(ops)-1].Outcome == flinkv1beta1.OperationSucceeded && ops[len(ops)-1].Snapshot == chk
	})
	// The history: the change failed (it was rolled back), as a FlinkDeployment's and a session
	// job's whose submission fails say.
	want := []string{"Deploy Succeeded ", "Upgrade Failed " + savepoint, "Rollback Succeeded " + chk}
	var final *flinkv1beta1.FlinkSessionJob
	wait.For(t, 20*time.Second, "operations "+strings.Join(want, ", "), func() bool {
		final = e.get(key)
		return final != nil && slices.Equal(operations(final.Status.Operations), want)
	}, func() string {
		return fmt.Sprintf("operations %q, lifecycle %s, reconciliation %s", operations(final.Status.Operations),
			final.Status.LifecycleState, final.Status.ReconciliationStatus.State)
	})
}
