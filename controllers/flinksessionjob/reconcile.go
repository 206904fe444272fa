package flinksessionjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/jarstage"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/redact"
	"github.com/flink-operator/flink-operator/pkg/shard"
)

// recordSpecChange records a changed spec as UPGRADING with what its submission restores
// (write-ahead), as planSpecChange decides; waiting says nothing was recorded because the
// user has to say where the job's state is.
func (r *FlinkSessionJobReconciler) recordSpecChange(ctx context.Context, s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec) (waiting bool, err error) {
	st := s.status()
	if st.JobStatus.State == flinkv1beta1.JobStatusReconciling && st.JobStatus.JobID != "" && !JobLost(st.Error) {
		// Not observed since its submission: whether it ran (and so has newer state than what
		// it was submitted with) is Flink's to say.
		state, err := s.flink.JobStatus(ctx, st.JobStatus.JobID)
		switch {
		case flink.IsNotFound(err):
		case err != nil:
			log.FromContext(ctx).Info("cannot tell whether the job runs; the spec change waits", "error", err.Error())
			return true, nil
		default:
			jobs.SetJobState(&st.JobStatus, flinkv1beta1.JobStatusState(state))
		}
	}
	plan := planSpecChange(specChange{Deployed: s.Deployed.Job, Desired: desired.Job, Job: st.JobStatus.State,
		RestorePath: st.JobStatus.UpgradeSavepointPath, Lost: JobLost(st.Error)})
	log.FromContext(ctx).Info("spec changed", "jobState", st.JobStatus.State, "keptPath", st.JobStatus.UpgradeSavepointPath,
		"action", plan.Action, "restore", plan.RestorePath, "why", plan.Reason)
	switch plan.Action {
	case specChangeWait:
		return true, nil // "Job Not Found" stays, with its Missing event
	case specChangeManualRestore:
		if failure := manualRestoreError(); st.Error != failure {
			st.Error = failure
			r.Recorder.Event(s.job, corev1.EventTypeWarning, reconciler.ReasonError, "Cannot upgrade: "+plan.Reason+". "+manualRestoreMessage)
		}
		return true, nil
	}
	r.Recorder.Event(s.job, corev1.EventTypeNormal, reconciler.ReasonSpecChanged, jobs.SpecChangedMessage("FlinkSessionJobSpec", s.Deployed, desired))
	if s.Deployed.Job.State != flinkv1beta1.JobStateSuspended && !reconciler.IsTerminal(st.JobStatus.State) && !JobLost(st.Error) {
		// The running job is about to be stopped (upstream emits this for every stop that is
		// not a no-op, upgrade or suspend).
		r.Recorder.Event(s.job, corev1.EventTypeNormal, reconciler.ReasonSuspended, jobs.MessageSuspending)
	}
	st.JobStatus.UpgradeSavepointPath = plan.RestorePath
	if waitsForUser(st.Error) { // answered (a lost job is only upgraded on the user's answer)
		if info := st.JobStatus.SavepointInfo; JobLost(st.Error) && info != nil && info.TriggerType == flinkv1beta1.SnapshotTriggerUpgrade {
			// The upgrade savepoint of a lost job cannot complete.
			info.TriggerID, info.TriggerType, info.TriggerTimestamp = "", "", nil
		}
		st.Error = ""
	}
	if err := s.recordJobSpec(*desired, flinkv1beta1.ReconciliationUpgrading); err != nil {
		return false, err
	}
	return false, r.persistJob(ctx, s)
}

func orReconciling(s flinkv1beta1.JobStatusState) flinkv1beta1.JobStatusState {
	if s == "" {
		return flinkv1beta1.JobStatusReconciling
	}
	return s
}

// upgradeJob stops the replaced job and submits the new spec, as planUpgrade decides for both
// kinds: the session's JobManager is reachable here, and a session job's state is in its
// checkpoints and savepoints, not in HA metadata of its own (so last-state is a cancel that
// keeps the latest checkpoint, as upstream's session jobs).
func (r *FlinkSessionJobReconciler) upgradeJob(ctx context.Context, s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec) (ctrl.Result, error) {
	return r.replaceJob(ctx, s, desired, r.deployJob)
}

// deployFunc submits the spec that replaces a stopped job, restoring restore: deployJob for an
// upgrade, submitRollback for a rollback.
type deployFunc func(ctx context.Context, s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec, restore string) (ctrl.Result, error)

