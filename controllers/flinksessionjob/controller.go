package flinksessionjob

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/jarstage"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/metrics"
	"github.com/flink-operator/flink-operator/pkg/redact"
	"github.com/flink-operator/flink-operator/pkg/shard"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// SessionJobFinalizer is upstream's finalizer name for session jobs.
const SessionJobFinalizer = "flinksessionjobs.flink.apache.org/finalizer"

// FlinkSessionJobReconciler runs jobs on session clusters (FlinkDeployments without a job).
type FlinkSessionJobReconciler struct {
	reconciler.ReconcilerOptions
	Client    client.Client
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	Flink     *clients.Factory
	Artifacts *artifact.Fetcher
	Defaults  flinkconf.Defaults
	Validator *validation.Validator
	Intervals reconciler.Intervals
	// Shard is the label selector of the resources this operator instance serves (see
	// FlinkDeploymentReconciler).
	Shard labels.Selector
	// APIReader reads from the API server: a session cluster the cache does not hold (another
	// shard's) is looked up there. The manager's API reader when nil.
	APIReader client.Reader
	// Autoscaling serves the job autoscaler of session jobs that enable it (nil: its defaults).
	Autoscaling *jobs.Autoscaling
	// JarStage fetches and uploads the jars of submissions outside the reconcile workers
	// (nil: one with jarstage's defaults, stopped with the manager).
	JarStage *jarstage.Stage

	// options reports the Apache operator options a spec sets that have no effect here.
	options *jobs.OptionWarnings
}

// Reads go through the manager's cache (list, watch). Finalizers are added and removed by update; status is written by merge patch (reconciler/status.go).
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinksessionjobs,verbs=list;watch;update
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinksessionjobs/status,verbs=patch

