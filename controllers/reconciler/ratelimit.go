package reconciler

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flink-operator/flink-operator/pkg/nsshare"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/ratelimit"
)

// RateLimits pace a controller's reconciles as upstream's JOSDK does. They are read when the
// controller starts (SetupWithManager); the operator restarts its controllers in-process when
// the options change.
type RateLimits struct {
	// Retry is the back-off of reconciles that fail with an error (kubernetes.operator.retry.*);
	// zero keeps controller-runtime's own (5 ms doubling up to 1000 s).
	Retry ratelimit.Retry
	// Limit is each resource's reconcile budget (kubernetes.operator.rate-limiter.*); zero is
	// none.
	Limit ratelimit.Limit
	// PerNamespace is how many reconciles of one namespace a controller runs at once
	// (--max-concurrent-reconciles-per-namespace, pkg/nsshare); zero is no limit.
	PerNamespace int
}

// pace returns the options and the reconciler that apply p to controller name, whose
// resources are of obj's kind and are settled after the reconcile interval settled. Each
// controller gets limiters of its own: requests of different kinds may name the same object.
func (p RateLimits) pace(mgr ctrl.Manager, name string, settled time.Duration, obj client.Object,
	r reconcile.Reconciler) (controller.Options, reconcile.Reconciler, error) {
	// controller-runtime v0.23 and later give every controller its priority queue unless told
	// otherwise; the operator keeps the plain queue, whose rate limiter the options below and
	// docs/operations/rate-limits.md describe, except where a controller asks for the priority queue (its NewQueue).
	usePriorityQueue := false
	opts := controller.Options{UsePriorityQueue: &usePriorityQueue}
	var backoff *ratelimit.Backoff[reconcile.Request]
	if p.Retry != (ratelimit.Retry{}) {
		logger := mgr.GetLogger().WithValues("controller", name)
		var err error
		backoff, err = ratelimit.NewBackoff(p.Retry, settled, func(req reconcile.Request, failures int, every time.Duration) {
			// Upstream gives up here until the next event; a resource must never be stuck.
			logger.Info("reconcile failed too often in a row: retrying at the reconcile interval from now on, until it succeeds",
				"resource", req.String(), "failures", failures, "retryEvery", every.String(),
				"option", options.RetryMaxAttempts.Key)
		})
		if err != nil {
			return opts, nil, fmt.Errorf("%s controller: kubernetes.operator.retry: %w", name, err)
		}
		opts.RateLimiter = backoff
	}
	if p.Limit.Enabled() {
		budget, err := ratelimit.NewBudget[reconcile.Request](p.Limit, nil)
		if err != nil {
			return opts, nil, fmt.Errorf("%s controller: kubernetes.operator.rate-limiter: %w", name, err)
		}
		r = &throttled{next: r, budget: budget, backoff: backoff, cache: mgr.GetCache(),
			newObject: func() client.Object { return obj.DeepCopyObject().(client.Object) }}
	}
	// Outermost: a resource retried while its namespace's share is taken does not spend its
	// reconcile budget on those retries.
	return opts, shareNamespaces(r, p.PerNamespace, backoff), nil
}

// shareNamespaces keeps r's reconciles of one namespace to perNamespace at once (none when
// below 1), so that one tenant's slow resources cannot take every worker of the controller.
// A postponed resource keeps its failure count in backoff (when set).
func shareNamespaces(r reconcile.Reconciler, perNamespace int, backoff *ratelimit.Backoff[reconcile.Request]) reconcile.Reconciler {
	if perNamespace < 1 {
		return r
	}
	shared := &nsshare.Reconciler{Next: r, Limiter: nsshare.NewLimiter(perNamespace)}
	if backoff != nil {
		shared.Postponed = backoff.Postpone
	}
	return shared
}

// throttled postpones a resource's reconcile while the resource spent its budget, to when the
// budget's period ends. A resource being deleted is never postponed: deletion is what a user
// or a namespace's teardown waits for, and it ends (the finalizer goes) rather than loops.
type throttled struct {
	next   reconcile.Reconciler
	budget *ratelimit.Budget[reconcile.Request]
	// backoff, when set, keeps a failing resource's failure count through its postponement.
	backoff *ratelimit.Backoff[reconcile.Request]
	// cache tells a resource being deleted; read only when its budget is spent.
	cache     client.Reader
	newObject func() client.Object
}

func (t *throttled) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wait := t.budget.Take(req)
	if wait == 0 || t.deleting(ctx, req) {
		return t.next.Reconcile(ctx, req)
	}
	log.FromContext(ctx).V(1).Info("reconcile postponed: the resource's reconciles of this period are spent",
		"postponedFor", wait.String(), "option", options.RateLimiterLimit.Key)
	if t.backoff != nil {
		t.backoff.Postpone(req)
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// deleting says whether req's resource is being deleted, or not in the cache (gone, or not
// readable: the reconcile finds out quickly and is not worth postponing).
func (t *throttled) deleting(ctx context.Context, req reconcile.Request) bool {
	obj := t.newObject()
	if err := t.cache.Get(ctx, req.NamespacedName, obj); err != nil {
		return true
	}
	return !obj.GetDeletionTimestamp().IsZero()
}