// replaceJob is the upgrade steps shared by upgrades and rollbacks: the replaced job is stopped
// as planUpgrade decides, then desired is handed to deploy with what it restores.
func (r *FlinkSessionJobReconciler) replaceJob(ctx context.Context, s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec, deploy deployFunc) (ctrl.Result, error) {
	st := s.status()
	if JobLost(st.Error) {
		// Lost during the upgrade: there is nothing to stop and its state is unknown; the user's
		// answer (a savepoint redeploy, or stateless) replaces this target.
		return ctrl.Result{RequeueAfter: r.Intervals.Reconcile}, nil
	}
	situation, ok, err := r.upgradeSituation(ctx, s, desired)
	if err != nil || !ok {
		return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, err
	}
	plan := jobs.PlanUpgrade(situation)
	log.FromContext(ctx).V(1).Info("continuing upgrade", "job", st.JobStatus.State, "restore", st.JobStatus.UpgradeSavepointPath,
		"stop", plan.Stop, "restoreMode", plan.Restore, "why", plan.Reason)
	stops := plan.Stop != jobs.StopNone || jobs.UpgradeSavepointInFlight(&st.CommonStatus)
	stop := r.jobStop(s, desired)
	progress, err := stop.Run(ctx, plan)
	switch {
	case err != nil:
		return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, err
	case progress == jobs.StopPending:
		return ctrl.Result{RequeueAfter: stop.PendingRecheck(time.Now(), r.Intervals.ProgressCheck)}, nil
	case progress == jobs.StopNeedsUser:
		return ctrl.Result{RequeueAfter: r.Intervals.Reconcile}, nil
	}
	if desired.Job.State == flinkv1beta1.JobStateSuspended {
		if err := s.recordJobSpec(*desired, flinkv1beta1.ReconciliationDeployed); err != nil {
			return ctrl.Result{}, err
		}
		if !reconciler.IsTerminal(st.JobStatus.State) {
			jobs.SetJobState(&st.JobStatus, flinkv1beta1.JobStatusFinished)
		}
		// The stopped job is done with (as upstream, its id is cleared): a later observation of
		// its lingering state in the session must not make it look alive again.
		st.JobStatus.JobID = ""
		st.ReconciliationStatus.LastStableSpec = st.ReconciliationStatus.LastReconciledSpec
		log.FromContext(ctx).Info("job suspended", "resumeFrom", st.JobStatus.UpgradeSavepointPath)
		return ctrl.Result{RequeueAfter: r.Intervals.Reconcile}, nil
	}
	if stops {
		// The job is stopped now: what it restores is decided again from what the stop left (a
		// FINISHED job with its savepoint, a CANCELED one with its latest checkpoint).
		if situation, ok, err = r.upgradeSituation(ctx, s, desired); err != nil || !ok {
			return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, err
		}
		if plan = jobs.PlanUpgrade(situation); plan.Stop != jobs.StopNone {
			return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, nil
		}
	}
	restore := ""
	if plan.Restore == jobs.RestoreSavepoint {
		restore = st.JobStatus.UpgradeSavepointPath
	}
	st.ReconciliationStatus.ReconciliationTimestamp = time.Now().UnixMilli()
	return deploy(ctx, s, desired, restore)
}

