package nsshare

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name                string
		configured, workers int
		want                int
		wantErr             string
	}{
		{name: "default is a quarter of the workers", workers: 25, want: 6},
		{name: "default is at least one", workers: 3, want: 1},
		{name: "default with one worker", workers: 1, want: 1},
		{name: "configured", configured: 2, workers: 25, want: 2},
		{name: "configured above the workers is no limit in effect", configured: 40, workers: 25, want: 40},
		{name: "negative", configured: -1, workers: 25, wantErr: "--share must be 0 (a quarter of the workers) or a positive number of reconciles, not -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve("--share", tc.configured, tc.workers)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestLimiter(t *testing.T) {
	l := NewLimiter(2)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	r1, ok := l.Acquire("a")
	require.True(t, ok)
	r2, ok := l.Acquire("a")
	require.True(t, ok)
	_, ok = l.Acquire("a")
	require.False(t, ok, "a's share of 2 is in use")
	rb, ok := l.Acquire("b")
	require.True(t, ok, "another namespace has a share of its own")
	now = now.Add(SlowAfter) // a's reconciles are slow: it stays held to its share
	r1()
	r1() // releasing twice gives back one place only
	require.Equal(t, 1, l.Running("a"))
	r3, ok := l.Acquire("a")
	require.True(t, ok)
	_, ok = l.Acquire("a")
	require.False(t, ok)
	r2()
	r3()
	rb()
	require.Empty(t, l.namespaces, "no namespace runs anything: none is kept")

	unlimited := NewLimiter(0)
	for range 100 {
		_, ok := unlimited.Acquire("a")
		require.True(t, ok)
	}
}

// blocking is a reconciler whose reconciles wait until released, counting those that run.
type blocking struct {
	release             chan struct{}
	mu                  sync.Mutex
	running, maxRunning map[string]int
}

func (b *blocking) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	b.mu.Lock()
	b.running[req.Namespace]++
	b.maxRunning[req.Namespace] = max(b.maxRunning[req.Namespace], b.running[req.Namespace])
	b.mu.Unlock()
	<-b.release
	b.mu.Lock()
	b.running[req.Namespace]--
	b.mu.Unlock()
	return reconcile.Result{}, nil
}

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// TestReconcilerKeepsOneNamespaceToItsShare runs 25 reconciles of namespace a that do not
// end, as 25 workers would: only a's share runs, the rest are postponed at once, and a
// reconcile of namespace b still runs.
func TestReconcilerKeepsOneNamespaceToItsShare(t *testing.T) {
	next := &blocking{release: make(chan struct{}), running: map[string]int{}, maxRunning: map[string]int{}}
	var postponed atomic.Int32
	r := &Reconciler{Next: next, Limiter: NewLimiter(Default(25)), Retry: 50 * time.Millisecond,
		Postponed: func(reconcile.Request) { postponed.Add(1) }}
	var wg sync.WaitGroup
	results := make(chan reconcile.Result, 25)
	for i := range 25 {
		wg.Go(func() {
			res, err := r.Reconcile(context.Background(), req("a", string(rune('a'+i))))
			require.NoError(t, err)
			results <- res
		})
	}
	// The 19 over the share come back at once, each asking to be retried within 2×Retry.
	for range 25 - 6 {
		select {
		case res := <-results:
			require.GreaterOrEqual(t, res.RequeueAfter, 50*time.Millisecond)
			require.Less(t, res.RequeueAfter, 100*time.Millisecond)
		case <-time.After(5 * time.Second):
			t.Fatal("a reconcile over its namespace's share waited for a place")
		}
	}
	require.EqualValues(t, 19, postponed.Load())
	require.Equal(t, 6, r.Limiter.Running("a"))

	other := make(chan reconcile.Result, 1)
	go func() {
		res, _ := r.Reconcile(context.Background(), req("b", "x"))
		other <- res
	}()
	wait.For(t, 5*time.Second, "namespace b's reconcile runs beside a's", func() bool {
		next.mu.Lock()
		defer next.mu.Unlock()
		return next.running["b"] == 1
	})

	close(next.release)
	wg.Wait()
	require.Zero(t, (<-other).RequeueAfter)
	require.Equal(t, 6, next.maxRunning["a"])
	require.Equal(t, 0, r.Limiter.Running("a"))
}

// TestReconcilerReleasesOnPanic: a reconcile that panics (controller-runtime recovers it)
// gives its place back.
func TestReconcilerReleasesOnPanic(t *testing.T) {
	r := &Reconciler{Next: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		panic("boom")
	}), Limiter: NewLimiter(1)}
	require.Panics(t, func() { _, _ = r.Reconcile(context.Background(), req("a", "x")) })
	require.Equal(t, 0, r.Limiter.Running("a"))
}

// TestLimiterLetsAFastNamespaceRunMore: a namespace runs its share; once a reconcile of it
// finished fast, it runs more, and it is held to its share again as soon as one of its
// reconciles has run SlowAfter, or its last one took that long.
func TestLimiterLetsAFastNamespaceRunMore(t *testing.T) {
	share := Default(25)
	now := time.Unix(1000, 0)
	l := NewLimiter(share)
	l.now = func() time.Time { return now }
	acquire := func(n int) (releases []func()) {
		t.Helper()
		for range n {
			release, ok := l.Acquire("a")
			require.True(t, ok)
			releases = append(releases, release)
		}
		return releases
	}
	refused := func(why string) {
		t.Helper()
		_, ok := l.Acquire("a")
		require.False(t, ok, why)
	}

	first := acquire(share)
	refused("no reconcile of a has finished yet: a is held to its share")
	now = now.Add(10 * time.Millisecond)
	first[0]()
	more := acquire(25 - share + 1)
	require.Equal(t, 25, l.Running("a"), "a's reconciles are fast: it is not held to its share")
	other, ok := l.Acquire("b")
	require.True(t, ok, "another namespace has a share of its own")
	other()

	now = now.Add(SlowAfter)
	more[0]()
	refused("a's other reconciles have run SlowAfter: a is slow, held to its share")
	for _, release := range append(first[1:], more[1:]...) {
		release()
	}
	require.Zero(t, l.Running("a"))
	acquire(share)
	refused("a's last reconcile took SlowAfter: a is held to its share")
}
