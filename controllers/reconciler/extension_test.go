package reconciler

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/extension/listener"
)

type keepingListener struct{ changes []listener.StatusChange }

func (k *keepingListener) OnStatusChange(_ context.Context, c listener.StatusChange) {
	k.changes = append(k.changes, c)
}
func (k *keepingListener) OnEvent(context.Context, listener.Event) {}

// countingStatus counts how often it is encoded.
type countingStatus struct{ encoded *int }

func (c countingStatus) MarshalJSON() ([]byte, error) {
	*c.encoded++
	return []byte(`{"lifecycleState":"STABLE"}`), nil
}

// TestStatusWrittenEncodesOnlyWhenAsked: a listener is told the lifecycle states and the error
// (its URL passwords masked) at once; the statuses are encoded only when it asks for them.
func TestStatusWrittenEncodesOnlyWhenAsked(t *testing.T) {
	dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wordcount"}}
	before := &flinkv1beta1.FlinkDeploymentStatus{CommonStatus: flinkv1beta1.CommonStatus{LifecycleState: flinkv1beta1.LifecycleStable}}
	after := &flinkv1beta1.FlinkDeploymentStatus{CommonStatus: flinkv1beta1.CommonStatus{LifecycleState: flinkv1beta1.LifecycleFailed,
		Error: "cannot fetch https://tenant:hunter2@repo.example/job.jar"}}
	l := &keepingListener{}
	StatusWritten(context.Background(), l, dep, before, after, nil)
	require.Len(t, l.changes, 1)
	c := l.changes[0]
	assert.Equal(t, listener.Lifecycle{State: "STABLE"}, c.Before)
	assert.Equal(t, listener.Lifecycle{State: "FAILED", Error: "cannot fetch https://tenant:******@repo.example/job.jar"}, c.After)
	_, encoded := c.Statuses()
	var st flinkv1beta1.FlinkDeploymentStatus
	require.NoError(t, json.Unmarshal(encoded, &st))
	assert.Equal(t, flinkv1beta1.LifecycleFailed, st.LifecycleState)
	assert.NotContains(t, string(encoded), "hunter2")

	snap := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sp"}}
	StatusWritten(context.Background(), l, snap, &flinkv1beta1.FlinkStateSnapshotStatus{State: flinkv1beta1.SnapshotInProgress},
		&flinkv1beta1.FlinkStateSnapshotStatus{State: flinkv1beta1.SnapshotCompleted}, nil)
	require.Len(t, l.changes, 2)
	assert.Equal(t, "IN_PROGRESS", l.changes[1].Before.State)
	assert.Equal(t, "COMPLETED", l.changes[1].After.State)

	n := 0
	StatusWritten(context.Background(), l, dep, countingStatus{&n}, countingStatus{&n}, nil)
	assert.Zero(t, n, "encoded before a listener asked")
	l.changes[2].Statuses()
	assert.Equal(t, 2, n)
}
