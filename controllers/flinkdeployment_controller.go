package controllers

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/extension/listener"
	"github.com/flink-operator/flink-operator/pkg/extension/validator"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/hastore"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/metrics"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/operatorconfig"
	"github.com/flink-operator/flink-operator/pkg/redact"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// DeploymentFinalizer is upstream's finalizer name (JOSDK's default for the kind).
const DeploymentFinalizer = "flinkdeployments.flink.apache.org/finalizer"

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

// requeueSoon runs a reconcile again shortly: after a write conflict (the next one reads the
// object anew) or a step that finished and lets the next begin. The short delay replaces
// controller-runtime's deprecated Requeue flag and gives the cache time to see our own write.
func requeueSoon() ctrl.Result { return ctrl.Result{RequeueAfter: 200 * time.Millisecond} }

// staleCopyRetry is when a reconcile skipped for reading a copy older than the reconciler's own
// write runs again if the watch event of that write did not bring the object back first.
const staleCopyRetry = time.Second

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

// FlinkDeploymentReconciler runs Flink clusters for FlinkDeployments.
type FlinkDeploymentReconciler struct {
	Client client.Client
	// APIReader reads from the API server, not the cache: whether an object of a cluster's
	// names already exists, and whose it is, must be known even when the cache only holds
	// labelled objects. The manager's API reader when nil.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	Flink     *clients.Factory
	Defaults  flinkconf.Defaults
	Validator *validation.Validator
	Intervals Intervals
	// RateLimits pace the reconciles (zero: controller-runtime's back-off, no budget).
	RateLimits RateLimits
	// Lifecycle, when set, records lifecycle transition durations.
	Lifecycle *metrics.LifecycleTracker
	// Live, when set, is the dynamic operator configuration: its intervals, REST timeout and
	// default Flink configuration replace the fields above from the next reconcile on.
	Live *operatorconfig.Store
	// SecretKeyPatterns mark configuration keys whose values never reach logs, events or
	// status messages; redact.DefaultKeyPatterns when nil.
	SecretKeyPatterns []string
	// Autoscaling serves the job autoscaler of resources that enable it (nil: its defaults).
	Autoscaling *Autoscaling
	// Shard is the label selector of the resources this operator instance serves (nil: all;
	// the manager's cache applies it). Snapshot resources the reconciler creates carry the
	// deployment's labels it names, so they land in the same shard.
	Shard labels.Selector
	// ZooKeeper is the policy for ZooKeeper HA quorums, which tenants name (allowed networks,
	// timeout): the operator reads and deletes a cluster's HA metadata there.
	ZooKeeper hastore.ZooKeeperPolicy

	exceptions *exceptionReporter
	// writes recognises cached copies older than this reconciler's own writes.
	writes *ownWrites
	// options reports the Apache operator options a spec sets that have no effect here.
	options *optionWarnings
	// PriorityQueue queues reconciles by priority (priority.go): a user's change before new
	// resources and routine work, the initial list after a start last.
	PriorityQueue bool
	// CustomValidator, when set, judges each spec beyond Validator's rules (extension.go).
	CustomValidator validator.Validator
	// Listener, when set, hears of every status written and event recorded (extension.go).
	Listener listener.Listener
}

// Finalizers are added and removed by update; status is written by merge patch (status.go).
// The cluster's objects are written by server-side apply (patch; create when the apply creates
// the object) and carry ownerReferences with blockOwnerDeletion to the FlinkDeployment and to
// the JobManager Deployment, which needs update on their finalizers subresource where the
// OwnerReferencesPermissionEnforcement admission plugin runs (OpenShift, the e2e cluster).
// ConfigMaps are also updated (DeleteJobGraphs, with their resourceVersion). Reads go through
// the manager's cache (list and watch); get where the code reads the API server directly:
// Services (clients.Factory.Endpoints), the operator ConfigMap (--config-map), and the objects of
// a cluster's names, which are checked for ownership before any apply or delete (APIReader)
// and asked of the API server when the label-scoped cache does not hold them (pkg/cachescope).
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinkdeployments,verbs=list;watch;update
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinkdeployments/status,verbs=patch
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinkdeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinksessionjobs,verbs=list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete

