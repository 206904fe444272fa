package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

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
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/extension/listener"
	"github.com/flink-operator/flink-operator/pkg/extension/validator"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/jarstage"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/metrics"
	"github.com/flink-operator/flink-operator/pkg/operatorconfig"
	"github.com/flink-operator/flink-operator/pkg/redact"
	"github.com/flink-operator/flink-operator/pkg/shard"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// SessionJobFinalizer is upstream's finalizer name for session jobs.
const SessionJobFinalizer = "flinksessionjobs.flink.apache.org/finalizer"

// FlinkSessionJobReconciler runs jobs on session clusters (FlinkDeployments without a job).
type FlinkSessionJobReconciler struct {
	Client    client.Client
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	Flink     *clients.Factory
	Artifacts *artifact.Fetcher
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
	// SecretKeyPatterns mark configuration keys whose values are masked (see FlinkDeploymentReconciler).
	SecretKeyPatterns []string
	// Shard is the label selector of the resources this operator instance serves (see
	// FlinkDeploymentReconciler).
	Shard labels.Selector
	// APIReader reads from the API server: a session cluster the cache does not hold (another
	// shard's) is looked up there. The manager's API reader when nil.
	APIReader client.Reader
	// Autoscaling serves the job autoscaler of session jobs that enable it (nil: its defaults).
	Autoscaling *Autoscaling
	// JarStage fetches and uploads the jars of submissions outside the reconcile workers
	// (nil: one with jarstage's defaults, stopped with the manager).
	JarStage *jarstage.Stage

	// options reports the Apache operator options a spec sets that have no effect here.
	options *optionWarnings
	// CustomValidator, when set, judges each spec beyond Validator's rules (extension.go).
	CustomValidator validator.Validator
	// Listener, when set, hears of every status written and event recorded (extension.go).
	Listener listener.Listener
}

// Reads go through the manager's cache (list, watch). Finalizers are added and removed by update; status is written by merge patch (status.go).
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinksessionjobs,verbs=list;watch;update
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinksessionjobs/status,verbs=patch

// SetupWithManager watches session jobs, and their session FlinkDeployments so a job is
// submitted as soon as its session becomes ready.
func (r *FlinkSessionJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Intervals == (Intervals{}) {
		r.Intervals = DefaultIntervals
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.options = newOptionWarnings()
	r.Recorder = withListener(r.Recorder, r.Listener)
	// The stage's transfers end, and the jars nobody picked up are deleted, when the manager stops.
	if err := mgr.Add(r.jarStage()); err != nil {
		return fmt.Errorf("jar stage: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &flinkv1beta1.FlinkSessionJob{}, sessionJobDeploymentField,
		func(o client.Object) []string { return []string{o.(*flinkv1beta1.FlinkSessionJob).Spec.DeploymentName} }); err != nil {
		return fmt.Errorf("index session jobs by deployment: %w", err)
	}
	opts, paced, err := r.RateLimits.pace(mgr, "flinksessionjob", r.Intervals.Reconcile, &flinkv1beta1.FlinkSessionJob{},
		withDeadline(r, r.Intervals.Deadline))
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&flinkv1beta1.FlinkSessionJob{}).
		Watches(&flinkv1beta1.FlinkDeployment{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfSession)).
		Named("flinksessionjob").WithOptions(opts).
		Complete(paced)
}

// jarStagePoll is how soon a reconcile waiting for its jar to be staged asks again.
const jarStagePoll = time.Second

// jarStageMu guards the first use of a reconciler's stage (a reconciler is copied per
// reconcile, so it holds no lock of its own).
var jarStageMu sync.Mutex

// jarStage returns the reconciler's stage, made on first use.
func (r *FlinkSessionJobReconciler) jarStage() *jarstage.Stage {
	jarStageMu.Lock()
	defer jarStageMu.Unlock()
	if r.JarStage == nil {
		r.JarStage = jarstage.New(jarstage.Options{Log: ctrl.Log.WithName("jarstage")})
	}
	return r.JarStage
}

// sessionJobDeploymentField indexes session jobs by spec.deploymentName.
const sessionJobDeploymentField = "spec.deploymentName"

func (r *FlinkSessionJobReconciler) jobsOfSession(ctx context.Context, o client.Object) []reconcile.Request {
	var jobs flinkv1beta1.FlinkSessionJobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(o.GetNamespace()), client.MatchingFields{sessionJobDeploymentField: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(jobs.Items))
	for _, j := range jobs.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&j)})
	}
	return out
}