// upgradeSituation gathers the inputs of planUpgrade for the job being replaced; ok is false
// while Flink cannot say yet what the job did (asked again on the next step).
func (r *FlinkSessionJobReconciler) upgradeSituation(ctx context.Context, s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec) (jobs.UpgradeSituation, bool, error) {
	st := s.status()
	js := &st.JobStatus
	mode := jobStopMode(st, desired)
	inFlight := jobs.UpgradeSavepointInFlight(&st.CommonStatus)
	if js.State == flinkv1beta1.JobStatusReconciling && js.JobID != "" && !inFlight {
		// Submitted but not observed yet, or never submitted: Flink knows which.
		state, err := s.flink.JobStatus(ctx, js.JobID)
		switch {
		case flink.IsNotFound(err):
		case err != nil:
			log.FromContext(ctx).Info("cannot tell whether the job runs; the upgrade waits", "job", js.JobID, "error", err.Error())
			return jobs.UpgradeSituation{}, false, nil
		default:
			jobs.SetJobState(js, flinkv1beta1.JobStatusState(state)) // it runs or ran: its state is what it left
		}
	}
	nothingRan := js.JobID == "" || js.State == flinkv1beta1.JobStatusReconciling
	if reconciler.IsTerminal(js.State) && !nothingRan && js.UpgradeSavepointPath == "" && mode != flinkv1beta1.UpgradeModeStateless {
		// Ended and its latest state not recorded yet (the observer could not read it): the
		// session is asked before the job is taken for one with no state.
		latest, err := s.flink.LatestCheckpointPath(ctx, js.JobID)
		if err != nil && !flink.IsNotFound(err) {
			log.FromContext(ctx).Info("cannot read the ended job's latest checkpoint yet", "job", js.JobID, "error", err.Error())
			return jobs.UpgradeSituation{}, false, nil
		}
		js.UpgradeSavepointPath = latest // a job its session forgot has no state to find
	}
	restorePath := js.UpgradeSavepointPath
	if mode == flinkv1beta1.UpgradeModeStateless && !usersRestorePath(st, desired) {
		restorePath = "" // a stateless job starts over, whatever checkpoint it left
	}
	conf := s.jobConfig()
	return jobs.UpgradeSituation{
		Mode: mode, Job: js.State, JobManager: flinkv1beta1.JobManagerReady,
		SavepointDir:      conf.Get("execution.checkpointing.savepoint-dir", conf.Get("state.savepoints.dir", "")) != "",
		LastStateFallback: options.LastStateFallback.Get(conf),
		RestorePath:       restorePath,
		// Nothing ran since the state was recorded (a resumed suspension, or a submission Flink
		// never saw): what was recorded, or nothing, is its state.
		NothingRan: nothingRan && !inFlight,
	}, true, nil
}

// jobStopMode is the upgrade mode the replaced job is stopped with: a savepoint the user named
// is restored instead of the job's state, which is then not taken (a stateless stop).
func jobStopMode(st *flinkv1beta1.FlinkSessionJobStatus, target *flinkv1beta1.FlinkSessionJobSpec) flinkv1beta1.UpgradeMode {
	if target == nil || usersRestorePath(st, target) {
		return flinkv1beta1.UpgradeModeStateless
	}
	return jobs.UpgradeModeOf(target.Job)
}

// jobStop is the stop executor for the session job, on its session's JobManager; target is the
// spec being deployed (the last reconciled one).
func (r *FlinkSessionJobReconciler) jobStop(s *jobScope, target *flinkv1beta1.FlinkSessionJobSpec) *jobs.JobStop {
	conf := s.jobConfig()
	x := &jobs.JobStop{
		OwnState:   jobStopMode(s.status(), target) != flinkv1beta1.UpgradeModeStateless,
		Flink:      func(context.Context) (*flink.Client, error) { return s.flink, nil },
		JobManager: flinkv1beta1.JobManagerReady,
		Status:     &s.status().CommonStatus,
		Owner:      s.job,
		Recorder:   r.Recorder,
		Persist:    func(ctx context.Context) error { return r.persistJob(ctx, s) },
		Format:     jobs.SavepointFormat(conf),
		UpgradeSnapshot: func(ctx context.Context, path string, triggeredAt time.Time) error {
			return jobs.RecordUpgradeSnapshot(ctx, r.Client, r.Recorder, r.jobSnapshots(ctx, s, s.Deployed), path, triggeredAt)
		},
	}
	x.CancelTimeout = options.CancelTimeout.Get(conf)
	return x
}