// SetupWithManager watches FlinkDeployments and the JobManager Deployments they own.
func (r *FlinkDeploymentReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Intervals == (Intervals{}) {
		r.Intervals = DefaultIntervals
	}
	r.exceptions = newExceptionReporter()
	r.writes = newOwnWrites()
	r.options = newOptionWarnings()
	r.Recorder = withListener(r.Recorder, r.Listener)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	opts, paced, err := r.RateLimits.pace(mgr, "flinkdeployment", r.Intervals.Reconcile, &flinkv1beta1.FlinkDeployment{},
		withDeadline(r, r.Intervals.Deadline))
	if err != nil {
		return err
	}
	if r.PriorityQueue {
		opts.NewQueue = newPriorityQueue
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("flinkdeployment").WithOptions(opts).
		// The resource with what users change before routine work (priority.go), rather than
		// For's handler; the JobManager Deployments as Owns would watch them.
		Watches(&flinkv1beta1.FlinkDeployment{}, byIntent{}).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&flinkv1beta1.FlinkDeployment{}, handler.OnlyControllerOwner())).
		Complete(paced)
}

// Reconcile runs the phases: cleanup on deletion, else observe → validate → reconcile, then
// writes the status (lifecycle state and conditions computed once, at the end).
func (r *FlinkDeploymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dep := &flinkv1beta1.FlinkDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, dep); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if canary, err := skipCanary(ctx, r.Client, dep, DeploymentFinalizer); canary {
		return ctrl.Result{}, err
	}
	if r.writes.stale(dep) {
		// The cache has not seen this reconciler's last write yet; its watch event brings the
		// object back. The requeue is a safety net only.
		return ctrl.Result{RequeueAfter: staleCopyRetry}, nil
	}
	// Secrets of this resource are masked in everything this reconcile logs, records or returns.
	conf, _ := dep.Spec.FlinkConfiguration.Flatten()
	red := redact.New(append(redact.Values(conf, r.SecretKeyPatterns, deploymentPods(dep)...), jarURIPasswords(dep.Spec.Job)...)...)
	rr := *r
	rr.Recorder = red.Recorder(r.Recorder)
	rr.Intervals, rr.Defaults, rr.Flink = liveSettings(r.Live, r.Intervals, r.Defaults, r.Flink)
	ctx = log.IntoContext(ctx, red.Logger(log.FromContext(ctx)).WithValues("flinkdeployment", req.NamespacedName))
	result, err := rr.reconcileDeployment(ctx, dep, red)
	if apierrors.IsConflict(err) {
		return requeueSoon(), nil // read again: someone wrote the object meanwhile
	}
	return result, red.Error(err)
}

// deploymentPods are the pod templates of a FlinkDeployment.
func deploymentPods(dep *flinkv1beta1.FlinkDeployment) []*corev1.Pod {
	pods := []*corev1.Pod{dep.Spec.PodTemplate}
	if dep.Spec.JobManager != nil {
		pods = append(pods, dep.Spec.JobManager.PodTemplate)
	}
	if dep.Spec.TaskManager != nil {
		pods = append(pods, dep.Spec.TaskManager.PodTemplate)
	}
	return pods
}

func (r *FlinkDeploymentReconciler) reconcileDeployment(ctx context.Context, dep *flinkv1beta1.FlinkDeployment, red *redact.Redactor) (ctrl.Result, error) {
	s := newScope(dep)
	s.redact = red
	defer func() { s.rest.Close() }() // the REST client this reconcile made, if any
	if !dep.DeletionTimestamp.IsZero() {
		return r.cleanup(ctx, s)
	}
	if !controllerutil.ContainsFinalizer(dep, DeploymentFinalizer) {
		controllerutil.AddFinalizer(dep, DeploymentFinalizer)
		before := dep.ResourceVersion
		if err := r.Client.Update(ctx, dep); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
		r.writes.wrote(dep.UID, before, dep.ResourceVersion)
		s.original = dep.DeepCopy() // the status is patched against the updated object
	}
	r.options.report(r.Recorder, dep, dep.Spec.FlinkConfiguration, dep.Status.ObservedGeneration)

	if err := r.observe(ctx, s); err != nil {
		return ctrl.Result{}, r.finish(ctx, s, err)
	}
	target, ok := r.validate(ctx, s)
	if !ok {
		return ctrl.Result{RequeueAfter: r.Intervals.Reconcile}, r.finish(ctx, s, nil)
	}
	result, err := r.reconcile(ctx, s, target)
	return result, r.finish(ctx, s, err)
}

