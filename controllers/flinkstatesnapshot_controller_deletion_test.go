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
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestDeletingAnInProgressSavepointWaits: a savepoint resource with disposeOnDelete deleted while
// Flink still writes the savepoint keeps its finalizer until the savepoint is done (upstream's
// StateSnapshotReconciler.cleanup waits on IN_PROGRESS), then disposes of it: the savepoint being
// written is not orphaned. One without disposeOnDelete goes at once, as upstream.
func TestDeletingAnInProgressSavepointWaits(t *testing.T) {
	t.Parallel()
	fl := fakeflink.New(t)
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "snapshot-delete")
	dep := fixtures.NewDeployment(t, ns, "orders")
	require.NoError(t, c.Create(ctx, dep))
	const jobID = "0000000000000000000000000000abce"
	dep.Status.JobStatus.JobID, dep.Status.JobStatus.State = jobID, flinkv1beta1.JobStatusRunning
	dep.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, dep))
	fl.SetJob(jobID, "RUNNING")
	fl.SetAutoComplete(false)
	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: snapshotController(fl)})

	ref := &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: "orders"}
	inProgress := func(name string, dispose bool) (client.ObjectKey, *flinkv1beta1.FlinkStateSnapshot) {
		s := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: flinkv1beta1.FlinkStateSnapshotSpec{JobReference: ref, Savepoint: &flinkv1beta1.SavepointSpec{DisposeOnDelete: &dispose}}}
		require.NoError(t, c.Create(ctx, s))
		key := client.ObjectKeyFromObject(s)
		wait.For(t, 20*time.Second, name+" IN_PROGRESS with its finalizer", func() bool {
			return c.Get(ctx, key, s) == nil && s.Status.State == flinkv1beta1.SnapshotInProgress && len(s.Finalizers) > 0
		}, func() string { return fmt.Sprintf("status %+v", s.Status) })
		return key, s
	}
	gone := func(key client.ObjectKey) bool {
		return apierrors.IsNotFound(c.Get(ctx, key, &flinkv1beta1.FlinkStateSnapshot{}))
	}

	key, s := inProgress("writing", true)
	require.NoError(t, c.Delete(ctx, s))
	wait.Never(t, 2*time.Second, "deleted while Flink writes the savepoint: kept until it is done", func() bool { return gone(key) })
	fl.CompleteSavepoint(jobID, s.Status.TriggerID, "")
	wait.For(t, 20*time.Second, "deleted once the savepoint is done", func() bool { return gone(key) })
	assert.Contains(t, fl.Disposed(), fl.SavepointLocation(jobID, s.Status.TriggerID), "and the finished savepoint disposed of")
	events.seen(t, "still in progress")

	key, s = inProgress("kept", false)
	require.NoError(t, c.Delete(ctx, s))
	wait.For(t, 10*time.Second, "without disposeOnDelete nothing is waited for", func() bool { return gone(key) })
	assert.NotContains(t, fl.Disposed(), fl.SavepointLocation(jobID, s.Status.TriggerID))
}
