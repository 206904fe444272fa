package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/test/wait"
)

// Upstream's legacy snapshot mode (kubernetes.operator.snapshot.resource.enabled:
// false) for session jobs as for deployments, and its savepoint history bounded by count and
// age, with the trimmed savepoints disposed.

// TestSessionJobLegacyManualSnapshots: a session job's savepointTriggerNonce and
// checkpointTriggerNonce take a savepoint and a checkpoint, recorded in savepointInfo and
// checkpointInfo with the nonce, each once.
func TestSessionJobLegacyManualSnapshots(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "legacy-manual", false, "session")
	key, jobID := e.runLegacySessionJob("orders", nil)

	e.update(key, savepointNonce(1))
	j := e.waitSessionJob(key, "manual savepoint recorded", lastSavepointNonce(1))
	info := j.Status.JobStatus.SavepointInfo
	assert.Equal(t, flinkv1beta1.SnapshotTriggerManual, info.LastSavepoint.TriggerType)
	triggered := e.flink.Triggered()
	require.Len(t, triggered, 1, "one savepoint for one nonce")
	assert.Equal(t, e.flink.SavepointLocation(jobID, triggered[0]), info.LastSavepoint.Location)
	assert.Len(t, info.SavepointHistory, 1)
	assert.Empty(t, info.TriggerID, "the trigger is cleared once done")
	assert.Equal(t, jobID, j.Status.JobStatus.JobID, "a nonce is no upgrade")

	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.CheckpointTriggerNonce = fixtures.Ptr(int64(5)) })
	j = e.waitSessionJob(key, "manual checkpoint recorded", func(j *flinkv1beta1.FlinkSessionJob) bool {
		cp := j.Status.JobStatus.CheckpointInfo
		return cp != nil && cp.LastCheckpoint != nil && cp.LastCheckpoint.TriggerNonce != nil && *cp.LastCheckpoint.TriggerNonce == 5
	})
	assert.Equal(t, flinkv1beta1.SnapshotTriggerManual, j.Status.JobStatus.CheckpointInfo.LastCheckpoint.TriggerType)
	wait.Never(t, 1500*time.Millisecond, "a nonce triggered twice", func() bool { return len(e.flink.Triggered()) > 2 })
	assert.Len(t, e.flink.Triggered(), 2)
	assert.Equal(t, jobID, e.get(key).Status.JobStatus.JobID)
}

// TestSessionJobLegacyPeriodicSnapshots: kubernetes.operator.periodic.savepoint.interval and
// .periodic.checkpoint.interval take periodic savepoints and checkpoints of a session job.
func TestSessionJobLegacyPeriodicSnapshots(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "legacy-periodic", false, "session")
	key, jobID := e.runLegacySessionJob("orders", map[string]string{
		"kubernetes.operator.periodic.savepoint.interval": "1 s", "kubernetes.operator.periodic.checkpoint.interval": "1 s"})
	j := e.waitSessionJob(key, "periodic savepoint and checkpoint", func(j *flinkv1beta1.FlinkSessionJob) bool {
		sp, cp := j.Status.JobStatus.SavepointInfo, j.Status.JobStatus.CheckpointInfo
		return sp != nil && sp.LastSavepoint != nil && cp != nil && cp.LastCheckpoint != nil
	})
	sp := j.Status.JobStatus.SavepointInfo
	assert.Equal(t, flinkv1beta1.SnapshotTriggerPeriodic, sp.LastSavepoint.TriggerType)
	assert.Nil(t, sp.LastSavepoint.TriggerNonce)
	assert.NotZero(t, sp.LastPeriodicSavepointTimestamp)
	assert.Contains(t, sp.LastSavepoint.Location, jobID[:6])
	assert.Equal(t, flinkv1beta1.SnapshotTriggerPeriodic, j.Status.JobStatus.CheckpointInfo.LastCheckpoint.TriggerType)
	assert.NotZero(t, j.Status.JobStatus.CheckpointInfo.LastPeriodicCheckpointTimestamp)
}

