package reconciler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

func TestUpdatePriority(t *testing.T) {
	now := metav1.Now()
	base := flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5", Generation: 2,
		Annotations: map[string]string{"team": "a"}}}
	cases := []struct {
		name   string
		change func(*flinkv1beta1.FlinkDeployment)
		want   int
	}{
		{"resync: nothing changed", func(*flinkv1beta1.FlinkDeployment) {}, priorityBackground},
		{"the operator's status write", func(d *flinkv1beta1.FlinkDeployment) {
			d.ResourceVersion = "6"
			d.Status.LifecycleState = flinkv1beta1.LifecycleDeployed
		}, priorityRoutine},
		{"a label", func(d *flinkv1beta1.FlinkDeployment) { d.ResourceVersion, d.Labels = "6", map[string]string{"x": "y"} }, priorityRoutine},
		{"the spec", func(d *flinkv1beta1.FlinkDeployment) { d.ResourceVersion, d.Generation = "6", 3 }, priorityUserChange},
		{"deletion", func(d *flinkv1beta1.FlinkDeployment) { d.ResourceVersion, d.DeletionTimestamp = "6", &now }, priorityUserChange},
		{"an annotation", func(d *flinkv1beta1.FlinkDeployment) {
			d.ResourceVersion, d.Annotations = "6", map[string]string{"team": "b"}
		}, priorityUserChange},
		{"an annotation removed", func(d *flinkv1beta1.FlinkDeployment) { d.ResourceVersion, d.Annotations = "6", nil }, priorityUserChange},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := base.DeepCopy()
			updated := base.DeepCopy()
			tc.change(updated)
			assert.Equal(t, tc.want, updatePriority(old, updated))
		})
	}
	assert.Equal(t, priorityBackground, createPriority(true), "the initial list after a restart")
	assert.Equal(t, priorityRoutine, createPriority(false), "a new resource")
}

// recordingLimiter is a rate limiter that records what it was asked.
type recordingLimiter struct {
	mu    sync.Mutex
	calls []string
}

func (l *recordingLimiter) record(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
}

func (l *recordingLimiter) recorded() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func (l *recordingLimiter) When(r reconcile.Request) time.Duration {
	l.record("When " + r.Name)
	return time.Hour
}
func (l *recordingLimiter) Forget(r reconcile.Request) { l.record("Forget " + r.Name) }
func (l *recordingLimiter) NumRequeues(r reconcile.Request) int {
	l.record("NumRequeues " + r.Name)
	return 7
}

// TestPriorityQueuePacesWithTheOperatorsLimiter: the FlinkDeployment controller's priority
// queue is one the handlers recognise (byIntent enqueues with priorities only into a
// priorityqueue.PriorityQueue), and its retries are paced by the rate limiter the operator
// gives it (RateLimits), not by controller-runtime's default.
func TestPriorityQueuePacesWithTheOperatorsLimiter(t *testing.T) {
	limiter := &recordingLimiter{}
	q := newPriorityQueue("test", limiter)
	defer q.ShutDown()
	_, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	require.True(t, ok, "the handlers recognise it as a priority queue")

	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "orders"}}
	q.AddRateLimited(req)
	assert.Equal(t, 7, q.NumRequeues(req))
	q.Forget(req)
	assert.Zero(t, q.Len(), "held back by the limiter's delay (an hour)")
	assert.ElementsMatch(t, []string{"When orders", "NumRequeues orders", "Forget orders"}, limiter.recorded())
}

// TestControllersKeepThePlainQueue: controller-runtime v0.23 and later give a controller its
// priority queue unless told otherwise. The operator's controllers keep the plain queue (with
// the rate limiter RateLimits describes) unless one asks for the priority queue, as the
// FlinkDeployment controller does with --reconcile-priority-queue.
func TestControllersKeepThePlainQueue(t *testing.T) {
	noop := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	opts, _, err := RateLimits{}.pace(nil, "flinksessionjob", time.Minute, &flinkv1beta1.FlinkSessionJob{}, noop)
	require.NoError(t, err)
	require.NotNil(t, opts.UsePriorityQueue, "left unset, controller-runtime uses its priority queue")
	assert.False(t, *opts.UsePriorityQueue)
	assert.Nil(t, opts.NewQueue, "the plain queue is controller-runtime's own")
}
