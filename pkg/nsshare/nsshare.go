// Package nsshare gives each namespace a share of a controller's workers: while one namespace's
// reconciles are slow, at most a fixed number of them run at once, so that one tenant's slow
// resources (a jar server that trickles, a JobManager that answers just under its timeout)
// cannot occupy every worker and starve the other namespaces. A namespace whose reconciles are
// fast is not held to it (Limiter).
//
// It wraps the reconciler rather than replacing the workqueue. A reconcile over its
// namespace's share returns at once, asking to be retried shortly, and so holds a worker for
// microseconds. Wrapping keeps whichever queue a controller uses (controller-runtime's
// priority queue, which orders user changes first, or the plain rate-limited queue), with its
// rate limiter and the workqueue metrics the liveness check reads; a queue of its own that
// held requests back would report them as processing for as long as they waited.
package nsshare

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// DefaultRetry is how long a reconcile over its namespace's share waits before it is tried
// again (plus up to as much again of jitter, so that the waiting requests do not come back
// all at once).
const DefaultRetry = time.Second

// Default is each namespace's share when none is configured: a quarter of the workers, at
// least one. Four tenants with slow resources at once are needed to occupy every worker.
func Default(workers int) int {
	return max(1, workers/4)
}

// Resolve is the share the option value configured asks for: configured itself when
// positive, Default(workers) when 0. A negative value is refused, naming the option.
func Resolve(option string, configured, workers int) (int, error) {
	switch {
	case configured < 0:
		return 0, fmt.Errorf("%s must be 0 (a quarter of the workers) or a positive number of reconciles, not %d", option, configured)
	case configured == 0:
		return Default(workers), nil
	}
	return configured, nil
}

// SlowAfter is how long a reconcile runs before its namespace counts as slow: a namespace with a
// reconcile running this long, or whose last reconcile took this long, is held to its share.
const SlowAfter = time.Second

// Limiter counts the reconciles of each namespace that run, and when each started. A namespace
// runs its share at once. One whose reconciles are fast (its last one took less than SlowAfter
// and none runs that long) is not held to it: with all resources in one namespace, holding it
// to a quarter of the workers left three quarters of them idle, postponed requests came back by
// the thousands per second with nothing else to do, and a user's change to one resource waited
// through postponements behind them. A namespace that has not yet finished a reconcile, or whose
// reconciles are slow (what the share is for: a jar server that trickles), is held to its share.
// It is safe for concurrent use.
type Limiter struct {
	share      int
	now        func() time.Time
	mu         sync.Mutex
	namespaces map[string]*namespaceRuns
	// lastTook is how long each namespace's last finished reconcile took: kept for the
	// namespaces that ran something, a duration each.
	lastTook map[string]time.Duration
	next     uint64
}

type namespaceRuns struct {
	started map[uint64]time.Time
}

// NewLimiter lets share reconciles of one namespace run at once while the namespace's
// reconciles are slow; share < 1 is no limit.
func NewLimiter(share int) *Limiter {
	return &Limiter{share: share, now: time.Now, namespaces: map[string]*namespaceRuns{}, lastTook: map[string]time.Duration{}}
}

// Acquire takes a place for a reconcile of namespace ns. It says false when the namespace's
// share is taken and its reconciles are not fast; else release gives the place back (once).
func (l *Limiter) Acquire(ns string) (release func(), ok bool) {
	if l.share < 1 {
		return func() {}, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	runs := l.namespaces[ns]
	if runs != nil && !l.admits(ns, runs, now) {
		return nil, false
	}
	if runs == nil {
		runs = &namespaceRuns{started: map[uint64]time.Time{}}
		l.namespaces[ns] = runs
	}
	l.next++
	token := l.next
	runs.started[token] = now
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.lastTook[ns] = l.now().Sub(runs.started[token])
			delete(runs.started, token)
			if len(runs.started) == 0 {
				delete(l.namespaces, ns) // namespaces come and go: the map keeps only running ones
			}
		})
	}, true
}

// admits decides on one more reconcile of ns, which runs some already.
func (l *Limiter) admits(ns string, runs *namespaceRuns, now time.Time) bool {
	running := len(runs.started)
	if running < l.share {
		return true
	}
	took, finished := l.lastTook[ns]
	if !finished || took >= SlowAfter {
		return false
	}
	for _, started := range runs.started {
		if now.Sub(started) >= SlowAfter {
			return false
		}
	}
	return true
}

// Running is the number of namespace ns's reconciles that run.
func (l *Limiter) Running(ns string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if runs := l.namespaces[ns]; runs != nil {
		return len(runs.started)
	}
	return 0
}

// Reconciler runs Next within its namespace's share of Limiter.
type Reconciler struct {
	Next    reconcile.Reconciler
	Limiter *Limiter
	// Retry is the wait of a postponed reconcile before jitter; DefaultRetry when 0.
	Retry time.Duration
	// Postponed, when set, is told of every postponed request (e.g. to keep its failure count
	// through the postponement: controller-runtime forgets it on a requeue).
	Postponed func(reconcile.Request)
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// Reconcile runs the request's reconcile if its namespace has a place left, else asks for it
// to be retried shortly.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	release, ok := r.Limiter.Acquire(req.Namespace)
	if !ok {
		retry := r.Retry
		if retry <= 0 {
			retry = DefaultRetry
		}
		retry += rand.N(retry) //nolint:gosec // G404: jitter, not a secret
		if r.Postponed != nil {
			r.Postponed(req)
		}
		log.FromContext(ctx).V(1).Info("reconcile postponed: the namespace's share of the workers is in use",
			"share", r.Limiter.share, "retryAfter", retry.String(), "option", "--max-concurrent-reconciles-per-namespace")
		return reconcile.Result{RequeueAfter: retry}, nil
	}
	defer release()
	return r.Next.Reconcile(ctx, req)
}
