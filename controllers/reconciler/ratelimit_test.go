package reconciler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/nsshare"
	"github.com/flink-operator/flink-operator/pkg/ratelimit"
)

// TestPaceSharesNamespaces: the controllers paced by RateLimits run their reconciles within
// their namespace's share, keeping a postponed resource's failure count.
func TestPaceSharesNamespaces(t *testing.T) {
	t.Parallel()
	inner := &noopReconciler{}
	_, r, err := RateLimits{PerNamespace: 3}.pace(nil, "test", time.Second, &flinkv1beta1.FlinkSessionJob{}, inner)
	require.NoError(t, err)
	shared, ok := r.(*nsshare.Reconciler)
	require.True(t, ok, "got %T", r)
	require.Nil(t, shared.Postponed, "no retry back-off configured: nothing to keep")

	_, r, err = RateLimits{}.pace(nil, "test", time.Second, &flinkv1beta1.FlinkSessionJob{}, inner)
	require.NoError(t, err)
	_, ok = r.(*nsshare.Reconciler)
	require.False(t, ok, "no share configured: the reconciler as it is")
	require.Same(t, inner, r)
}

type noopReconciler struct{}

func (*noopReconciler) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	return reconcile.Result{}, nil
}

// existingObjects is a cache in which every object exists and is not being deleted.
type existingObjects struct{ cache.Cache }

func (existingObjects) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return nil
}

// cacheOnly is a manager that has nothing but a cache.
type cacheOnly struct {
	ctrl.Manager
	c cache.Cache
}

func (m cacheOnly) GetCache() cache.Cache { return m.c }

// TestWaitingForTheNamespaceShareSpendsNoBudget: a resource that waits for its namespace's
// share (retried every second or two) does not spend its reconcile budget
// (kubernetes.operator.rate-limiter.limit) on those retries: once a place is free it is
// reconciled, not postponed to the end of the budget's period.
func TestWaitingForTheNamespaceShareSpendsNoBudget(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	running := make(chan struct{})
	var reconciled atomic.Int32
	inner := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Name == "slow" {
			close(running)
			<-release
		}
		reconciled.Add(1)
		return reconcile.Result{}, nil
	})
	limits := RateLimits{Limit: ratelimit.Limit{Max: 2, Period: time.Hour}, PerNamespace: 1}
	_, r, err := limits.pace(cacheOnly{c: existingObjects{}}, "test", time.Second, &flinkv1beta1.FlinkSessionJob{}, inner)
	require.NoError(t, err)
	slow := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "a", Name: "slow"}}
	waiting := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "a", Name: "waiting"}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = r.Reconcile(context.Background(), slow)
	}()
	<-running
	for range 5 { // the retries while the namespace's place is taken
		res, err := r.Reconcile(context.Background(), waiting)
		require.NoError(t, err)
		require.Less(t, res.RequeueAfter, 2*time.Second, "retried within the share's wait, not the budget's period")
	}
	require.Zero(t, reconciled.Load())
	close(release)
	<-done
	res, err := r.Reconcile(context.Background(), waiting)
	require.NoError(t, err)
	require.Zero(t, res.RequeueAfter)
	require.EqualValues(t, 2, reconciled.Load(), "the waiting resource is reconciled once its namespace has a place")
}
