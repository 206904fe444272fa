package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkstatesnapshot"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestFlinkStateSnapshots drives snapshot resources through their state machine against a
// scripted JobManager: savepoint and checkpoint completion, alreadyExists, abandonment,
// failures with back-off up to backoffLimit, and disposal on deletion.
func TestFlinkStateSnapshots(t *testing.T) {
	t.Parallel()
	flink := fakeflink.New(t)
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "snapshots")

	// A running application the snapshots refer to (its status as the deployment reconciler
	// would write it).
	dep := fixtures.NewDeployment(t, ns, "orders")
	require.NoError(t, c.Create(ctx, dep))
	const jobID = "0000000000000000000000000000abcd"
	dep.Status.JobStatus.JobID, dep.Status.JobStatus.State = jobID, flinkv1beta1.JobStatusRunning
	dep.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, dep))
	flink.SetJob(jobID, "RUNNING")

	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: snapshotController(flink)})

	ref := &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: "orders"}
	create := func(name string, spec flinkv1beta1.FlinkStateSnapshotSpec) client.ObjectKey {
		s := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
		require.NoError(t, c.Create(ctx, s))
		return client.ObjectKeyFromObject(s)
	}
	waitState := func(key client.ObjectKey, state flinkv1beta1.SnapshotState) *flinkv1beta1.FlinkStateSnapshot {
		t.Helper()
		s := &flinkv1beta1.FlinkStateSnapshot{}
		wait.For(t, 20*time.Second, fmt.Sprintf("%s to be %s", key.Name, state), func() bool {
			return c.Get(ctx, key, s) == nil && s.Status.State == state
		}, func() string { return fmt.Sprintf("status %+v", s.Status) })
		return s
	}
	f := false
	tr := true

	t.Run("a savepoint completes with its path; labels say what it is", func(t *testing.T) {
		key := create("sp", flinkv1beta1.FlinkStateSnapshotSpec{JobReference: ref,
			Savepoint: &flinkv1beta1.SavepointSpec{Path: "file:///flink/manual", DisposeOnDelete: &f}})
		s := waitState(key, flinkv1beta1.SnapshotCompleted)
		assert.Contains(t, s.Status.Path, "file:///flink/manual/savepoint-000000-")
		assert.Contains(t, flink.Triggered(), s.Status.TriggerID, "the recorded trigger id is the one Flink got")
		assert.Equal(t, "SAVEPOINT", s.Labels[jobs.LabelSnapshotType])
		assert.Equal(t, "MANUAL", s.Labels[jobs.LabelSnapshotTrigger])
		assert.Equal(t, "orders", s.Labels[jobs.LabelJobReferenceName])
		wait.For(t, 5*time.Second, "the snapshot COMPLETED", func() bool {
			_ = c.Get(ctx, key, s)
			return s.Labels[jobs.LabelSnapshotState] == "COMPLETED"
		})
		assert.Contains(t, s.Finalizers, flinkstatesnapshot.SnapshotFinalizer)
	})

	t.Run("a checkpoint completes with the checkpoint's path", func(t *testing.T) {
		s := waitState(create("cp", flinkv1beta1.FlinkStateSnapshotSpec{JobReference: ref, Checkpoint: &flinkv1beta1.CheckpointSpec{}}),
			flinkv1beta1.SnapshotCompleted)
		assert.Equal(t, fakeflink.CheckpointPath(jobID), s.Status.Path)
		assert.Equal(t, "CHECKPOINT", s.Labels[jobs.LabelSnapshotType])
	})

	t.Run("alreadyExists completes at once without Flink", func(t *testing.T) {
		before := len(flink.Triggered())
		s := waitState(create("existing", flinkv1beta1.FlinkStateSnapshotSpec{
			Savepoint: &flinkv1beta1.SavepointSpec{Path: "file:///old/savepoint-1", AlreadyExists: &tr, DisposeOnDelete: &f}}),
			flinkv1beta1.SnapshotCompleted)
		assert.Equal(t, "file:///old/savepoint-1", s.Status.Path)
		assert.Len(t, flink.Triggered(), before)
	})

	t.Run("a snapshot of a job that does not exist is abandoned", func(t *testing.T) {
		s := waitState(create("orphan", flinkv1beta1.FlinkStateSnapshotSpec{
			JobReference: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: "nope"},
			Savepoint:    &flinkv1beta1.SavepointSpec{}}), flinkv1beta1.SnapshotAbandoned)
		assert.Contains(t, s.Status.Error, "FlinkDeployment nope not found")
		events.seen(t, flinkstatesnapshot.ReasonSnapshotAbandoned)
	})

	t.Run("failures retry with back-off, then FAILED past backoffLimit", func(t *testing.T) {
		flink.SetAutoComplete(false)
		defer flink.SetAutoComplete(true)
		limit := int32(1)
		key := create("flaky", flinkv1beta1.FlinkStateSnapshotSpec{JobReference: ref, BackoffLimit: &limit,
			Savepoint: &flinkv1beta1.SavepointSpec{DisposeOnDelete: &f}})
		for attempt := 1; attempt <= 2; attempt++ {
			s := waitState(key, flinkv1beta1.SnapshotInProgress)
			flink.CompleteSavepoint(jobID, s.Status.TriggerID, "disk full")
			if attempt == 1 {
				s = waitState(key, flinkv1beta1.SnapshotTriggerPending)
				assert.Equal(t, int32(1), s.Status.Failures)
				assert.Contains(t, s.Status.Error, "disk full")
			}
			flink.SetJob(jobID, "RUNNING") // CompleteSavepoint finishes the job; keep it running
		}
		s := waitState(key, flinkv1beta1.SnapshotFailed)
		assert.Equal(t, int32(2), s.Status.Failures)
		events.seen(t, "failed after 2 attempts")
	})

	t.Run("deleting a completed savepoint with disposeOnDelete disposes it", func(t *testing.T) {
		key := create("disposable", flinkv1beta1.FlinkStateSnapshotSpec{JobReference: ref, Savepoint: &flinkv1beta1.SavepointSpec{}})
		s := waitState(key, flinkv1beta1.SnapshotCompleted)
		require.NoError(t, c.Delete(ctx, s))
		wait.For(t, 10*time.Second, "apierrors.IsNotFound(c.Get(ctx, key, &flinkv1beta1.FlinkStateSnapshot{}))", func() bool { return apierrors.IsNotFound(c.Get(ctx, key, &flinkv1beta1.FlinkStateSnapshot{})) })
		assert.Contains(t, flink.Disposed(), s.Status.Path)
	})
}