// TestSessionJobUpgradeWaitsForPendingLegacySavepoint: as for deployments
// (TestUpgradeWaitsForPendingLegacySavepoint), a session job's spec change waits for a manual
// savepoint in flight, and its stop then takes a savepoint with a trigger of its own.
func TestSessionJobUpgradeWaitsForPendingLegacySavepoint(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "legacy-pending", false, "session")
	key, jobID := e.runLegacySessionJob("orders", nil)
	e.flink.SetAutoComplete(false)
	e.update(key, savepointNonce(1))
	j := e.waitSessionJob(key, "manual savepoint triggered", func(j *flinkv1beta1.FlinkSessionJob) bool {
		info := j.Status.JobStatus.SavepointInfo
		return info != nil && info.TriggerID != "" && info.TriggerType == flinkv1beta1.SnapshotTriggerManual
	})
	manual := j.Status.JobStatus.SavepointInfo.TriggerID

	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
	seen := polls(e.flink, jobID, manual)
	wait.For(t, 20*time.Second, "the pending manual savepoint is no longer followed", func() bool { return polls(e.flink, jobID, manual) >= seen+3 })
	j = e.get(key)
	assert.Equal(t, flinkv1beta1.ReconciliationDeployed, j.Status.ReconciliationStatus.State, "no upgrade starts while the manual savepoint is in flight")
	assert.Equal(t, manual, j.Status.JobStatus.SavepointInfo.TriggerID, "the manual savepoint stays recorded")
	assert.Zero(t, stopRequests(e.flink, jobID), "the job is not stopped while the manual savepoint is in flight")

	e.flink.CompleteSavepoint(jobID, manual, "")
	upgradeStop := firstStop(t, e.flink, jobID)
	j = e.get(key)
	last := j.Status.JobStatus.SavepointInfo.LastSavepoint
	require.NotNil(t, last, "the manual savepoint is recorded")
	assert.Equal(t, flinkv1beta1.SnapshotTriggerManual, last.TriggerType)
	assert.Equal(t, e.flink.SavepointLocation(jobID, manual), last.Location)
	assert.NotEqual(t, manual, upgradeStop, "the upgrade's stop has a trigger of its own")
	e.flink.CompleteSavepoint(jobID, upgradeStop, "")
	run := e.lastSubmission(jobID)
	assert.Equal(t, e.flink.SavepointLocation(jobID, upgradeStop), run.SavepointPath, "the new job starts from the upgrade's savepoint")
	assert.Equal(t, 2, run.Parallelism)
}

// TestSessionJobLegacySavepointHistoryTrimmed: the legacy savepoint history keeps at most
// savepoint.history.max.count entries and none older than savepoint.history.max.age, except
// the newest, which stays however old; every entry trimmed is disposed through Flink
// (POST /savepoint-disposal), oldest first.
func TestSessionJobLegacySavepointHistoryTrimmed(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "legacy-history", false, "session")
	// max.age must outlast the three savepoints below, so that the count rule is seen alone
	// first: they take about a second on an idle machine, over 6 s on a loaded one.
	const maxAge = 12 * time.Second
	key, jobID := e.runLegacySessionJob("orders", map[string]string{
		"kubernetes.operator.savepoint.history.max.count": "2", "kubernetes.operator.savepoint.history.max.age": "12 s"})
	start := time.Now()
	for n := int64(1); n <= 3; n++ {
		e.update(key, savepointNonce(n))
		e.waitSessionJob(key, fmt.Sprintf("manual savepoint %d", n), lastSavepointNonce(n))
	}
	triggered := e.flink.Triggered()
	require.Len(t, triggered, 3)
	loc := func(i int) string { return e.flink.SavepointLocation(jobID, triggered[i]) }

	// The count: the oldest goes, with its data.
	j := e.waitSessionJob(key, "history trimmed to max.count", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return len(j.Status.JobStatus.SavepointInfo.SavepointHistory) == 2
	})
	require.Less(t, time.Since(start), maxAge, "the savepoints took longer than max.age; the count rule was not observed alone")
	assert.Equal(t, []string{loc(1), loc(2)}, historyLocations(j))
	assert.Equal(t, []string{loc(0)}, disposedOnce(e.flink.Disposed()))

	// The age: the older of the two goes, with its data; the newest stays although older still.
	wait.For(t, maxAge+20*time.Second, "history trimmed to max.age", func() bool {
		j = e.get(key)
		return len(j.Status.JobStatus.SavepointInfo.SavepointHistory) == 1
	}, func() string { return fmt.Sprintf("status %+v", j.Status.JobStatus) })
	assert.Equal(t, []string{loc(2)}, historyLocations(j))
	assert.Equal(t, []string{loc(0), loc(1)}, disposedOnce(e.flink.Disposed()))
	newest := j.Status.JobStatus.SavepointInfo.SavepointHistory[0]
	wait.Never(t, time.Until(time.UnixMilli(newest.TimeStamp).Add(maxAge+2*time.Second)), "the newest savepoint trimmed",
		func() bool { return len(e.get(key).Status.JobStatus.SavepointInfo.SavepointHistory) == 0 })
	assert.Equal(t, []string{loc(0), loc(1)}, disposedOnce(e.flink.Disposed()), "the newest savepoint is not disposed")
	assert.Equal(t, loc(2), e.get(key).Status.JobStatus.SavepointInfo.LastSavepoint.Location)
}

