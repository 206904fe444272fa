package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/test/wait"
)

// manualSnapshots lists the FlinkStateSnapshots a manual (nonce) trigger created in ns.
func manualSnapshots(t *testing.T, c client.Client, ns string) []flinkv1beta1.FlinkStateSnapshot {
	t.Helper()
	var snaps flinkv1beta1.FlinkStateSnapshotList
	require.NoError(t, c.List(context.Background(), &snaps, client.InNamespace(ns),
		client.MatchingLabels{jobs.LabelSnapshotTrigger: string(flinkv1beta1.SnapshotTriggerManual)}))
	return snaps.Items
}

// TestSessionJobNonceChangedWithAnUpgradeIsTakenAfterIt: a savepointTriggerNonce changed
// together with a spec change is not recorded as handled by the upgrade; the savepoint is
// taken of the upgraded job (upstream's ReconciliationUtils.updateStatusForSpecReconciliation
// keeps the old trigger nonces in the spec it records for an upgrade).
func TestSessionJobNonceChangedWithAnUpgradeIsTakenAfterIt(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "sj-nonce-with-upgrade", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeSavepoint)
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) {
		j.Spec.Job.Parallelism = 2
		j.Spec.Job.SavepointTriggerNonce = fixtures.Ptr(int64(7))
	})
	run := e.lastSubmission(jobID)
	assert.Equal(t, 2, run.Parallelism)
	wait.For(t, 20*time.Second, "the manual savepoint asked for with the upgrade", func() bool { return len(manualSnapshots(t, e.c, e.ns)) == 1 })
	snap := manualSnapshots(t, e.c, e.ns)[0]
	require.NotNil(t, snap.Spec.JobReference)
	assert.Equal(t, "orders", snap.Spec.JobReference.Name)
	wait.For(t, 20*time.Second, "the nonce recorded once its savepoint is asked for", func() bool {
		return strings.Contains(e.get(key).Status.ReconciliationStatus.LastReconciledSpec, `"savepointTriggerNonce":7`)
	})
}

// TestSessionJobRemovedNoncesRestartNothing: setting restartNonce or savepointRedeployNonce to
// null is no change (upstream's @SpecDiff on these fields ignores null): the job keeps running
// and nothing is submitted.
func TestSessionJobRemovedNoncesRestartNothing(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "sj-removed-nonces", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) {
		j.Spec.RestartNonce = fixtures.Ptr(int64(3))
		j.Spec.Job.SavepointRedeployNonce = fixtures.Ptr(int64(4))
		j.Spec.Job.InitialSavepointPath = "file:/backup/savepoint-1"
	})
	restarted := e.lastSubmission(jobID)
	wait.For(t, 20*time.Second, "running after the nonces were set", func() bool {
		j := e.get(key)
		return j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning && j.Status.JobStatus.JobID == restarted.JobID &&
			j.Status.ObservedGeneration == j.Generation && j.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
	})
	runs := len(e.flink.Runs())

	for what, remove := range map[string]func(*flinkv1beta1.FlinkSessionJob){
		"restartNonce":           func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.RestartNonce = nil },
		"savepointRedeployNonce": func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.SavepointRedeployNonce = nil },
	} {
		e.update(key, remove)
		wait.For(t, 20*time.Second, fmt.Sprintf("the removal of %s reconciled", what), func() bool {
			j := e.get(key)
			cond := meta.FindStatusCondition(j.Status.Conditions, "Ready")
			return cond != nil && cond.ObservedGeneration == j.Generation
		})
		wait.Never(t, 1500*time.Millisecond, fmt.Sprintf("removing %s submitted the job again", what), func() bool { return len(e.flink.Runs()) != runs })
	}
	assert.Equal(t, "RUNNING", e.flink.Job(restarted.JobID))
	assert.Equal(t, restarted.JobID, e.get(key).Status.JobStatus.JobID)
}