// deployJob records the new job id, restore path and spec (write-ahead), then submits.
func (r *FlinkSessionJobReconciler) deployJob(ctx context.Context, s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec, restore string) (ctrl.Result, error) {
	st := s.status()
	ts := st.ReconciliationStatus.ReconciliationTimestamp
	st.JobStatus.JobID = reconciler.DeterministicJobID(string(s.job.UID), ts)
	jobs.SetJobState(&st.JobStatus, flinkv1beta1.JobStatusReconciling)
	st.JobStatus.UpgradeSavepointPath = restore
	if err := s.recordJobSpec(*desired, flinkv1beta1.ReconciliationDeployed); err != nil {
		return ctrl.Result{}, err
	}
	st.ReconciliationStatus.ReconciliationTimestamp = ts
	if err := r.persistJob(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return r.submit(ctx, s, desired)
}

// submit uploads the jar, runs it under the recorded job id and deletes the upload.
func (r *FlinkSessionJobReconciler) submit(ctx context.Context, s *jobScope, spec *flinkv1beta1.FlinkSessionJobSpec) (ctrl.Result, error) {
	st := s.status()
	job := spec.Job
	headers, err := parseHeaders(s.conf[options.ArtifactHeaders.Key])
	if err != nil {
		return ctrl.Result{}, err
	}
	// The jar is fetched and uploaded in the background (pkg/jarstage): a slow jar server
	// never holds this reconcile's worker. The upload goes through this reconcile's client
	// (its endpoint, TLS and leader fence).
	cl := s.flink
	res := r.jarStage().Get(jarstage.Request{
		Key: jarstage.Key{Owner: string(s.job.UID), JobID: st.JobStatus.JobID, JarURI: job.JarURI,
			Cluster: s.session.Namespace + "/" + s.session.Name + "/" + string(s.session.UID) + "@" + cl.URL()},
		Namespace: s.job.Namespace,
		Fetch: func(ctx context.Context) (io.ReadCloser, string, error) {
			return r.Artifacts.Open(ctx, job.JarURI, headers)
		},
		Upload: cl.UploadJar,
		Delete: cl.DeleteJar,
	})
	var fetchErr *jarstage.FetchError
	switch {
	case res.State == jarstage.Busy || res.State == jarstage.Running:
		return ctrl.Result{RequeueAfter: jarStagePoll}, nil
	case res.State == jarstage.Failed && errors.As(res.Err, &fetchErr):
		st.Error = reconciler.ErrorJSON("ArtifactException", fetchErr.Error())
		r.Recorder.Event(s.job, corev1.EventTypeWarning, reconciler.ReasonError, fetchErr.Error())
		return ctrl.Result{RequeueAfter: r.Intervals.Reconcile}, nil
	case res.State == jarstage.Failed:
		return ctrl.Result{}, fmt.Errorf("upload %s: %w", redact.URLUserInfo(job.JarURI), res.Err)
	}
	jarID := res.JarID
	defer func() {
		if err := s.flink.DeleteJar(ctx, jarID); err != nil {
			log.FromContext(ctx).Info("could not delete the uploaded jar", "jar", jarID, "error", err.Error())
		}
	}()
	jobConf, err := s.runConfiguration(spec)
	if err != nil {
		return ctrl.Result{}, err
	}
	req := flink.RunJarRequest{JobID: st.JobStatus.JobID, EntryClass: job.EntryClass, Args: job.Args,
		Parallelism: int(job.Parallelism), SavepointPath: st.JobStatus.UpgradeSavepointPath, FlinkConfiguration: jobConf}
	if job.AllowNonRestoredState != nil {
		req.AllowNonRestoredState = *job.AllowNonRestoredState
	}
	if mode := s.conf["execution.state-recovery.claim-mode"]; mode != "" {
		req.ClaimMode = flink.ClaimMode(strings.ToUpper(mode))
	}
	// The run call returns once the job's main method has built and submitted the job graph,
	// which can take far longer than an ordinary REST call (upstream's job.submission.timeout).
	if _, err := s.flink.WithTimeout(options.JobSubmissionTimeout.Get(s.jobConfig())).RunJar(ctx, jarID, req); err != nil {
		if flink.IsDuplicateJob(err) {
			// Submitted before a crash: the job id is Flink's, nothing to do.
			return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, nil
		}
		msg := fmt.Sprintf("Job submission failed: %v", err)
		st.Error = reconciler.ErrorJSON("JobSubmissionException", msg)
		r.Recorder.Event(s.job, corev1.EventTypeWarning, reconciler.ReasonError, msg)
		return ctrl.Result{RequeueAfter: r.Intervals.Reconcile}, nil
	}
	st.Error = ""
	msg := jobs.MessageSubmit + " on session " + s.session.Name
	if st.JobStatus.UpgradeSavepointPath != "" {
		msg += " from " + st.JobStatus.UpgradeSavepointPath
	}
	r.Recorder.Event(s.job, corev1.EventTypeNormal, reconciler.ReasonSubmit, msg)
	log.FromContext(ctx).Info("job submitted", "job", st.JobStatus.JobID, "restoreFrom", st.JobStatus.UpgradeSavepointPath)
	return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, nil
}

func (r *FlinkSessionJobReconciler) jobRequeue(s *jobScope) time.Duration {
	if s.status().JobStatus.State != flinkv1beta1.JobStatusRunning && !reconciler.IsTerminal(s.status().JobStatus.State) {
		return r.Intervals.ProgressCheck
	}
	return r.Intervals.Reconcile
}

// stopBeforeDeletion makes sure a deleted session job's Flink job does not run on unmanaged
// (upstream's SessionJobReconciler.cleanupInternal): a block other than lifecycle.BlockNone says
// the finalizer stays, and why. The job is stopped (with a savepoint when
// kubernetes.operator.job.savepoint-on-deletion is set, else cancelled) unless it is known to be
// gone: never submitted, ended, unknown to its session, or gone with its session (deleted, or
// being deleted with no JobManager left). While the session cannot be asked, or the stop fails,
// deletion waits with a Warning event: with HA the job comes back with the JobManager, and a
// ready session still runs it.
//
// Both waits are bounded (lifecycle.DecideDeletion, from the job's deletionTimestamp): the
// savepoint is given up after kubernetes.operator.resource.cleanup.timeout and the job cancelled
// instead, since a savepoint that never completes must not keep a job the user deleted running;
// the stop itself is waited for one more timeout (stopJobOnDeletion), after which the resource
// goes with a Warning that the job may still run, unmanaged.
func (r *FlinkSessionJobReconciler) stopBeforeDeletion(ctx context.Context, s *jobScope) (lifecycle.DeletionBlock, error) {
	st := s.status()
	switch {
	case st.JobStatus.JobID == "" || reconciler.IsTerminal(st.JobStatus.State):
		return lifecycle.BlockNone, nil
	case s.session == nil || (!s.session.DeletionTimestamp.IsZero() && s.session.Status.JobManagerDeploymentStatus == flinkv1beta1.JobManagerMissing):
		return lifecycle.BlockNone, nil // the session cluster is gone, and its jobs with it
	case s.flink == nil && s.sessionReady():
		r.Recorder.Eventf(s.job, corev1.EventTypeWarning, reasonCleanupFailed, "Cannot reach session %s to stop job %s: %v",
			s.session.Name, st.JobStatus.JobID, s.unreachable)
		return lifecycle.BlockUnreachable, nil
	case s.flink == nil && (s.conf == nil || s.conf.HAEnabled()):
		r.Recorder.Eventf(s.job, corev1.EventTypeWarning, reasonCleanupFailed,
			"Waiting for session %s to be ready to stop job %s (with HA it comes back with its JobManager)", s.session.Name, st.JobStatus.JobID)
		return lifecycle.BlockUnreachable, nil
	case s.flink == nil:
		return lifecycle.BlockNone, nil // without HA, a session JobManager that is not running took the job with it
	}
	state, err := s.flink.JobStatus(ctx, st.JobStatus.JobID)
	switch {
	case flink.IsNotFound(err):
		return lifecycle.BlockNone, nil
	case err != nil:
		r.Recorder.Eventf(s.job, corev1.EventTypeWarning, reasonCleanupFailed, "Cannot ask session %s about job %s: %v", s.session.Name, st.JobStatus.JobID, err)
		return lifecycle.BlockUnreachable, nil
	case reconciler.IsTerminal(flinkv1beta1.JobStatusState(state)):
		if st.JobStatus.State == flinkv1beta1.JobStatusCancelling {
			// The cancel this deletion sent (a step of its own) is done.
			r.Recorder.Event(s.job, corev1.EventTypeNormal, reconciler.ReasonCleanup, "Job stopped")
		}
		return lifecycle.BlockNone, nil
	}
	mode := flinkv1beta1.UpgradeModeStateless
	if options.SavepointOnDeletion.Get(s.conf) && flinkv1beta1.ErrorReason(st.Error) != flinkv1beta1.ErrorReasonNoFinalSavepoint {
		timeout := options.ResourceCleanupTimeout.Get(s.conf)
		block := lifecycle.BlockInProgress
		if flinkv1beta1.ErrorReason(st.Error) == flinkv1beta1.ErrorReasonUpgradeFailed {
			block = lifecycle.BlockFailed
		}
		decision := lifecycle.DecideDeletion(lifecycle.DeletionObserved{Step: lifecycle.StepFinalSavepoint, Blocked: block,
			Elapsed: time.Since(s.job.DeletionTimestamp.Time), Timeout: timeout})
		if decision.Action == lifecycle.DeletionGiveUp {
			r.withoutFinalSavepoint(s, block, timeout)
		} else {
			mode = flinkv1beta1.UpgradeModeSavepoint
		}
	}
	stop := r.jobStop(s, s.Deployed)
	var progress jobs.StopProgress
	if mode == flinkv1beta1.UpgradeModeSavepoint || jobs.UpgradeSavepointInFlight(&st.CommonStatus) {
		progress, err = stop.WithSavepoint(ctx, false)
	} else {
		progress, err = stop.Cancel(ctx, false)
	}
	if err != nil {
		r.Recorder.Eventf(s.job, corev1.EventTypeWarning, reasonCleanupFailed, "Cannot stop job %s on session %s: %v", st.JobStatus.JobID, s.session.Name, err)
		return lifecycle.BlockFailed, nil
	}
	if progress != jobs.StopDone {
		return lifecycle.BlockInProgress, nil
	}
	r.Recorder.Event(s.job, corev1.EventTypeNormal, reconciler.ReasonCleanup, "Job stopped")
	return lifecycle.BlockNone, nil
}

// withoutFinalSavepoint records that the session job's savepoint on deletion is given up: the
// job is cancelled instead, its pending savepoint no longer followed. status.error (reason
// NoFinalSavepoint) says so in the status the resource shows last, and a Warning event names
// what was skipped and why.
func (r *FlinkSessionJobReconciler) withoutFinalSavepoint(s *jobScope, block lifecycle.DeletionBlock, timeout time.Duration) {
	st := s.status()
	why := fmt.Sprintf("the savepoint did not complete within %s (kubernetes.operator.resource.cleanup.timeout)", timeout)
	if block == lifecycle.BlockFailed {
		why = fmt.Sprintf("the savepoint kept failing for %s (kubernetes.operator.resource.cleanup.timeout): %s", timeout, flinkv1beta1.ErrorMessage(st.Error))
	}
	msg := fmt.Sprintf("No final savepoint of job %s: %s. The job is cancelled without one; its state since its last savepoint or retained checkpoint is not kept",
		st.JobStatus.JobID, why)
	if info := st.JobStatus.SavepointInfo; info != nil && info.TriggerType == flinkv1beta1.SnapshotTriggerUpgrade {
		info.TriggerID, info.TriggerType, info.TriggerTimestamp = "", "", nil
	}
	st.Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionReconciliation, flinkv1beta1.ErrorReasonNoFinalSavepoint, msg)
	r.Recorder.Event(s.job, corev1.EventTypeWarning, string(lifecycle.ReasonNoFinalSavepoint), msg)
}