// jobScope is one reconcile's view of a session job.
type jobScope struct {
	job      *flinkv1beta1.FlinkSessionJob
	original *flinkv1beta1.FlinkSessionJob
	// deployed is the last reconciled spec (nil before the first deployment).
	deployed *flinkv1beta1.FlinkSessionJobSpec
	// session is the session cluster (nil when it does not exist).
	session *flinkv1beta1.FlinkDeployment
	// flink talks to the session cluster (nil unless its JobManager is ready).
	flink *flink.Client
	// unreachable says why there is no client although the session's JobManager is ready.
	unreachable error
	conf        flinkconf.Config
	redact      *redact.Redactor
}

func (s *jobScope) status() *flinkv1beta1.FlinkSessionJobStatus { return &s.job.Status }

// Reconcile runs the phases: cleanup on deletion, else observe → validate → reconcile, then
// writes the status once.
func (r *FlinkSessionJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &flinkv1beta1.FlinkSessionJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if canary, err := skipCanary(ctx, r.Client, job, SessionJobFinalizer); canary {
		return ctrl.Result{}, err
	}
	conf, _ := job.Spec.FlinkConfiguration.Flatten()
	red := redact.New(append(redact.Values(conf, r.SecretKeyPatterns), jarURIPasswords(job.Spec.Job)...)...)
	r.jarStage() // made before the copy below, which shares it
	rr := *r
	rr.Recorder = red.Recorder(r.Recorder)
	rr.Intervals, rr.Defaults, rr.Flink = liveSettings(r.Live, r.Intervals, r.Defaults, r.Flink)
	ctx = log.IntoContext(ctx, red.Logger(log.FromContext(ctx)).WithValues("flinksessionjob", req.NamespacedName))
	result, err := rr.reconcileSessionJob(ctx, job, red)
	if apierrors.IsConflict(err) {
		return requeueSoon(), nil // read again: someone wrote the object meanwhile
	}
	return result, red.Error(err)
}

// newJobScope starts a reconcile of job: what was deployed last, read from its status.
func newJobScope(job *flinkv1beta1.FlinkSessionJob, red *redact.Redactor) *jobScope {
	s := &jobScope{job: job, original: job.DeepCopy(), redact: red}
	var spec flinkv1beta1.FlinkSessionJobSpec
	if found, _, err := flinkv1beta1.DecodeReconciledSpec(job.Status.ReconciliationStatus.LastReconciledSpec, &spec); err == nil && found {
		s.deployed = &spec
		adoptObservedGeneration(&job.Status.CommonStatus)
	}
	return s
}