// disposedOnce drops repeats, keeping the order: a reconcile of a stale copy of the resource may
// dispose a savepoint again before its status write fails (harmless: Flink finds nothing).
func disposedOnce(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func historyLocations(j *flinkv1beta1.FlinkSessionJob) []string {
	var out []string
	for _, sp := range j.Status.JobStatus.SavepointInfo.SavepointHistory {
		out = append(out, sp.Location)
	}
	return out
}

// TestLegacySavepointHistoryTrimmedByAge: a FlinkDeployment's legacy savepoint history loses
// its entries older than savepoint.history.max.age (not only those beyond the count), the
// newest kept; with savepoint.cleanup.enabled false the entries go but nothing is disposed.
func TestLegacySavepointHistoryTrimmedByAge(t *testing.T) {
	t.Parallel()
	for _, cleanup := range []bool{true, false} {
		t.Run(fmt.Sprintf("cleanup=%t", cleanup), func(t *testing.T) {
			t.Parallel()
			c := testEnv(t).Client
			ns, flink, k, _ := newScenario(t, "legacy-age")
			d := stableDeployment(t, c, k, legacySnapshotDeployment(t, ns, map[string]string{
				"kubernetes.operator.savepoint.history.max.age": "3 s",
				"kubernetes.operator.savepoint.cleanup.enabled": fmt.Sprint(cleanup)}))
			jobID := d.Status.JobStatus.JobID
			for n := int64(1); n <= 2; n++ {
				update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.SavepointTriggerNonce = fixtures.Ptr(n) })
				waitFor(t, c, ns, "job", fmt.Sprintf("manual savepoint %d", n), func(d *flinkv1beta1.FlinkDeployment) bool {
					last := d.Status.JobStatus.SavepointInfo.LastSavepoint
					return last != nil && last.TriggerNonce != nil && *last.TriggerNonce == n
				})
			}
			triggered := flink.Triggered()
			require.Len(t, triggered, 2)
			d = waitFor(t, c, ns, "job", "history trimmed to max.age", func(d *flinkv1beta1.FlinkDeployment) bool {
				return len(d.Status.JobStatus.SavepointInfo.SavepointHistory) == 1
			})
			assert.Equal(t, flink.SavepointLocation(jobID, triggered[1]), d.Status.JobStatus.SavepointInfo.SavepointHistory[0].Location,
				"the newest stays")
			if cleanup {
				assert.Equal(t, []string{flink.SavepointLocation(jobID, triggered[0])}, disposedOnce(flink.Disposed()))
			} else {
				assert.Empty(t, flink.Disposed())
			}
		})
	}
}