// scope is one reconcile's view of a FlinkDeployment: the object and the status being built.
type scope struct {
	dep      *flinkv1beta1.FlinkDeployment
	original *flinkv1beta1.FlinkDeployment
	// deployed is the last reconciled spec (nil before the first deployment): the target the
	// spec is compared with.
	deployed *flinkv1beta1.FlinkDeploymentSpec
	// rolledBackTo is the last stable spec when a rollback put it back in place
	// (ROLLED_BACK): what the cluster runs while deployed still names the failed spec
	// (upstream's getDeployedSpec).
	rolledBackTo *flinkv1beta1.FlinkDeploymentSpec
	// firstDeployment: deployed is the very first spec recorded (nothing ran before it).
	firstDeployment bool
	// redact masks the resource's secrets in status messages.
	redact *redact.Redactor

	// configs are the effective configurations computed in this reconcile, by spec (each spec's
	// is computed once).
	configs map[string]flinkconf.Config
	// rest is the client of the running cluster's JobManager, built once per reconcile.
	rest *flink.Client
	// jobState is the job's state when observe read it to probe the JobManager.
	jobState *jobStateRead
	// partlyDeployed: observe found the recorded attempt's JobManager with not every object of
	// its cluster applied (an apply failed midway); the attempt is applied again.
	partlyDeployed bool
}

func newScope(dep *flinkv1beta1.FlinkDeployment) *scope {
	s := &scope{dep: dep, original: dep.DeepCopy()}
	var spec flinkv1beta1.FlinkDeploymentSpec
	if found, first, err := flinkv1beta1.DecodeReconciledSpec(dep.Status.ReconciliationStatus.LastReconciledSpec, &spec); err == nil && found {
		s.deployed, s.firstDeployment = &spec, first
		adoptObservedGeneration(&dep.Status.CommonStatus)
	}
	if dep.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationRolledBack {
		var stable flinkv1beta1.FlinkDeploymentSpec
		if found, _, err := flinkv1beta1.DecodeReconciledSpec(dep.Status.ReconciliationStatus.LastStableSpec, &stable); err == nil && found {
			s.rolledBackTo = &stable
		}
	}
	return s
}

// adoptObservedGeneration fills in status.observedGeneration from the generation an upstream
// operator recorded in lastReconciledSpec, when the status has none (upstream 1.7 records it
// only there). Without it an adopted, unchanged resource would never be Ready: Ready needs the
// observed generation, and only a spec change would write it.
func adoptObservedGeneration(st *flinkv1beta1.CommonStatus) {
	if st.ObservedGeneration == 0 {
		st.ObservedGeneration = flinkv1beta1.ReconciledGeneration(st.ReconciliationStatus.LastReconciledSpec)
	}
}

// running is the spec the cluster runs: the last reconciled one, or after a rollback the
// stable one it went back to.
func (s *scope) running() *flinkv1beta1.FlinkDeploymentSpec {
	if s.rolledBackTo != nil {
		return s.rolledBackTo
	}
	return s.deployed
}

func (s *scope) status() *flinkv1beta1.FlinkDeploymentStatus { return &s.dep.Status }

// validate runs the shared rules. On violations the error is recorded and reported; the
// reconcile goes on with the last deployed spec if there is one (so the cluster keeps being
// observed), else stops.
func (r *FlinkDeploymentReconciler) validate(ctx context.Context, s *scope) (*flinkv1beta1.FlinkDeploymentSpec, bool) {
	// Update rules compare with the status's last reconciled spec, which s.dep carries.
	errs := r.validator().ValidateDeployment(s.dep, s.dep)
	var old *flinkv1beta1.FlinkDeployment
	if s.deployed != nil {
		old = s.dep.DeepCopy()
		old.Spec = *s.deployed
	}
	errs = append(errs, customValidation(ctx, r.CustomValidator, "FlinkDeployment", s.dep, old)...)
	if len(errs) == 0 {
		if s.status().Error != "" && isValidationError(s.status().Error) {
			s.status().Error = ""
		}
		return &s.dep.Spec, true
	}
	msg := errs.ToAggregate().Error()
	s.status().Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionValidation, flinkv1beta1.ErrorReasonInvalidSpec, msg)
	r.Recorder.Event(s.dep, corev1.EventTypeWarning, ReasonValidationError, msg)
	log.FromContext(ctx).Info("invalid spec", "errors", msg)
	if s.deployed == nil {
		return nil, false
	}
	return s.deployed, true
}

// validator is the Validator with the operator configuration in force now, from which the
// operator-wide policy (pod security level, Ingress annotations) is read: the live one when the
// operator configuration is dynamic, else the fixed defaults.
func (r *FlinkDeploymentReconciler) validator() *validation.Validator {
	if r.Validator.OperatorConfig != nil {
		return r.Validator
	}
	v := *r.Validator
	if r.Live != nil {
		live := r.Live
		v.OperatorConfig = func() map[string]string { return live.Get().Defaults.Operator }
	} else if v.Defaults.Operator == nil {
		v.Defaults.Operator = r.Defaults.Operator
	}
	return &v
}