// reasonCleanupFailed is the Warning event reason while a deletion waits (upstream's).
const reasonCleanupFailed = "CleanupFailed"

// runConfiguration is the configuration a run of spec's job is submitted with: the job's own
// options, and the job defaults upstream submits (flinkconf.ApplyJobDefaults) where neither
// the job nor its session sets them. Without the checkpoint retention, a last-state upgrade
// cancelled the job, Flink deleted its checkpoints with it, and the new run could not restore
// the latest one.
func (s *jobScope) runConfiguration(spec *flinkv1beta1.FlinkSessionJobSpec) (map[string]string, error) {
	own, err := spec.FlinkConfiguration.Flatten()
	if err != nil {
		return nil, err
	}
	effective := flinkconf.Config{}
	for k, v := range s.conf {
		effective[k] = v
	}
	for k, v := range own {
		effective[k] = v
	}
	flinkconf.ApplyJobDefaults(effective, s.job.Name, spec.Job)
	run := map[string]string{}
	for k, v := range own {
		run[k] = v
	}
	for k, v := range effective {
		if _, set := s.conf[k]; !set {
			run[k] = v // a default the session does not set
		}
	}
	return run, nil
}

// jobConfig is the session's configuration with the job's own options over it: what the job's
// operations (savepoints, snapshot resources, upgrade options) are configured by.
func (s *jobScope) jobConfig() flinkconf.Config {
	conf := flinkconf.Config{}
	for k, v := range s.conf {
		conf[k] = v
	}
	if own, err := s.job.Spec.FlinkConfiguration.Flatten(); err == nil {
		for k, v := range own {
			conf[k] = v
		}
	}
	return conf
}

