package flinkdeployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/hastore"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/metrics"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/redact"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// DeploymentFinalizer is upstream's finalizer name (JOSDK's default for the kind).
const DeploymentFinalizer = "flinkdeployments.flink.apache.org/finalizer"

// FlinkDeploymentReconciler runs Flink clusters for FlinkDeployments.
type FlinkDeploymentReconciler struct {
	reconciler.ReconcilerOptions
	Client client.Client
	// APIReader reads from the API server, not the cache: whether an object of a cluster's
	// names already exists, and whose it is, must be known even when the cache only holds
	// labelled objects. The manager's API reader when nil.
	APIReader client.Reader
	// ClusterObjects reads the objects of a cluster's names for the ownership check before
	// they are written: cachescope.Lookup in the operator (caches and a name index, so a new
	// cluster costs no read); APIReader when nil.
	ClusterObjects client.Reader
	Scheme         *runtime.Scheme
	Recorder       record.EventRecorder
	Flink          *clients.Factory
	Defaults       flinkconf.Defaults
	Validator      *validation.Validator
	Intervals      reconciler.Intervals
	// Autoscaling serves the job autoscaler of resources that enable it (nil: its defaults).
	Autoscaling *jobs.Autoscaling
	// Shard is the label selector of the resources this operator instance serves (nil: all;
	// the manager's cache applies it). Snapshot resources the reconciler creates carry the
	// deployment's labels it names, so they land in the same shard.
	Shard labels.Selector
	// ZooKeeper is the policy for ZooKeeper HA quorums, which tenants name (allowed networks,
	// timeout): the operator reads and deletes a cluster's HA metadata there.
	ZooKeeper hastore.ZooKeeperPolicy

	exceptions *jobs.ExceptionReporter
	// options reports the Apache operator options a spec sets that have no effect here.
	options *jobs.OptionWarnings
}

// Finalizers are added and removed by update; status is written by merge patch (reconciler/status.go).
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
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinksessionjobs,verbs=list;watch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete

// SetupWithManager watches FlinkDeployments and the JobManager Deployments they own.
func (r *FlinkDeploymentReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Intervals == (reconciler.Intervals{}) {
		r.Intervals = reconciler.DefaultIntervals
	}
	r.exceptions = jobs.NewExceptionReporter()
	r.options = jobs.NewOptionWarnings()
	r.Recorder = reconciler.WithListener(r.Recorder, r.Listener)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	return r.SetUp(mgr, reconciler.ControllerSpec{Name: "flinkdeployment", Object: &flinkv1beta1.FlinkDeployment{}, Intervals: r.Intervals, Priority: true,
		Build: func(b *builder.Builder) *builder.Builder {
			// The resource with what users change before routine work (reconciler/priority.go), rather
			// than For's handler; the JobManager Deployments as Owns would watch them.
			return b.Watches(&flinkv1beta1.FlinkDeployment{}, reconciler.ByIntent{}).
				Watches(&appsv1.Deployment{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
					&flinkv1beta1.FlinkDeployment{}, handler.OnlyControllerOwner())).
				// The deletion of an HA ConfigMap, which no owner reference ties to its cluster:
				// Flink deleting a stopped job's ends its cleanup, which an upgrade waits for
				// (jobs.FlinkCleanupWait). Only deletions: Flink updates its leader ConfigMaps every
				// few seconds.
				Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(haConfigMapCluster),
					builder.WithPredicates(predicate.Funcs{
						CreateFunc:  func(event.CreateEvent) bool { return false },
						UpdateFunc:  func(event.UpdateEvent) bool { return false },
						GenericFunc: func(event.GenericEvent) bool { return false },
					}))
		}}, r)
}

// haConfigMapCluster maps an HA ConfigMap to the FlinkDeployment its app label names.
func haConfigMapCluster(_ context.Context, obj client.Object) []reconcile.Request {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || !native.IsHAConfigMap(cm) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: cm.Namespace, Name: cm.Labels[native.LabelApp]}}}
}

