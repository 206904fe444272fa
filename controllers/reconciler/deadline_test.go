package reconciler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestReconcileDeadline: a reconcile stuck on a peer that never answers
// (a tarpit JobManager or jar host) gives its worker back at the deadline, with an error that
// requeues the resource, instead of holding the worker and every other tenant behind it.
func TestReconcileDeadline(t *testing.T) {
	stuck := reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
		<-ctx.Done() // every call the reconcilers make takes ctx, as this one does
		return reconcile.Result{}, ctx.Err()
	})
	done := make(chan error, 1)
	go func() {
		_, err := withDeadline(stuck, 200*time.Millisecond).Reconcile(context.Background(), reconcile.Request{})
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(10 * time.Second):
		t.Fatal("the reconcile was not bounded by its deadline")
	}
	assert.Equal(t, DefaultReconcileDeadline, DefaultIntervals.Deadline, "the reconcilers are bounded by default")
}