func (r *FlinkSessionJobReconciler) reconcileSessionJob(ctx context.Context, job *flinkv1beta1.FlinkSessionJob, red *redact.Redactor) (ctrl.Result, error) {
	s := newJobScope(job, red)
	defer func() { s.flink.Close() }() // the client observe makes, if any
	if err := r.connect(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if !job.DeletionTimestamp.IsZero() {
		return r.cleanupJob(ctx, s)
	}
	if !controllerutil.ContainsFinalizer(job, SessionJobFinalizer) {
		controllerutil.AddFinalizer(job, SessionJobFinalizer)
		if err := r.Client.Update(ctx, job); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
		s.original = job.DeepCopy()
	}
	r.options.report(r.Recorder, job, job.Spec.FlinkConfiguration, job.Status.ObservedGeneration)
	r.observeJob(ctx, s)
	target, ok := r.validateJob(ctx, s)
	if !ok {
		return ctrl.Result{RequeueAfter: r.Intervals.Reconcile}, r.finishJob(ctx, s, nil)
	}
	result, err := r.reconcileJob(ctx, s, target)
	return result, r.finishJob(ctx, s, err)
}

// connect finds the session cluster and, when its JobManager is ready, a REST client for it.
// Once a job is deployed its session is the one it runs on (deploymentName cannot change, and a
// changed one is refused by validation): the job is never looked for on another session.
func (r *FlinkSessionJobReconciler) connect(ctx context.Context, s *jobScope) error {
	name := s.job.Spec.DeploymentName
	if s.deployed != nil && s.deployed.DeploymentName != "" {
		name = s.deployed.DeploymentName
	}
	session := &flinkv1beta1.FlinkDeployment{}
	key := client.ObjectKey{Namespace: s.job.Namespace, Name: name}
	err := r.Client.Get(ctx, key, session)
	if apierrors.IsNotFound(err) && r.Shard != nil && r.APIReader != nil {
		// With sharding the cache holds this instance's FlinkDeployments only. A job whose
		// session is in another shard still runs there: taking the session for gone would
		// report the job lost and, on deletion, drop its finalizer with the job still running.
		// One read per reconcile, only for such jobs (and jobs whose session is really gone);
		// the job is not woken by its session's changes, only by its own reconcile interval.
		err = shard.GetByName(ctx, r.APIReader, key, session, &flinkv1beta1.FlinkDeploymentList{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("session %s: %w", name, err)
	}
	s.session = session
	ready := session.Status.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady
	// The session's own reconciler reports its configuration errors; here they only mean its
	// REST endpoint cannot be addressed, which a ready session's jobs must not be taken as gone for.
	conf, err := flinkconf.EffectiveConfig(session, r.Defaults, flinkconf.BuildOptions{})
	if err != nil {
		s.unreachable = fmt.Errorf("configuration of session %s: %w", name, err)
		return nil
	}
	user, err := flinkconf.UserConfig(session, r.Defaults)
	if err != nil {
		s.unreachable = fmt.Errorf("configuration of session %s: %w", name, err)
		return nil
	}
	conf = flinkconf.WithOptions(conf, user)
	s.conf = conf
	if !ready {
		return nil
	}
	cl, err := r.Flink.For(ctx, session.Namespace, session.Name, session.Spec.FlinkVersion, conf)
	if err != nil {
		if _, refused := clients.IsRESTServiceRefused(err); refused {
			r.Recorder.Event(s.job, corev1.EventTypeWarning, clients.ReasonRESTServiceRefused, err.Error())
		}
		s.unreachable = fmt.Errorf("REST endpoint of session %s: %w", name, err)
		return nil // not reachable yet; observed as not ready
	}
	s.flink = cl
	return nil
}

// sessionReady says the session's JobManager is reported ready.
func (s *jobScope) sessionReady() bool {
	return s.session != nil && s.session.Status.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady
}

// observeJob reads the job's state from the session cluster.
func (r *FlinkSessionJobReconciler) observeJob(ctx context.Context, s *jobScope) {
	st := s.status()
	if s.flink == nil || st.JobStatus.JobID == "" {
		return
	}
	details, err := s.flink.JobDetails(ctx, st.JobStatus.JobID)
	switch {
	case flink.IsNotFound(err):
		r.onJobNotFound(s)
		return
	case err != nil:
		return
	}
	if jobLost(st.Error) {
		st.Error = "" // found again (recovered by the session's HA)
	}
	state := flinkv1beta1.JobStatusState(details.State)
	if state != st.JobStatus.State && st.JobStatus.State != "" {
		r.Recorder.Eventf(s.job, corev1.EventTypeNormal, ReasonJobStatusChanged, "Job status changed from %s to %s", st.JobStatus.State, state)
	}
	setJobState(&st.JobStatus, state)
	if isTerminal(state) {
		r.recordLastCheckpoint(ctx, s)
	}
	st.JobStatus.JobName = details.Name
	if details.StartTime > 0 {
		st.JobStatus.StartTime = fmt.Sprint(details.StartTime)
	}
	// A job that runs the spec last reconciled is stable.
	if state == flinkv1beta1.JobStatusRunning && st.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed {
		st.ReconciliationStatus.LastStableSpec = st.ReconciliationStatus.LastReconciledSpec
	}
}

// onJobNotFound handles a job its session does not know (upstream's
// JobStatusObserver.onTargetJobNotFound): a session JobManager restarted without HA, or with
// HA metadata not recovered yet. Only a stateless job is submitted again (from nothing: it
// starts over, as upstream's stateless restore). A savepoint or last-state job would start
// with no state, or from a path its checkpoints have long replaced: upstream's "Job Not Found"
// is reported and the user answers (a savepoint redeploy, or stateless); should the session
// recover the job, it is observed again and the report goes.
func (r *FlinkSessionJobReconciler) onJobNotFound(s *jobScope) {
	st := s.status()
	if st.JobStatus.State == flinkv1beta1.JobStatusReconciling || isTerminal(st.JobStatus.State) {
		return // not submitted yet (or lost and reported), or ended
	}
	setJobState(&st.JobStatus, flinkv1beta1.JobStatusReconciling)
	// The current spec decides, as upstream's: the recorded one holds the mode the Apache
	// operator restored with (stateless after a first deployment), and a change of upgradeMode
	// alone is never recorded.
	if upgradeModeOf(s.job.Spec.Job) != flinkv1beta1.UpgradeModeStateless {
		st.Error = jobNotFoundError()
		r.Recorder.Eventf(s.job, corev1.EventTypeWarning, ReasonMissing,
			"%s: job %s is not on session %s; it is not submitted again without its state. "+
				"Set job.initialSavepointPath and a new job.savepointRedeployNonce to restore it", jobNotFoundMessage, st.JobStatus.JobID, s.session.Name)
		return
	}
	st.JobStatus.UpgradeSavepointPath = ""
	r.Recorder.Eventf(s.job, corev1.EventTypeWarning, ReasonMissing, "%s: job %s is not on session %s; submitting it again",
		jobNotFoundMessage, st.JobStatus.JobID, s.session.Name)
}

// recordLastCheckpoint keeps the latest state of a session job that ended (failed, finished,
// cancelled, outside the operator or by an upgrade's stop) as what its next submission
// restores, on every observe while it is ended, whatever the reconciliation state (upstream's
// SnapshotObserver.observeLatestCheckpoint): otherwise a spec change or restart would submit it
// with no state, or from the savepoint it was first started with. A cancelled job with none has
// none (its path is definite); an upgrade restoring the savepoint the user named keeps it.
func (r *FlinkSessionJobReconciler) recordLastCheckpoint(ctx context.Context, s *jobScope) {
	st := s.status()
	if usersRestorePath(st, s.deployed) {
		return
	}
	path, err := s.flink.LatestCheckpointPath(ctx, st.JobStatus.JobID)
	if err != nil || path == st.JobStatus.UpgradeSavepointPath || (path == "" && st.JobStatus.State != flinkv1beta1.JobStatusCanceled) {
		return
	}
	st.JobStatus.UpgradeSavepointPath = path
	log.FromContext(ctx).Info("job ended; its latest checkpoint is what it restores", "state", st.JobStatus.State, "checkpoint", path)
}

func (r *FlinkSessionJobReconciler) validateJob(ctx context.Context, s *jobScope) (*flinkv1beta1.FlinkSessionJobSpec, bool) {
	// Update rules compare with what was last reconciled (the webhook compares with the old
	// object; without it the same rules still hold).
	var old *flinkv1beta1.FlinkSessionJob
	if s.deployed != nil {
		old = s.job.DeepCopy()
		old.Spec = *s.deployed
	}
	errs := r.Validator.ValidateSessionJob(ctx, s.job, old, s.session)
	errs = append(errs, customValidation(ctx, r.CustomValidator, "FlinkSessionJob", s.job, old)...)
	if len(errs) == 0 {
		if isValidationError(s.status().Error) {
			s.status().Error = ""
		}
		return &s.job.Spec, true
	}
	msg := errs.ToAggregate().Error()
	s.status().Error = errorJSON("ValidationError", msg)
	r.Recorder.Event(s.job, corev1.EventTypeWarning, ReasonValidationError, msg)
	if s.deployed == nil {
		return nil, false
	}
	return s.deployed, true
}

func (r *FlinkSessionJobReconciler) finishJob(ctx context.Context, s *jobScope, reconcileErr error) error {
	if apierrors.IsConflict(reconcileErr) {
		return reconcileErr
	}
	if reconcileErr != nil {
		s.status().Error = errorJSON("ReconcileError", reconcileErr.Error())
		r.Recorder.Event(s.job, corev1.EventTypeWarning, ReasonError, reconcileErr.Error())
	}
	if err := r.persistJob(ctx, s); err != nil {
		if reconcileErr != nil {
			return fmt.Errorf("%w (and writing status failed: %v)", reconcileErr, err)
		}
		return err
	}
	return reconcileErr
}

func (r *FlinkSessionJobReconciler) computeJobStatus(s *jobScope) {
	st := s.status()
	var jobState flinkv1beta1.JobState
	if s.deployed != nil && s.deployed.Job != nil {
		jobState = s.deployed.Job.State
	}
	st.LifecycleState = lifecycle.State(&st.CommonStatus, "", !s.job.DeletionTimestamp.IsZero(), jobState)
	if r.Lifecycle != nil {
		r.Lifecycle.Observe(s.job.UID, s.job.Namespace, metrics.KindSessionJob, st.LifecycleState)
	}
	for _, c := range lifecycle.SessionJobConditions(&st.CommonStatus, s.job.Generation) {
		meta.SetStatusCondition(&st.Conditions, c)
	}
}

// persistJob writes the status (the write-ahead log) when it changed.
func (r *FlinkSessionJobReconciler) persistJob(ctx context.Context, s *jobScope) error {
	r.computeJobStatus(s)
	s.status().Error = s.redact.String(s.status().Error)
	if equalStatus(s.original.Status, s.job.Status) {
		return nil
	}
	if err := patchStatus(ctx, r.Client, s.job, s.original); err != nil {
		return err
	}
	statusWritten(ctx, r.Listener, s.job, &s.original.Status, &s.job.Status, r.SecretKeyPatterns)
	s.original = s.job.DeepCopy()
	return nil
}

// recordJobSpec writes spec as the last reconciled spec in the given reconciliation state. The
// trigger nonces recorded before are kept, as for deployments (recordDeployed): a savepoint or
// checkpoint asked for together with an upgrade is taken of the upgraded job.
func (s *jobScope) recordJobSpec(spec flinkv1beta1.FlinkSessionJobSpec, state flinkv1beta1.ReconciliationState) error {
	if s.deployed != nil {
		spec.Job = withRecordedTriggerNonces(s.deployed.Job, spec.Job)
	}
	return s.writeJobSpec(spec, state, s.deployed == nil)
}

// writeJobSpec writes spec as the last reconciled spec in the given state; first says it is
// still the first spec deployed (upstream's resource_metadata.firstDeployment).
func (s *jobScope) writeJobSpec(spec flinkv1beta1.FlinkSessionJobSpec, state flinkv1beta1.ReconciliationState, first bool) error {
	raw, err := flinkv1beta1.EncodeReconciledSpec(spec, first)
	if err != nil {
		return err
	}
	rs := &s.status().ReconciliationStatus
	rs.LastReconciledSpec, rs.State = raw, state
	rs.ReconciliationTimestamp = time.Now().UnixMilli()
	s.status().ObservedGeneration = s.job.Generation
	deployed := spec
	s.deployed = &deployed
	return nil
}