// Reconcile runs the phases: cleanup on deletion, else observe → validate → reconcile, then
// writes the status (lifecycle state and conditions computed once, at the end).
func (r *FlinkDeploymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dep := &flinkv1beta1.FlinkDeployment{}
	return r.Run(ctx, r.Client, req, dep, reconciler.Preamble{Finalizer: DeploymentFinalizer, LogKey: "flinkdeployment",
		Secrets: func(client.Object) []string {
			// Secrets of this resource are masked in everything this reconcile logs, records or returns.
			conf, _ := dep.Spec.FlinkConfiguration.Flatten()
			return append(redact.Values(conf, r.SecretKeyPatterns, reconciler.DeploymentPods(dep)...), reconciler.JarURIPasswords(dep.Spec.Job)...)
		}},
		func(ctx context.Context, red *redact.Redactor) (ctrl.Result, error) {
			rr := *r
			r.Apply(reconciler.LiveCopy{Recorder: &rr.Recorder, Intervals: &rr.Intervals, Defaults: &rr.Defaults, Flink: &rr.Flink}, red)
			return rr.reconcileDeployment(ctx, dep, red)
		})
}

func (r *FlinkDeploymentReconciler) reconcileDeployment(ctx context.Context, dep *flinkv1beta1.FlinkDeployment, red *redact.Redactor) (ctrl.Result, error) {
	s := NewScope(dep)
	s.redact = red
	defer func() { s.rest.Close() }() // the REST client this reconcile made, if any
	if !dep.DeletionTimestamp.IsZero() {
		return r.cleanup(ctx, s)
	}
	if err := r.AddFinalizer(ctx, r.Client, s, DeploymentFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	r.options.Report(r.Recorder, dep, dep.Spec.FlinkConfiguration, dep.Status.ObservedGeneration)

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
	// JobRecord is the last reconciled spec (deployed, firstDeployment).
	reconciler.JobRecord[flinkv1beta1.FlinkDeploymentSpec]
	// rolledBackTo is the last stable spec when a rollback put it back in place
	// (ROLLED_BACK): what the cluster runs while deployed still names the failed spec
	// (upstream's getDeployedSpec).
	rolledBackTo *flinkv1beta1.FlinkDeploymentSpec
	// redact masks the resource's secrets in status messages.
	redact *redact.Redactor

	// configs are the effective configurations computed in this reconcile, by spec (each spec's
	// is computed once).
	configs map[string]flinkconf.Config
	// rest is the client of the running cluster's JobManager, built once per reconcile.
	rest *flink.Client
	// jobState is the job's state when observe read it to probe the JobManager.
	jobState *jobStateRead
	// restored is the checkpoint Flink says the job restored from, read by observe only while
	// a rollback through HA metadata has not recorded it (lifecycle.RestoreUnrecorded).
	restored string
	// partlyDeployed: observe found the recorded attempt's JobManager with not every object of
	// its cluster applied (an apply failed midway); the attempt is applied again.
	partlyDeployed bool
}

func NewScope(dep *flinkv1beta1.FlinkDeployment) *scope {
	s := &scope{dep: dep, original: dep.DeepCopy(),
		JobRecord: reconciler.JobRecord[flinkv1beta1.FlinkDeploymentSpec]{JobOf: func(s *flinkv1beta1.FlinkDeploymentSpec) **flinkv1beta1.JobSpec { return &s.Job }}}
	s.Read(&dep.Status.CommonStatus)
	if dep.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationRolledBack {
		var stable flinkv1beta1.FlinkDeploymentSpec
		if found, _, err := flinkv1beta1.DecodeReconciledSpec(dep.Status.ReconciliationStatus.LastStableSpec, &stable); err == nil && found {
			s.rolledBackTo = &stable
		}
	}
	return s
}

// running is the spec the cluster runs: the last reconciled one, or after a rollback the
// stable one it went back to.
func (s *scope) running() *flinkv1beta1.FlinkDeploymentSpec {
	if s.rolledBackTo != nil {
		return s.rolledBackTo
	}
	return s.Deployed
}

func (s *scope) status() *flinkv1beta1.FlinkDeploymentStatus { return &s.dep.Status }

// The scope as the job-resource skeleton sees it (reconciler/jobresource.go).
func (s *scope) Object() client.Object              { return s.dep }
func (s *scope) Stored() client.Object              { return s.original }
func (s *scope) Statuses() (current, stored any)    { return &s.dep.Status, &s.original.Status }
func (s *scope) Common() *flinkv1beta1.CommonStatus { return &s.dep.Status.CommonStatus }
func (s *scope) MarkStored()                        { s.original = s.dep.DeepCopy() }
func (s *scope) Redactor() *redact.Redactor         { return s.redact }

// validate runs the shared rules and the custom validators (judge).
func (r *FlinkDeploymentReconciler) validate(ctx context.Context, s *scope) (*flinkv1beta1.FlinkDeploymentSpec, bool) {
	// Update rules compare with the status's last reconciled spec, which s.dep carries.
	errs := r.validator().ValidateDeployment(s.dep, s.dep)
	var old *flinkv1beta1.FlinkDeployment
	if s.Deployed != nil {
		old = s.dep.DeepCopy()
		old.Spec = *s.Deployed
	}
	errs = append(errs, reconciler.CustomValidation(ctx, r.CustomValidator, "FlinkDeployment", s.dep, old)...)
	return reconciler.Judge(ctx, r.Recorder, s, errs, &s.dep.Spec, s.Deployed)
}

// validator is the Validator with the operator configuration in force now (validatorNow).
func (r *FlinkDeploymentReconciler) validator() *validation.Validator {
	return r.ValidatorNow(r.Validator, r.Defaults)
}

// finish records the reconcile's error and writes the status if it changed (the skeleton's).
func (r *FlinkDeploymentReconciler) finish(ctx context.Context, s *scope, reconcileErr error) error {
	return reconciler.Finish(r.Recorder, s, reconcileErr, func() error { return r.persist(ctx, s) })
}

func (r *FlinkDeploymentReconciler) computeStatus(s *scope) {
	st := s.status()
	var jobState flinkv1beta1.JobState
	if s.Deployed != nil && s.Deployed.Job != nil {
		jobState = s.Deployed.Job.State
	}
	st.LifecycleState = lifecycle.State(&st.CommonStatus, st.JobManagerDeploymentStatus, !s.dep.DeletionTimestamp.IsZero(), jobState)
	if r.Lifecycle != nil {
		r.Lifecycle.Observe(s.dep.UID, s.dep.Namespace, metrics.KindDeployment, st.LifecycleState)
	}
	before := meta.FindStatusCondition(st.Conditions, lifecycle.ConditionProgressing).DeepCopy()
	for _, c := range lifecycle.Conditions(st, s.dep.Spec.Job != nil, s.dep.Generation, jobState) {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	step := lifecycle.Step(&st.CommonStatus, before, s.dep.Generation, metav1.Now())
	step.Restored = s.restored
	st.Operations = lifecycle.RecordOperations(st.Operations, step)
	if st.TaskManager == nil {
		st.TaskManager = &flinkv1beta1.TaskManagerInfo{}
	}
	st.TaskManager.LabelSelector = fmt.Sprintf("%s=%s,%s=%s", native.LabelComponent, native.ComponentTaskManager, native.LabelApp, s.dep.Name)
}

// persist computes the status and writes it when it changed (the skeleton's write-ahead log
// entry, stored before the action it describes).
func (r *FlinkDeploymentReconciler) persist(ctx context.Context, s *scope) error {
	return r.Persist(ctx, r.Client, s, func() { r.computeStatus(s) })
}

// recordProgress moves the recorded target (last reconciled spec and the generation it came
// from) to another reconciliation state, for the steps that carry out a target recorded
// earlier: the generation stays the target's, even when the spec changed meanwhile, so a newer
// change is never mistaken for applied.
//
// Reaching DEPLOYED clears the error recorded before, as upstream's updateStatusForDeployedSpec
// does: the target is carried out, so what failed on the way no longer describes the resource,
// and a failure of what was deployed is observed and recorded anew.
func (s *scope) recordProgress(state flinkv1beta1.ReconciliationState) {
	s.status().ReconciliationStatus.State = state
	if state == flinkv1beta1.ReconciliationDeployed {
		s.status().Error = ""
	}
}

// recordDeployed writes spec as the last reconciled spec in the given reconciliation state,
// keeping the trigger nonces recorded before (jobRecord.record). A rescale in place in flight is
// over: the new target replaces it (scaleInPlace records its own after this).
func (s *scope) recordDeployed(spec flinkv1beta1.FlinkDeploymentSpec, state flinkv1beta1.ReconciliationState) error {
	if err := s.Record(&s.dep.Status.CommonStatus, s.dep.Generation, spec, state); err != nil {
		return err
	}
	s.dep.Status.Rescale = nil
	return nil
}
