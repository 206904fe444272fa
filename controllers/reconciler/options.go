package reconciler

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flink-operator/flink-operator/pkg/extension/listener"
	"github.com/flink-operator/flink-operator/pkg/extension/validator"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/metrics"
	"github.com/flink-operator/flink-operator/pkg/operatorconfig"
	"github.com/flink-operator/flink-operator/pkg/redact"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// ReconcilerOptions are what every reconciler of the operator shares: how its reconciles are
// paced and queued, who hears of what it writes, which secrets it masks and which operator
// configuration is in force. All four reconcilers embed it, and SetupReconcilers fills it in
// once, so a reconciler cannot be wired without one of them.
type ReconcilerOptions struct {
	// RateLimits pace the reconciles (zero: controller-runtime's back-off, no budget).
	RateLimits RateLimits
	// PriorityQueue queues reconciles by priority (priority.go): a user's change before new
	// resources and routine work, the initial list after a start last. Only the controllers
	// whose watches rank events (FlinkDeployment) use it.
	PriorityQueue bool
	// Lifecycle, when set, records lifecycle transition durations.
	Lifecycle *metrics.LifecycleTracker
	// Live, when set, is the dynamic operator configuration: its intervals, REST timeout and
	// default Flink configuration replace the reconciler's own from the next reconcile on.
	Live *operatorconfig.Store
	// SecretKeyPatterns mark configuration keys whose values never reach logs, events or
	// status messages; redact.DefaultKeyPatterns when nil.
	SecretKeyPatterns []string
	// CustomValidator, when set, judges each spec beyond the Validator's rules (extension.go).
	CustomValidator validator.Validator
	// Listener, when set, hears of every status written and event recorded (extension.go).
	Listener listener.Listener

	// Writes recognises cached copies older than the reconciler's own writes.
	Writes *ownWrites
}

// ownWritesMu guards the tracker made on first use by a reconciler that was not set up (called
// directly): a reconciler is copied per reconcile, so it holds no lock of its own.
var ownWritesMu sync.Mutex

// ownWrites is the reconciler's tracker of its own writes, made on first use.
func (o *ReconcilerOptions) ownWrites() *ownWrites {
	ownWritesMu.Lock()
	defer ownWritesMu.Unlock()
	if o.Writes == nil {
		o.Writes = NewOwnWrites()
	}
	return o.Writes
}

// ControllerSpec is what SetupWithManager hands to the shared wiring: the controller's name, the
// kind it reconciles, its deadline and reconcile interval and how it is built.
type ControllerSpec struct {
	Name      string
	Object    client.Object
	Intervals Intervals
	// Priority: the controller's watches rank their events (byIntent); PriorityQueue applies.
	Priority bool
	// Build adds the controller's watches; For is the caller's to set, or not.
	Build func(*builder.Builder) *builder.Builder
}

// SetUp registers a controller with every reconcile wrapped the same way for all kinds: the
// listener hears the events, each reconcile is bounded by the deadline, then paced by the rate
// limits and the namespace share, queued by priority where the controller ranks its events.
func (o *ReconcilerOptions) SetUp(mgr ctrl.Manager, c ControllerSpec, r reconcile.Reconciler) error {
	o.ownWrites()
	opts, paced, err := o.RateLimits.pace(mgr, c.Name, c.Intervals.Reconcile, c.Object, withDeadline(r, c.Intervals.Deadline))
	if err != nil {
		return err
	}
	if o.PriorityQueue && c.Priority {
		opts.NewQueue = newPriorityQueue
	}
	return c.Build(ctrl.NewControllerManagedBy(mgr)).Named(c.Name).WithOptions(opts).Complete(paced)
}

// Preamble is the start every reconcile of a resource kind shares: the object is read; a
// canary, or a copy older than the reconciler's own last write, is not reconciled; the
// resource's secrets are masked in everything body logs, records or returns; a write conflict
// reads the object again shortly.
type Preamble struct {
	// Finalizer is the kind's finalizer (a canary's is removed); empty for kinds without one.
	Finalizer string
	// LogKey names the resource in the log lines.
	LogKey string
	// Secrets are the values of obj to mask.
	Secrets func(obj client.Object) []string
}

// Run reads req into obj and runs body under the preamble.
func (o *ReconcilerOptions) Run(ctx context.Context, c client.Client, req ctrl.Request, obj client.Object, p Preamble,
	body func(ctx context.Context, red *redact.Redactor) (ctrl.Result, error)) (ctrl.Result, error) {
	if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if p.Finalizer != "" {
		if canary, err := skipCanary(ctx, c, obj, p.Finalizer); canary {
			return ctrl.Result{}, err
		}
	}
	if o.ownWrites().stale(obj) {
		// The cache has not seen this reconciler's last write yet; its watch event brings the
		// Object back. The requeue is a safety net only.
		return ctrl.Result{RequeueAfter: StaleCopyRetry}, nil
	}
	var secrets []string
	if p.Secrets != nil {
		secrets = p.Secrets(obj)
	}
	red := redact.New(secrets...)
	ctx = log.IntoContext(ctx, red.Logger(log.FromContext(ctx)).WithValues(p.LogKey, req.NamespacedName))
	result, err := body(ctx, red)
	if apierrors.IsConflict(err) {
		return RequeueSoon(), nil // read again: someone wrote the object meanwhile
	}
	return result, red.Error(err)
}

// LiveCopy is the reconciler's settings for one reconcile: the events go through red, and the
// Intervals, default Flink configuration and REST timeout are the ones in force now (the
// dynamic configuration's, when there is one).
type LiveCopy struct {
	Recorder  *record.EventRecorder
	Intervals *Intervals
	Defaults  *flinkconf.Defaults
	Flink     **clients.Factory
}

// Apply sets the copy's settings from the live configuration and masks its events with red.
func (o *ReconcilerOptions) Apply(c LiveCopy, red *redact.Redactor) {
	*c.Recorder = red.Recorder(*c.Recorder)
	*c.Intervals, *c.Defaults, *c.Flink = LiveSettings(o.Live, *c.Intervals, *c.Defaults, *c.Flink)
}

// ValidatorNow is v with the operator configuration in force now, from which the operator-wide
// policy (pod security level, Ingress annotations) is read: the live one when the operator
// configuration is dynamic, else the fixed defaults.
func (o *ReconcilerOptions) ValidatorNow(v *validation.Validator, defaults flinkconf.Defaults) *validation.Validator {
	if v.OperatorConfig != nil {
		return v
	}
	out := *v
	if o.Live != nil {
		live := o.Live
		out.OperatorConfig = func() map[string]string { return live.Get().Defaults.Operator }
	} else if out.Defaults.Operator == nil {
		out.Defaults.Operator = defaults.Operator
	}
	return &out
}
