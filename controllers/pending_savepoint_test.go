package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// In the legacy snapshot mode (kubernetes.operator.snapshot.resource.enabled:
// false) a manual or periodic savepoint in flight is recorded in status.jobStatus.savepointInfo,
// the same place an upgrade's stop-with-savepoint records its trigger. An upgrade must neither
// take that savepoint for its own stop (the job would be taken for stopped while it still runs)
// nor drop it: as upstream's readyToReconcile, it waits for it, unless
// kubernetes.operator.job.upgrade.ignore-pending-savepoint is true.

// legacySnapshotDeployment is a savepoint-mode deployment whose snapshots live in status fields.
func legacySnapshotDeployment(t *testing.T, ns string, extra map[string]string) *flinkv1beta1.FlinkDeployment {
	dep := fixtures.NewDeployment(t, ns, "job")
	conf := map[string]string{"state.checkpoints.dir": "file:///cp", "state.savepoints.dir": "file:///sp", "taskmanager.numberOfTaskSlots": "2",
		"kubernetes.operator.snapshot.resource.enabled": "false"}
	for k, v := range extra {
		conf[k] = v
	}
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
	return dep
}

// pendingManualSavepoint asks for a manual savepoint that Flink does not complete and returns
// its trigger id once the status records it.
func pendingManualSavepoint(t *testing.T, ns string, flink *fakeflink.Server) string {
	t.Helper()
	c := testEnv(t).Client
	flink.SetAutoComplete(false)
	update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.SavepointTriggerNonce = fixtures.Ptr(int64(1)) })
	d := waitFor(t, c, ns, "job", "manual savepoint triggered", func(d *flinkv1beta1.FlinkDeployment) bool {
		info := d.Status.JobStatus.SavepointInfo
		return info != nil && info.TriggerID != "" && info.TriggerType == flinkv1beta1.SnapshotTriggerManual
	})
	return d.Status.JobStatus.SavepointInfo.TriggerID
}

// stopRequests counts the stop-with-savepoint requests Flink received for a job.
func stopRequests(flink *fakeflink.Server, jobID string) int {
	n := 0
	for _, r := range flink.Requests() {
		if r == "POST /jobs/"+jobID+"/stop" {
			n++
		}
	}
	return n
}

// firstStop waits for the first stop-with-savepoint request of a job and returns its trigger id.
func firstStop(t *testing.T, flink *fakeflink.Server, jobID string) string {
	t.Helper()
	wait.For(t, 30*time.Second, "the upgrade stopping the job with a savepoint", func() bool { return len(flink.StopsOf(jobID)) > 0 })
	return flink.StopsOf(jobID)[0]
}

// polls counts the status requests of one savepoint trigger.
func polls(flink *fakeflink.Server, jobID, trigger string) int {
	n := 0
	for _, r := range flink.Requests() {
		if r == fmt.Sprintf("GET /jobs/%s/savepoints/%s", jobID, trigger) {
			n++
		}
	}
	return n
}

func TestUpgradeWaitsForPendingLegacySavepoint(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, flink, k, _ := newScenario(t, "pending-savepoint")
	d := stableDeployment(t, c, k, legacySnapshotDeployment(t, ns, nil))
	oldJob := d.Status.JobStatus.JobID
	manual := pendingManualSavepoint(t, ns, flink)

	update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 3 })
	// The operator has seen the change once it polled the manual savepoint a few more times.
	seen := polls(flink, oldJob, manual)
	wait.For(t, 30*time.Second, "the pending manual savepoint is no longer followed", func() bool { return polls(flink, oldJob, manual) >= seen+3 })
	d = get(t, c, ns, "job")
	assert.Equal(t, flinkv1beta1.ReconciliationDeployed, d.Status.ReconciliationStatus.State, "no upgrade starts while the manual savepoint is in flight")
	assert.Equal(t, manual, d.Status.JobStatus.SavepointInfo.TriggerID, "the manual savepoint stays recorded")
	assert.Zero(t, stopRequests(flink, oldJob), "the job is not stopped while the manual savepoint is in flight")
	assert.Equal(t, "RUNNING", flink.Job(oldJob))

	// Once it completes it is recorded as the manual savepoint, and then the upgrade stops the
	// job with a savepoint of its own.
	flink.CompleteSavepoint(oldJob, manual, "")
	upgradeStop := firstStop(t, flink, oldJob)
	d = get(t, c, ns, "job")
	last := d.Status.JobStatus.SavepointInfo.LastSavepoint
	require.NotNil(t, last, "the manual savepoint is recorded")
	assert.Equal(t, flinkv1beta1.SnapshotTriggerManual, last.TriggerType)
	assert.Equal(t, flink.SavepointLocation(oldJob, manual), last.Location)
	assert.NotEqual(t, manual, upgradeStop, "the upgrade's stop has a trigger of its own")
	flink.CompleteSavepoint(oldJob, upgradeStop, "")
	k.collect(ns, "job")
	redeployed(t, c, k, ns, "job", oldJob)
	assert.Equal(t, flink.SavepointLocation(oldJob, upgradeStop), restorePath(t, c, ns, "job"), "the new job starts from the upgrade's savepoint")
}

func TestUpgradeIgnoresPendingLegacySavepointWhenConfigured(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, flink, k, events := newScenario(t, "ignore-pending")
	d := stableDeployment(t, c, k, legacySnapshotDeployment(t, ns, map[string]string{"kubernetes.operator.job.upgrade.ignore-pending-savepoint": "true"}))
	oldJob := d.Status.JobStatus.JobID
	manual := pendingManualSavepoint(t, ns, flink)

	update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 3 })
	upgradeStop := firstStop(t, flink, oldJob)
	assert.NotEqual(t, manual, upgradeStop, "the upgrade's stop has a trigger of its own")
	events.seen(t, "abandoned")
	flink.CompleteSavepoint(oldJob, upgradeStop, "")
	k.collect(ns, "job")
	d = redeployed(t, c, k, ns, "job", oldJob)
	assert.Equal(t, flink.SavepointLocation(oldJob, upgradeStop), restorePath(t, c, ns, "job"))
	assert.True(t, strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, `"parallelism":3`))
	jm := k.jobManager(ns, "job")
	require.NotNil(t, jm)
	assert.Equal(t, itoa(d.Generation), jm.Annotations[native.AnnotationGeneration])
}
