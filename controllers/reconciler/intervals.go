// Event reasons, requeue timing and the deadline every controller of the package shares.

package reconciler

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Event reasons (upstream's, so existing alerts keep matching).
const (
	ReasonSubmit           = "Submit"
	ReasonSpecChanged      = "SpecChanged"
	ReasonSuspended        = "Suspended"
	ReasonJobStatusChanged = "JobStatusChanged"
	ReasonMissing          = "Missing"
	ReasonValidationError  = "ValidationError"
	ReasonSavepointError   = "SavepointError"
	ReasonCleanup          = "Cleanup"
	ReasonError            = "Error"
	// ReasonForeignObject: an object the cluster needs exists under its name and belongs to
	// someone else; it is left unchanged.
	ReasonForeignObject = "ForeignObject"
)

// Intervals of the reconcile loop (upstream's defaults).
type Intervals struct {
	// Reconcile is how often a settled resource is looked at (kubernetes.operator.reconcile.interval).
	Reconcile time.Duration
	// ProgressCheck is how often a resource in motion is looked at
	// (kubernetes.operator.observer.progress-check.interval).
	ProgressCheck time.Duration
	// Deadline bounds one reconcile: a JobManager or jar host that never answers must not
	// hold a worker, and with it other tenants' resources, for ever. Zero is no deadline.
	Deadline time.Duration
}

// DefaultIntervals are upstream's defaults, and this operator's reconcile deadline.
var DefaultIntervals = Intervals{Reconcile: 60 * time.Second, ProgressCheck: 10 * time.Second, Deadline: DefaultReconcileDeadline}

// DefaultReconcileDeadline is long enough for the slowest step a reconcile takes (fetching and
// uploading a jar of the largest allowed size), short enough that a stuck call gives its worker
// back within minutes.
const DefaultReconcileDeadline = 5 * time.Minute

// DefaultReconcileParallelism is the number of workers of each controller
// (kubernetes.operator.reconcile.parallelism): resources of one kind are reconciled that many at
// a time, so one slow JobManager delays only its own resource.
const DefaultReconcileParallelism = 25

// RequeueSoon runs a reconcile again shortly: after a write conflict (the next one reads the
// object anew) or a step that finished and lets the next begin. The short delay replaces
// controller-runtime's deprecated Requeue flag and gives the cache time to see our own write.
func RequeueSoon() ctrl.Result { return ctrl.Result{RequeueAfter: 200 * time.Millisecond} }

// StaleCopyRetry is when a reconcile skipped for reading a copy older than the reconciler's own
// write runs again if the watch event of that write did not bring the object back first.
const StaleCopyRetry = time.Second

// withDeadline bounds every reconcile of r by deadline (none when zero).
func withDeadline(r reconcile.Reconciler, deadline time.Duration) reconcile.Reconciler {
	if deadline <= 0 {
		return r
	}
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		return r.Reconcile(ctx, req)
	})
}
