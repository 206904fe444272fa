package kubectlflink

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
)

// snapshotOutcome plays the snapshot controller: a FlinkStateSnapshot read after its creation
// is in state, with path or error.
func snapshotOutcome(state flinkv1beta1.SnapshotState, path, errText string) interceptor.Funcs {
	return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if err := c.Get(ctx, key, obj, opts...); err != nil {
			return err
		}
		if s, ok := obj.(*flinkv1beta1.FlinkStateSnapshot); ok {
			s.Status.State, s.Status.Path, s.Status.Error = state, path, errText
		}
		return nil
	}}
}

// TestSavepointWaitPrintsThePath: savepoint creates a manual savepoint FlinkStateSnapshot of the
// job, named and labelled as the operator's own (the resource's labels kept, for sharding),
// not disposed of on deletion unless asked; --wait prints the path once it is COMPLETED.
func TestSavepointWaitPrintsThePath(t *testing.T) {
	d := runningDeployment()
	d.Labels = map[string]string{"shard": "a"}
	f := newFakeCluster(t, snapshotOutcome(flinkv1beta1.SnapshotCompleted, "file:///sp/savepoint-1", ""), d)
	out := mustRun(t, f, "ns", "savepoint", "app", "--wait")
	name := "app-savepoint-manual-" + strings.TrimSpace(strings.TrimPrefix(strings.Fields(out)[1], "ns/app-savepoint-manual-"))
	assert.Equal(t, "flinkstatesnapshot ns/"+name+" created for flinkdeployment ns/app\nfile:///sp/savepoint-1\n", out)

	var list flinkv1beta1.FlinkStateSnapshotList
	require.NoError(t, f.client.List(context.Background(), &list))
	require.Len(t, list.Items, 1)
	s := list.Items[0]
	assert.Equal(t, &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: "app"}, s.Spec.JobReference)
	require.NotNil(t, s.Spec.Savepoint)
	assert.False(t, *s.Spec.Savepoint.DisposeOnDelete)
	assert.Equal(t, map[string]string{"shard": "a", jobs.LabelSnapshotTrigger: "MANUAL", jobs.LabelJobReferenceKind: "FlinkDeployment",
		jobs.LabelJobReferenceName: "app"}, s.Labels)

	out = mustRun(t, newFakeCluster(t, interceptor.Funcs{}, runningDeployment()), "ns", "savepoint", "app")
	assert.Contains(t, out, "follow it with: kubectl -n ns get flinkstatesnapshot app-savepoint-manual-")
}

// TestSavepointFailureExitsNonZero: a FAILED or ABANDONED snapshot, or none done within
// --timeout, is an error naming the snapshot and Flink's reason.
func TestSavepointFailureExitsNonZero(t *testing.T) {
	failed := newFakeCluster(t, snapshotOutcome(flinkv1beta1.SnapshotFailed, "",
		flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionReconciliation, "", "Savepoint directory not configured")), runningDeployment())
	_, err := failed.run(t, "ns", "savepoint", "app", "--wait")
	require.ErrorIs(t, err, errSnapshotFailed)
	require.ErrorContains(t, err, "is FAILED: Savepoint directory not configured")

	abandoned := newFakeCluster(t, snapshotOutcome(flinkv1beta1.SnapshotAbandoned, "", "job not running"), runningDeployment())
	_, err = abandoned.run(t, "ns", "savepoint", "app", "--wait")
	require.ErrorContains(t, err, "is ABANDONED: job not running")

	slow := newFakeCluster(t, snapshotOutcome(flinkv1beta1.SnapshotInProgress, "", ""), runningDeployment())
	_, err = slow.run(t, "ns", "savepoint", "app", "--wait", "--timeout", "50ms")
	require.ErrorContains(t, err, "is still IN_PROGRESS after the --timeout")

	session := runningDeployment()
	session.Spec.Job = nil
	_, err = newFakeCluster(t, interceptor.Funcs{}, session).run(t, "ns", "savepoint", "app")
	require.ErrorContains(t, err, "is a session cluster: take savepoints of its FlinkSessionJobs")
}
