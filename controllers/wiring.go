package controllers

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/extension/listener"
	"github.com/flink-operator/flink-operator/pkg/extension/validator"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/hastore"
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

	// writes recognises cached copies older than the reconciler's own writes.
	writes *ownWrites
}

// ownWritesMu guards the tracker made on first use by a reconciler that was not set up (called
// directly): a reconciler is copied per reconcile, so it holds no lock of its own.
var ownWritesMu sync.Mutex

// ownWrites is the reconciler's tracker of its own writes, made on first use.
func (o *ReconcilerOptions) ownWrites() *ownWrites {
	ownWritesMu.Lock()
	defer ownWritesMu.Unlock()
	if o.writes == nil {
		o.writes = newOwnWrites()
	}
	return o.writes
}

// controllerSpec is what SetupWithManager hands to the shared wiring: the controller's name, the
// kind it reconciles, its deadline and reconcile interval and how it is built.
type controllerSpec struct {
	name      string
	object    client.Object
	intervals Intervals
	// priority: the controller's watches rank their events (byIntent); PriorityQueue applies.
	priority bool
	// build adds the controller's watches; For is the caller's to set, or not.
	build func(*builder.Builder) *builder.Builder
}

// setUp registers a controller with every reconcile wrapped the same way for all kinds: the
// listener hears the events, each reconcile is bounded by the deadline, then paced by the rate
// limits and the namespace share, queued by priority where the controller ranks its events.
func (o *ReconcilerOptions) setUp(mgr ctrl.Manager, c controllerSpec, r reconcile.Reconciler) error {
	o.ownWrites()
	opts, paced, err := o.RateLimits.pace(mgr, c.name, c.intervals.Reconcile, c.object, withDeadline(r, c.intervals.Deadline))
	if err != nil {
		return err
	}
	if o.PriorityQueue && c.priority {
		opts.NewQueue = newPriorityQueue
	}
	return c.build(ctrl.NewControllerManagedBy(mgr)).Named(c.name).WithOptions(opts).Complete(paced)
}

// preamble is the start every reconcile of a resource kind shares: the object is read; a
// canary, or a copy older than the reconciler's own last write, is not reconciled; the
// resource's secrets are masked in everything body logs, records or returns; a write conflict
// reads the object again shortly.
type preamble struct {
	// finalizer is the kind's finalizer (a canary's is removed); empty for kinds without one.
	finalizer string
	// logKey names the resource in the log lines.
	logKey string
	// secrets are the values of obj to mask.
	secrets func(obj client.Object) []string
}

// run reads req into obj and runs body under the preamble.
func (o *ReconcilerOptions) run(ctx context.Context, c client.Client, req ctrl.Request, obj client.Object, p preamble,
	body func(ctx context.Context, red *redact.Redactor) (ctrl.Result, error)) (ctrl.Result, error) {
	if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if p.finalizer != "" {
		if canary, err := skipCanary(ctx, c, obj, p.finalizer); canary {
			return ctrl.Result{}, err
		}
	}
	if o.ownWrites().stale(obj) {
		// The cache has not seen this reconciler's last write yet; its watch event brings the
		// object back. The requeue is a safety net only.
		return ctrl.Result{RequeueAfter: staleCopyRetry}, nil
	}
	var secrets []string
	if p.secrets != nil {
		secrets = p.secrets(obj)
	}
	red := redact.New(secrets...)
	ctx = log.IntoContext(ctx, red.Logger(log.FromContext(ctx)).WithValues(p.logKey, req.NamespacedName))
	result, err := body(ctx, red)
	if apierrors.IsConflict(err) {
		return requeueSoon(), nil // read again: someone wrote the object meanwhile
	}
	return result, red.Error(err)
}

// liveCopy is the reconciler's settings for one reconcile: the events go through red, and the
// intervals, default Flink configuration and REST timeout are the ones in force now (the
// dynamic configuration's, when there is one).
type liveCopy struct {
	Recorder  *record.EventRecorder
	Intervals *Intervals
	Defaults  *flinkconf.Defaults
	Flink     **clients.Factory
}

// apply sets the copy's settings from the live configuration and masks its events with red.
func (o *ReconcilerOptions) apply(c liveCopy, red *redact.Redactor) {
	*c.Recorder = red.Recorder(*c.Recorder)
	*c.Intervals, *c.Defaults, *c.Flink = liveSettings(o.Live, *c.Intervals, *c.Defaults, *c.Flink)
}