// snapshots takes the running job's manual (nonce) and periodic savepoints and checkpoints, as
// the deployments' (FlinkDeploymentReconciler.snapshots): as FlinkStateSnapshot resources, or
// in upstream's legacy status-field mode (jobs/legacysnapshots.go) when the job's configuration (its
// session's with its own over it) sets kubernetes.operator.snapshot.resource.enabled to false.
// inFlight says a legacy-mode snapshot is not done yet.
func (r *FlinkSessionJobReconciler) snapshots(ctx context.Context, s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec) (inFlight bool, err error) {
	if s.status().JobStatus.State != flinkv1beta1.JobStatusRunning || desired.Job == nil {
		return false, nil
	}
	conf := s.jobConfig()
	if jobs.SnapshotResourcesEnabled(conf) {
		return false, jobs.RequestSnapshots(ctx, r.Client, r.Recorder, r.jobSnapshots(ctx, s, desired), time.Now())
	}
	return r.legacySnapshots(s, desired, conf).Run(ctx)
}

// awaitPendingSavepoint says whether a spec change waits for a manual or periodic savepoint in
// flight (legacy snapshot mode; legacySnapshots.awaitPending), as for deployments.
func (r *FlinkSessionJobReconciler) awaitPendingSavepoint(ctx context.Context, s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec) (bool, error) {
	conf := s.jobConfig()
	if jobs.SnapshotResourcesEnabled(conf) || desired.Job == nil {
		return false, nil
	}
	return r.legacySnapshots(s, desired, conf).AwaitPending(ctx, s.status().JobStatus.State == flinkv1beta1.JobStatusRunning)
}