// SetupWithManager watches session jobs, and their session FlinkDeployments so a job is
// submitted as soon as its session becomes ready.
func (r *FlinkSessionJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Intervals == (reconciler.Intervals{}) {
		r.Intervals = reconciler.DefaultIntervals
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.options = jobs.NewOptionWarnings()
	r.Recorder = reconciler.WithListener(r.Recorder, r.Listener)
	// The stage's transfers end, and the jars nobody picked up are deleted, when the manager stops.
	if err := mgr.Add(r.jarStage()); err != nil {
		return fmt.Errorf("jar stage: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &flinkv1beta1.FlinkSessionJob{}, sessionJobDeploymentField,
		func(o client.Object) []string { return []string{o.(*flinkv1beta1.FlinkSessionJob).Spec.DeploymentName} }); err != nil {
		return fmt.Errorf("index session jobs by deployment: %w", err)
	}
	return r.SetUp(mgr, reconciler.ControllerSpec{Name: "flinksessionjob", Object: &flinkv1beta1.FlinkSessionJob{}, Intervals: r.Intervals,
		Build: func(b *builder.Builder) *builder.Builder {
			return b.For(&flinkv1beta1.FlinkSessionJob{}).
				Watches(&flinkv1beta1.FlinkDeployment{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfSession))
		}}, r)
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
	// JobRecord is the last reconciled spec (deployed, firstDeployment).
	reconciler.JobRecord[flinkv1beta1.FlinkSessionJobSpec]
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

// The scope as the job-resource skeleton sees it (reconciler/jobresource.go).
func (s *jobScope) Object() client.Object              { return s.job }
func (s *jobScope) Stored() client.Object              { return s.original }
func (s *jobScope) Statuses() (current, stored any)    { return &s.job.Status, &s.original.Status }
func (s *jobScope) Common() *flinkv1beta1.CommonStatus { return &s.job.Status.CommonStatus }
func (s *jobScope) MarkStored()                        { s.original = s.job.DeepCopy() }
func (s *jobScope) Redactor() *redact.Redactor         { return s.redact }

// Reconcile runs the phases: cleanup on deletion, else observe → validate → reconcile, then
// writes the status once.
func (r *FlinkSessionJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &flinkv1beta1.FlinkSessionJob{}
	return r.Run(ctx, r.Client, req, job, reconciler.Preamble{Finalizer: SessionJobFinalizer, LogKey: "flinksessionjob",
		Secrets: func(client.Object) []string {
			conf, _ := job.Spec.FlinkConfiguration.Flatten()
			return append(redact.Values(conf, r.SecretKeyPatterns), reconciler.JarURIPasswords(job.Spec.Job)...)
		}},
		func(ctx context.Context, red *redact.Redactor) (ctrl.Result, error) {
			r.jarStage() // made before the copy below, which shares it
			rr := *r
			r.Apply(reconciler.LiveCopy{Recorder: &rr.Recorder, Intervals: &rr.Intervals, Defaults: &rr.Defaults, Flink: &rr.Flink}, red)
			return rr.reconcileSessionJob(ctx, job, red)
		})
}

// NewJobScope starts a reconcile of job: what was deployed last, read from its status.
func NewJobScope(job *flinkv1beta1.FlinkSessionJob, red *redact.Redactor) *jobScope {
	s := &jobScope{job: job, original: job.DeepCopy(), redact: red,
		JobRecord: reconciler.JobRecord[flinkv1beta1.FlinkSessionJobSpec]{JobOf: func(s *flinkv1beta1.FlinkSessionJobSpec) **flinkv1beta1.JobSpec { return &s.Job }}}
	s.Read(&job.Status.CommonStatus)
	return s
}

func (r *FlinkSessionJobReconciler) reconcileSessionJob(ctx context.Context, job *flinkv1beta1.FlinkSessionJob, red *redact.Redactor) (ctrl.Result, error) {
	s := NewJobScope(job, red)
	defer func() { s.flink.Close() }() // the client observe makes, if any
	if err := r.connect(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if !job.DeletionTimestamp.IsZero() {
		return r.cleanupJob(ctx, s)
	}
	if err := r.AddFinalizer(ctx, r.Client, s, SessionJobFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	r.options.Report(r.Recorder, job, job.Spec.FlinkConfiguration, job.Status.ObservedGeneration)
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
	if s.Deployed != nil && s.Deployed.DeploymentName != "" {
		name = s.Deployed.DeploymentName
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
	conf, err := reconciler.ClusterConfig(session, r.Defaults)
	if err != nil {
		s.unreachable = fmt.Errorf("configuration of session %s: %w", name, err)
		return nil
	}
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
	if JobLost(st.Error) {
		st.Error = "" // found again (recovered by the session's HA)
	}
	state := jobs.ObservedJobState(&st.JobStatus, flinkv1beta1.JobStatusState(details.State), time.Now())
	if state != st.JobStatus.State && st.JobStatus.State != "" {
		r.Recorder.Eventf(s.job, corev1.EventTypeNormal, reconciler.ReasonJobStatusChanged, "Job status changed from %s to %s", st.JobStatus.State, state)
	}
	jobs.SetJobState(&st.JobStatus, state)
	if reconciler.IsTerminal(state) {
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
	if st.JobStatus.State == flinkv1beta1.JobStatusReconciling || reconciler.IsTerminal(st.JobStatus.State) {
		return // not submitted yet (or lost and reported), or ended
	}
	jobs.SetJobState(&st.JobStatus, flinkv1beta1.JobStatusReconciling)
	// The current spec decides, as upstream's: the recorded one holds the mode the Apache
	// operator restored with (stateless after a first deployment), and a change of upgradeMode
	// alone is never recorded.
	if jobs.UpgradeModeOf(s.job.Spec.Job) != flinkv1beta1.UpgradeModeStateless {
		st.Error = jobNotFoundError()
		r.Recorder.Eventf(s.job, corev1.EventTypeWarning, reconciler.ReasonMissing,
			"%s: job %s is not on session %s; it is not submitted again without its state. "+
				"Set job.initialSavepointPath and a new job.savepointRedeployNonce to restore it", jobNotFoundMessage, st.JobStatus.JobID, s.session.Name)
		return
	}
	st.JobStatus.UpgradeSavepointPath = ""
	r.Recorder.Eventf(s.job, corev1.EventTypeWarning, reconciler.ReasonMissing, "%s: job %s is not on session %s; submitting it again",
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
	if usersRestorePath(st, s.Deployed) {
		return
	}
	path, err := s.flink.LatestCheckpointPath(ctx, st.JobStatus.JobID)
	if err != nil || path == st.JobStatus.UpgradeSavepointPath || (path == "" && st.JobStatus.State != flinkv1beta1.JobStatusCanceled) {
		return
	}
	st.JobStatus.UpgradeSavepointPath = path
	log.FromContext(ctx).Info("job ended; its latest checkpoint is what it restores", "state", st.JobStatus.State, "checkpoint", path)
}

// validateJob runs the shared rules and the custom validators (judge).
func (r *FlinkSessionJobReconciler) validateJob(ctx context.Context, s *jobScope) (*flinkv1beta1.FlinkSessionJobSpec, bool) {
	// Update rules compare with what was last reconciled (the webhook compares with the old
	// Object; without it the same rules still hold).
	var old *flinkv1beta1.FlinkSessionJob
	if s.Deployed != nil {
		old = s.job.DeepCopy()
		old.Spec = *s.Deployed
	}
	errs := r.ValidatorNow(r.Validator, r.Defaults).ValidateSessionJob(ctx, s.job, old, s.session)
	errs = append(errs, reconciler.CustomValidation(ctx, r.CustomValidator, "FlinkSessionJob", s.job, old)...)
	return reconciler.Judge(ctx, r.Recorder, s, errs, &s.job.Spec, s.Deployed)
}

// finishJob records the reconcile's error and writes the status if it changed (the skeleton's).
func (r *FlinkSessionJobReconciler) finishJob(ctx context.Context, s *jobScope, reconcileErr error) error {
	return reconciler.Finish(r.Recorder, s, reconcileErr, func() error { return r.persistJob(ctx, s) })
}

func (r *FlinkSessionJobReconciler) computeJobStatus(s *jobScope) {
	st := s.status()
	var jobState flinkv1beta1.JobState
	if s.Deployed != nil && s.Deployed.Job != nil {
		jobState = s.Deployed.Job.State
	}
	st.LifecycleState = lifecycle.State(&st.CommonStatus, "", !s.job.DeletionTimestamp.IsZero(), jobState)
	if r.Lifecycle != nil {
		r.Lifecycle.Observe(s.job.UID, s.job.Namespace, metrics.KindSessionJob, st.LifecycleState)
	}
	before := meta.FindStatusCondition(st.Conditions, lifecycle.ConditionProgressing).DeepCopy()
	for _, c := range lifecycle.SessionJobConditions(&st.CommonStatus, s.job.Generation, jobState) {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	st.Operations = lifecycle.RecordOperations(st.Operations, lifecycle.Step(&st.CommonStatus, before, s.job.Generation, metav1.Now()))
}

// persistJob computes the status and writes it when it changed (the skeleton's write-ahead log
// entry, stored before the action it describes).
func (r *FlinkSessionJobReconciler) persistJob(ctx context.Context, s *jobScope) error {
	return r.Persist(ctx, r.Client, s, func() { r.computeJobStatus(s) })
}

// recordJobSpec writes spec as the last reconciled spec in the given reconciliation state,
// keeping the trigger nonces recorded before (jobRecord.record).
func (s *jobScope) recordJobSpec(spec flinkv1beta1.FlinkSessionJobSpec, state flinkv1beta1.ReconciliationState) error {
	return s.Record(&s.job.Status.CommonStatus, s.job.Generation, spec, state)
}