// validatorNow is v with the operator configuration in force now, from which the operator-wide
// policy (pod security level, Ingress annotations) is read: the live one when the operator
// configuration is dynamic, else the fixed defaults.
func (o *ReconcilerOptions) validatorNow(v *validation.Validator, defaults flinkconf.Defaults) *validation.Validator {
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

// Setup is what the operator's reconcilers are built from: the options they share and the
// few each kind has of its own.
type Setup struct {
	ReconcilerOptions
	Client client.Client
	// APIReader reads from the API server, not the cache (the manager's when nil).
	APIReader client.Reader
	// SnapshotClient is the snapshot reconciler's client (a snapshot's job may be in another
	// shard); Client when nil.
	SnapshotClient client.Client
	Recorder       record.EventRecorder
	Flink          *clients.Factory
	Validator      *validation.Validator
	Intervals      Intervals
	Autoscaling    *Autoscaling
	Artifacts      *artifact.Fetcher
	Shard          labels.Selector
	ZooKeeper      hastore.ZooKeeperPolicy
}

// SetupReconcilers builds the four reconcilers from s, all wired the same way (one tracker of
// their own writes, one listener, one set of secret patterns, one deadline and rate limits),
// and adds them to mgr.
func SetupReconcilers(mgr ctrl.Manager, s Setup) error {
	if s.writes == nil {
		s.writes = newOwnWrites() // resource UIDs are unique across kinds: one tracker serves all
	}
	snapshotClient := s.SnapshotClient
	if snapshotClient == nil {
		snapshotClient = s.Client
	}
	reconcilers := []struct {
		kind  string
		setup func(ctrl.Manager) error
	}{
		{"FlinkDeployment", (&FlinkDeploymentReconciler{ReconcilerOptions: s.ReconcilerOptions, Client: s.Client, APIReader: s.APIReader,
			Scheme: mgr.GetScheme(), Recorder: s.Recorder, Flink: s.Flink, Validator: s.Validator, Intervals: s.Intervals,
			Autoscaling: s.Autoscaling, Shard: s.Shard, ZooKeeper: s.ZooKeeper}).SetupWithManager},
		{"FlinkSessionJob", (&FlinkSessionJobReconciler{ReconcilerOptions: s.ReconcilerOptions, Client: s.Client, APIReader: s.APIReader,
			Scheme: mgr.GetScheme(), Recorder: s.Recorder, Flink: s.Flink, Validator: s.Validator, Intervals: s.Intervals,
			Autoscaling: s.Autoscaling, Artifacts: s.Artifacts, Shard: s.Shard}).SetupWithManager},
		{"FlinkStateSnapshot", (&FlinkStateSnapshotReconciler{ReconcilerOptions: s.ReconcilerOptions, Client: snapshotClient,
			Scheme: mgr.GetScheme(), Recorder: s.Recorder, Flink: s.Flink, Intervals: s.Intervals}).SetupWithManager},
		{"FlinkBlueGreenDeployment", (&FlinkBlueGreenDeploymentReconciler{ReconcilerOptions: s.ReconcilerOptions, Client: s.Client,
			Scheme: mgr.GetScheme(), Recorder: s.Recorder, Validator: s.Validator, Intervals: s.Intervals}).SetupWithManager},
	}
	for _, r := range reconcilers {
		if err := r.setup(mgr); err != nil {
			return fmt.Errorf("set up %s controller: %w", r.kind, err)
		}
	}
	return nil
}

// setUpBlueGreen wires the blue/green controller as the others: its events go to the
// listener, each reconcile is bounded by the deadline, paced by the rate limits and the
// namespace share, and the secrets of the template's configuration are masked in what it logs,
// records and returns.
func (r *FlinkBlueGreenDeploymentReconciler) setUpBlueGreen(mgr ctrl.Manager, build func(*builder.Builder) *builder.Builder) error {
	if r.Intervals == (Intervals{}) {
		r.Intervals = DefaultIntervals
	}
	if r.RateLimits.PerNamespace == 0 {
		r.RateLimits.PerNamespace = r.PerNamespace
	}
	r.Recorder = withListener(r.Recorder, r.Listener)
	return r.setUp(mgr, controllerSpec{name: "flinkbluegreendeployment", object: &flinkv1beta1.FlinkBlueGreenDeployment{},
		intervals: r.Intervals, build: build}, r.redacting())
}

// redacting is the blue/green reconciler under the shared preamble: the template's secrets are
// masked in its events, logs and errors.
func (r *FlinkBlueGreenDeploymentReconciler) redacting() reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		bg := &flinkv1beta1.FlinkBlueGreenDeployment{}
		return r.run(ctx, r.Client, req, bg, preamble{logKey: "flinkbluegreendeployment",
			secrets: func(client.Object) []string {
				spec := &bg.Spec.Template.Spec
				conf, _ := spec.FlinkConfiguration.Flatten()
				dep := &flinkv1beta1.FlinkDeployment{Spec: *spec}
				return append(redact.Values(conf, r.SecretKeyPatterns, deploymentPods(dep)...), jarURIPasswords(spec.Job)...)
			}},
			func(ctx context.Context, red *redact.Redactor) (ctrl.Result, error) {
				rr := *r
				rr.Recorder = red.Recorder(r.Recorder)
				return rr.Reconcile(ctx, req)
			})
	})
}