// legacySnapshots is the session job for legacy-mode snapshots, on its session's JobManager.
func (r *FlinkSessionJobReconciler) legacySnapshots(s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec, conf flinkconf.Config) *jobs.LegacySnapshots {
	return &jobs.LegacySnapshots{Owner: s.job, Status: &s.status().CommonStatus,
		Deployed: func() *flinkv1beta1.JobSpec { return s.Deployed.Job }, Desired: desired.Job,
		Conf: conf, OperatorConf: r.Defaults.Operator, MinPeriodic: jobs.MinPeriodicInterval(r.Intervals), Recorder: r.Recorder,
		Flink:        func(context.Context) (*flink.Client, error) { return s.flink, nil },
		RecordNonces: func() error { return s.recordNonces(desired) },
		Persist:      func(ctx context.Context) error { return r.persistJob(ctx, s) }}
}

// recordNonces stores the trigger nonces of desired in the last reconciled spec (jobRecord.recordNonces).
func (s *jobScope) recordNonces(desired *flinkv1beta1.FlinkSessionJobSpec) error {
	return s.RecordNonces(&s.job.Status.CommonStatus, s.job.Generation, desired)
}

// jobSnapshots describes the session job for snapshot resources; its options are the
// session's configuration with the job's own over it.
func (r *FlinkSessionJobReconciler) jobSnapshots(ctx context.Context, s *jobScope, desired *flinkv1beta1.FlinkSessionJobSpec) jobs.JobSnapshots {
	conf := s.jobConfig()
	j := jobs.JobSnapshots{Owner: s.job, Kind: flinkv1beta1.JobKindFlinkSessionJob, Deployed: s.Deployed.Job, Desired: desired.Job,
		MinPeriodic: jobs.MinPeriodicInterval(r.Intervals),
		Status:      &s.status().JobStatus, Conf: conf, ShardLabels: shard.Labels(r.Shard, s.job.Labels),
		RecordNonces: func() error { return s.recordNonces(desired) },
		Persist:      func() error { return r.persistJob(ctx, s) }}
	if j.Deployed == nil {
		j.Deployed = &flinkv1beta1.JobSpec{}
	}
	if j.Desired == nil {
		j.Desired = &flinkv1beta1.JobSpec{}
	}
	return j
}

// jobSpecChanged is jobs.SessionJobSpecChanged.
func jobSpecChanged(deployed, desired *flinkv1beta1.FlinkSessionJobSpec) bool {
	return jobs.SessionJobSpecChanged(deployed, desired)
}

// parseHeaders reads Flink's map syntax "k1:v1,k2:v2".
func parseHeaders(raw string) (map[string]string, error) {
	return native.ParseMap(raw, options.ArtifactHeaders.Key)
}
