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
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
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
	ReconcilerOptions
	Client    client.Client
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	Flink     *clients.Factory
	Artifacts *artifact.Fetcher
	Defaults  flinkconf.Defaults
	Validator *validation.Validator
	Intervals Intervals
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
	return r.setUp(mgr, controllerSpec{name: "flinksessionjob", object: &flinkv1beta1.FlinkSessionJob{}, intervals: r.Intervals,
		build: func(b *builder.Builder) *builder.Builder {
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
	// jobRecord is the last reconciled spec (deployed, firstDeployment).
	jobRecord[flinkv1beta1.FlinkSessionJobSpec]
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

// The scope as the job-resource skeleton sees it (jobresource.go).
func (s *jobScope) object() client.Object              { return s.job }
func (s *jobScope) stored() client.Object              { return s.original }
func (s *jobScope) statuses() (current, stored any)    { return &s.job.Status, &s.original.Status }
func (s *jobScope) common() *flinkv1beta1.CommonStatus { return &s.job.Status.CommonStatus }
func (s *jobScope) markStored()                        { s.original = s.job.DeepCopy() }
func (s *jobScope) redactor() *redact.Redactor         { return s.redact }

// Reconcile runs the phases: cleanup on deletion, else observe → validate → reconcile, then
// writes the status once.
func (r *FlinkSessionJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &flinkv1beta1.FlinkSessionJob{}
	return r.run(ctx, r.Client, req, job, preamble{finalizer: SessionJobFinalizer, logKey: "flinksessionjob",
		secrets: func(client.Object) []string {
			conf, _ := job.Spec.FlinkConfiguration.Flatten()
			return append(redact.Values(conf, r.SecretKeyPatterns), jarURIPasswords(job.Spec.Job)...)
		}},
		func(ctx context.Context, red *redact.Redactor) (ctrl.Result, error) {
			r.jarStage() // made before the copy below, which shares it
			rr := *r
			r.apply(liveCopy{&rr.Recorder, &rr.Intervals, &rr.Defaults, &rr.Flink}, red)
			return rr.reconcileSessionJob(ctx, job, red)
		})
}

// newJobScope starts a reconcile of job: what was deployed last, read from its status.
func newJobScope(job *flinkv1beta1.FlinkSessionJob, red *redact.Redactor) *jobScope {
	s := &jobScope{job: job, original: job.DeepCopy(), redact: red,
		jobRecord: jobRecord[flinkv1beta1.FlinkSessionJobSpec]{jobOf: func(s *flinkv1beta1.FlinkSessionJobSpec) **flinkv1beta1.JobSpec { return &s.Job }}}
	s.read(&job.Status.CommonStatus)
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
	if err := r.addFinalizer(ctx, r.Client, s, SessionJobFinalizer); err != nil {
		return ctrl.Result{}, err
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
	conf, err := clusterConfig(session, r.Defaults)
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

// validateJob runs the shared rules and the custom validators (judge).
func (r *FlinkSessionJobReconciler) validateJob(ctx context.Context, s *jobScope) (*flinkv1beta1.FlinkSessionJobSpec, bool) {
	// Update rules compare with what was last reconciled (the webhook compares with the old
	// object; without it the same rules still hold).
	var old *flinkv1beta1.FlinkSessionJob
	if s.deployed != nil {
		old = s.job.DeepCopy()
		old.Spec = *s.deployed
	}
	errs := r.validatorNow(r.Validator, r.Defaults).ValidateSessionJob(ctx, s.job, old, s.session)
	errs = append(errs, customValidation(ctx, r.CustomValidator, "FlinkSessionJob", s.job, old)...)
	return judge(ctx, r.Recorder, s, errs, &s.job.Spec, s.deployed)
}

// finishJob records the reconcile's error and writes the status if it changed (the skeleton's).
func (r *FlinkSessionJobReconciler) finishJob(ctx context.Context, s *jobScope, reconcileErr error) error {
	return finish(r.Recorder, s, reconcileErr, func() error { return r.persistJob(ctx, s) })
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

// persistJob computes the status and writes it when it changed (the skeleton's write-ahead log
// entry, stored before the action it describes).
func (r *FlinkSessionJobReconciler) persistJob(ctx context.Context, s *jobScope) error {
	return r.persist(ctx, r.Client, s, func() { r.computeJobStatus(s) })
}

// recordJobSpec writes spec as the last reconciled spec in the given reconciliation state,
// keeping the trigger nonces recorded before (jobRecord.record).
func (s *jobScope) recordJobSpec(spec flinkv1beta1.FlinkSessionJobSpec, state flinkv1beta1.ReconciliationState) error {
	return s.record(&s.job.Status.CommonStatus, s.job.Generation, spec, state)
}