// finish computes the lifecycle state and conditions and writes the status if it changed.
func (r *FlinkDeploymentReconciler) finish(ctx context.Context, s *scope, reconcileErr error) error {
	st := s.status()
	if apierrors.IsConflict(reconcileErr) {
		return reconcileErr
	}
	if reconcileErr != nil {
		st.Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionReconciliation, flinkv1beta1.ErrorReasonReconcileFailed, reconcileErr.Error())
		reason := ReasonError
		if _, refused := clients.IsRESTServiceRefused(reconcileErr); refused {
			reason = clients.ReasonRESTServiceRefused
		}
		r.Recorder.Event(s.dep, corev1.EventTypeWarning, reason, reconcileErr.Error())
	}
	r.computeStatus(s)
	if err := r.persist(ctx, s); err != nil {
		if reconcileErr != nil {
			return fmt.Errorf("%w (and writing status failed: %v)", reconcileErr, err)
		}
		return err
	}
	return reconcileErr
}

func (r *FlinkDeploymentReconciler) computeStatus(s *scope) {
	st := s.status()
	var jobState flinkv1beta1.JobState
	if s.deployed != nil && s.deployed.Job != nil {
		jobState = s.deployed.Job.State
	}
	st.LifecycleState = lifecycle.State(&st.CommonStatus, st.JobManagerDeploymentStatus, !s.dep.DeletionTimestamp.IsZero(), jobState)
	if r.Lifecycle != nil {
		r.Lifecycle.Observe(s.dep.UID, s.dep.Namespace, metrics.KindDeployment, st.LifecycleState)
	}
	for _, c := range lifecycle.Conditions(st, s.dep.Spec.Job != nil, s.dep.Generation) {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	if st.TaskManager == nil {
		st.TaskManager = &flinkv1beta1.TaskManagerInfo{}
	}
	st.TaskManager.LabelSelector = fmt.Sprintf("%s=%s,%s=%s", native.LabelComponent, native.ComponentTaskManager, native.LabelApp, s.dep.Name)
}

// persist writes the status: the write-ahead log entry must be stored before the action it
// describes. A merge patch of the status subresource: the operator is its only writer.
func (r *FlinkDeploymentReconciler) persist(ctx context.Context, s *scope) error {
	r.computeStatus(s)
	s.status().Error = s.redact.String(s.status().Error)
	if equalStatus(s.original.Status, s.dep.Status) {
		return nil
	}
	if err := patchStatus(ctx, r.Client, s.dep, s.original); err != nil {
		return err
	}
	statusWritten(ctx, r.Listener, s.dep, &s.original.Status, &s.dep.Status, r.SecretKeyPatterns)
	r.writes.wrote(s.dep.UID, s.original.ResourceVersion, s.dep.ResourceVersion)
	s.original = s.dep.DeepCopy()
	return nil
}

// recordProgress moves the recorded target (last reconciled spec and the generation it came
// from) to another reconciliation state, for the steps that carry out a target recorded
// earlier: the generation stays the target's, even when the spec changed meanwhile, so a newer
// change is never mistaken for applied.
func (s *scope) recordProgress(state flinkv1beta1.ReconciliationState) {
	s.status().ReconciliationStatus.State = state
}

// recordDeployed writes spec as the last reconciled spec in the given reconciliation state.
// The trigger nonces of the spec recorded before are kept: a savepoint or checkpoint asked for
// together with an upgrade is then still asked for once the upgraded job runs (upstream keeps
// them for the same reason in updateStatusForSpecReconciliation).
func (s *scope) recordDeployed(spec flinkv1beta1.FlinkDeploymentSpec, state flinkv1beta1.ReconciliationState) error {
	if s.deployed != nil {
		spec.Job = withRecordedTriggerNonces(s.deployed.Job, spec.Job)
	}
	return s.writeReconciled(spec, state, s.deployed == nil)
}

// writeReconciled writes spec, as it is, as the last reconciled spec in the given state; first
// says it is still the first spec deployed (upstream's resource_metadata.firstDeployment).
func (s *scope) writeReconciled(spec flinkv1beta1.FlinkDeploymentSpec, state flinkv1beta1.ReconciliationState, first bool) error {
	raw, err := flinkv1beta1.EncodeReconciledSpec(spec, first)
	if err != nil {
		return err
	}
	s.firstDeployment = first
	rs := &s.status().ReconciliationStatus
	rs.LastReconciledSpec, rs.State = raw, state
	rs.ReconciliationTimestamp = time.Now().UnixMilli()
	s.status().ObservedGeneration = s.dep.Generation
	deployed := spec
	s.deployed = &deployed
	return nil
}
