package flinkdeployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/hastore"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/metrics"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// deleteCluster starts deleting the cluster (and its HA metadata unless keepHA) and reports
// whether it is gone. A JobManager Deployment whose pods cannot go is waited for at most
// kubernetes.operator.resource.cleanup.timeout, as upstream's deleteBlocking. Nothing is deleted
// while the leader lease is not held (clients.Factory.Fence): the cluster may be the one another
// replica, leading now, has just deployed.
func (r *FlinkDeploymentReconciler) deleteCluster(ctx context.Context, s *scope, keepHA bool) (bool, error) {
	if err := r.Flink.Fenced(ctx, "delete the cluster "+s.dep.Namespace+"/"+s.dep.Name); err != nil {
		return false, err
	}
	var conf flinkconf.Config
	if running := s.running(); running != nil {
		conf, _ = r.config(s, running)
	}
	// Validated at admission; an invalid value falls back to upstream's Foreground.
	propagation, _ := native.ParseDeletionPropagation(options.DeletionPropagation.Get(conf))
	gone, err := native.DeleteCluster(ctx, r.Client, s.dep.Namespace, s.dep.Name, native.DeleteOptions{KeepHAData: keepHA, Owner: s.dep.UID, Objects: r.clusterObjects(), Live: r.APIReader,
		WaitAtMost: options.ResourceCleanupTimeout.Get(conf), Propagation: propagation})
	if err != nil || !gone || keepHA {
		return gone, err
	}
	if err := r.deleteHAMetadata(ctx, s, conf); err != nil {
		return false, err
	}
	return true, nil
}

// flinkCleanupWait is how long to leave the cluster to Flink's cleanup after its job ended
// (jobs.FlinkCleanupWait), with the running cluster's configuration and the cache's ConfigMaps.
func (r *FlinkDeploymentReconciler) flinkCleanupWait(ctx context.Context, s *scope) (time.Duration, error) {
	st, running := s.status(), s.running()
	if running == nil || st.JobStatus.JobID == "" || st.JobManagerDeploymentStatus == flinkv1beta1.JobManagerMissing {
		return 0, nil
	}
	conf, err := r.config(s, running)
	if err != nil || !conf.HAEnabled() || hastore.KindOf(conf) != hastore.KindKubernetes {
		return 0, nil //nolint:nilerr // a configuration that cannot be built has no HA to wait for
	}
	left, err := native.HAConfigMapExists(ctx, r.Client, s.dep.Namespace, s.dep.Name, native.JobHAConfigMapName(s.dep.Name, st.JobStatus.JobID))
	if err != nil {
		return 0, err
	}
	return jobs.FlinkCleanupWait(&st.JobStatus, true, left, time.Now()), nil
}

// upgradeTargetChanged: the spec differs from the recorded upgrade target in what restarts the
// job or in how the upgrade is carried out.
func upgradeTargetChanged(recorded, desired *flinkv1beta1.FlinkDeploymentSpec) bool {
	return jobs.SpecChanged(recorded, desired) || (desired.Job != nil && jobs.UpgradeModeOf(recorded.Job) != jobs.UpgradeModeOf(desired.Job))
}

// startUpgrade writes the new spec as UPGRADING before anything is touched.
func (r *FlinkDeploymentReconciler) startUpgrade(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec) error {
	st := s.status()
	r.Recorder.Event(s.dep, corev1.EventTypeNormal, reconciler.ReasonSpecChanged, jobs.SpecChangedMessage("FlinkDeploymentSpec", s.Deployed, desired))
	if d := s.Deployed.Job; d != nil && d.State != flinkv1beta1.JobStateSuspended && !reconciler.IsTerminal(st.JobStatus.State) {
		// The running job is about to be stopped, for an upgrade as for a suspend (upstream
		// emits this for every stop that is not a no-op).
		r.Recorder.Event(s.dep, corev1.EventTypeNormal, reconciler.ReasonSuspended, jobs.MessageSuspending)
	}
	// upgradeSavepointPath is what the next deployment restores from; set it for this upgrade.
	if desired.Job != nil {
		// A stateless job's upgradeSavepointPath only ever holds a path the user chose
		// (initialSavepointPath), which planUpgrade restores.
		switch {
		case jobs.RedeployRequested(s.Deployed.Job, desired.Job):
			st.JobStatus.UpgradeSavepointPath = desired.Job.InitialSavepointPath
		case jobs.UpgradeModeOf(desired.Job) == flinkv1beta1.UpgradeModeStateless:
			st.JobStatus.UpgradeSavepointPath = ""
		case jobRunning(st):
			st.JobStatus.UpgradeSavepointPath = "" // a fresh savepoint or checkpoint is taken below
		}
	}
	if err := s.recordDeployed(*desired, flinkv1beta1.ReconciliationUpgrading); err != nil {
		return err
	}
	return r.persist(ctx, s)
}

func (r *FlinkDeploymentReconciler) continueUpgrade(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec) (ctrl.Result, error) {
	st := s.status()
	if s.partlyDeployed {
		// This attempt's cluster was applied in part: apply it again, as recorded (job id,
		// restore path), instead of taking it for a cluster to stop.
		log.FromContext(ctx).Info("the cluster of this deployment attempt was applied in part; applying it again")
		return r.deploy(ctx, s, desired, st.JobStatus.UpgradeSavepointPath, true)
	}
	conf, err := r.config(s, desired)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A session cluster's HA metadata holds its session jobs' graphs and checkpoint pointers:
	// it is kept, so the new JobManager recovers every job from its latest checkpoint
	// (upstream's SessionReconciler deletes the cluster without its HA data).
	plan := jobs.UpgradePlan{Stop: jobs.StopNone, Restore: jobs.RestoreLastState, Reason: "session cluster: its jobs recover from HA metadata"}
	var situation jobs.UpgradeSituation
	if desired.Job != nil {
		situation, err = r.upgradeSituation(ctx, s, desired, conf)
		if err != nil {
			return ctrl.Result{}, err
		}
		plan = jobs.PlanUpgrade(situation)
	}
	log.FromContext(ctx).V(1).Info("continuing upgrade", "jobManager", st.JobManagerDeploymentStatus, "job", st.JobStatus.State,
		"restore", st.JobStatus.UpgradeSavepointPath, "stop", plan.Stop, "restoreMode", plan.Restore, "why", plan.Reason)

	// A stateless job stops with its cluster. After any other stop, the next step plans again
	// from what the stop left (a FINISHED job with its savepoint, a CANCELED one with its
	// checkpoint).
	stops := plan.Stop == jobs.StopSavepoint || plan.Stop == jobs.StopCancel || jobs.UpgradeSavepointInFlight(&st.CommonStatus)
	if desired.Job != nil && (stops || plan.Stop != jobs.StopStateless) {
		stop := r.jobStop(s, conf)
		progress, err := stop.Run(ctx, plan)
		switch {
		case err != nil:
			return ctrl.Result{}, err
		case progress == jobs.StopPending:
			return ctrl.Result{RequeueAfter: stop.PendingRecheck(time.Now(), r.Intervals.ProgressCheck)}, nil
		case progress == jobs.StopNeedsUser:
			// Nothing is touched; a new spec (initialSavepointPath + savepointRedeployNonce) resolves it.
			return ctrl.Result{RequeueAfter: r.Intervals.Reconcile}, nil
		}
		if stops {
			return reconciler.RequeueSoon(), nil
		}
	}
	keepHA := plan.Restore == jobs.RestoreLastState
	if wait, err := r.flinkCleanupWait(ctx, s); err != nil || wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, err
	}

	// A JobManager that went before this step (an earlier call that waited for it, or it was
	// lost) still leaves its HA metadata to delete: native.DeleteCluster deletes the HA
	// ConfigMaps only once the JobManager is gone, and deleteCluster then what is in ZooKeeper.
	if st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerMissing || !keepHA {
		gone, err := r.deleteCluster(ctx, s, keepHA)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !gone {
			return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, nil
		}
		st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerMissing
	}

	if desired.Job != nil && desired.Job.State == flinkv1beta1.JobStateSuspended {
		if !reconciler.IsTerminal(st.JobStatus.State) {
			st.JobStatus.State = flinkv1beta1.JobStatusFinished
		}
		s.recordProgress(flinkv1beta1.ReconciliationDeployed)
		st.ReconciliationStatus.LastStableSpec = st.ReconciliationStatus.LastReconciledSpec
		return ctrl.Result{RequeueAfter: r.Intervals.Reconcile}, nil
	}
	restore := ""
	switch {
	case plan.Restore == jobs.RestoreSavepoint:
		// Refreshed when the cancelled job's latest checkpoint was read again above.
		restore = recordedRestorePath(st, situation.Mode)
	case plan.Restore == jobs.RestoreLastState && desired.Job != nil:
		if restore, err = r.prepareLastStateRestore(ctx, s, conf); err != nil {
			return ctrl.Result{}, err
		}
	}
	return r.deploy(ctx, s, desired, restore, keepHA)
}

// jobStop is the stop executor for the deployment's job, on the JobManager as observed.
func (r *FlinkDeploymentReconciler) jobStop(s *scope, conf flinkconf.Config) *jobs.JobStop {
	x := &jobs.JobStop{
		Flink:      func(ctx context.Context) (*flink.Client, error) { return r.RestClient(ctx, s) },
		JobManager: s.status().JobManagerDeploymentStatus,
		Status:     &s.status().CommonStatus,
		Owner:      s.dep,
		Recorder:   r.Recorder,
		Persist:    func(ctx context.Context) error { return r.persist(ctx, s) },
		Format:     jobs.SavepointFormat(conf),
		OwnState:   s.dep.Spec.Job != nil && jobs.UpgradeModeOf(s.dep.Spec.Job) != flinkv1beta1.UpgradeModeStateless,
		UpgradeSnapshot: func(ctx context.Context, path string, triggeredAt time.Time) error {
			return jobs.RecordUpgradeSnapshot(ctx, r.Client, r.Recorder, r.jobSnapshots(ctx, s, s.Deployed, conf), path, triggeredAt)
		},
	}
	x.CancelTimeout = options.CancelTimeout.Get(conf)
	return x
}

// prepareLastStateRestore readies the HA metadata of a cluster that is gone for a last-state
// deploy, as upstream does: the job graphs are removed, so the new JobManager runs the new
// spec's job graph (parallelism, configuration) under the same job id and restores the job's
// latest checkpoint from the HA checkpoint store, instead of recovering the old graph. When
// that store holds a checkpoint, the restore path is the last-state sentinel: should the HA
// metadata vanish before the JobManager reads it, the job fails to start rather than starting
// with empty state.
//
// conf is the configuration being deployed: its HA store is where the new JobManager looks.
func (r *FlinkDeploymentReconciler) prepareLastStateRestore(ctx context.Context, s *scope, conf flinkconf.Config) (string, error) {
	store, err := r.haStore(s, conf)
	if err != nil {
		return "", err
	}
	if err := store.DeleteJobGraphs(ctx); err != nil {
		return "", err
	}
	has, err := store.HasCheckpoint(ctx)
	if err != nil || !has {
		return "", err
	}
	return flinkv1beta1.LastStateSentinelPath, nil
}

// upgradeSituation gathers the inputs of planUpgrade.
func (r *FlinkDeploymentReconciler) upgradeSituation(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) (jobs.UpgradeSituation, error) {
	st := s.status()
	deployedConf, err := r.config(s, s.Deployed)
	if err != nil {
		return jobs.UpgradeSituation{}, err
	}
	in := jobs.UpgradeSituation{
		Mode: jobs.UpgradeModeOf(desired.Job), Job: st.JobStatus.State, JobManager: st.JobManagerDeploymentStatus,
		HAEnabled:           conf.HAEnabled() && deployedConf.HAEnabled(),
		SavepointDir:        conf.Get("execution.checkpointing.savepoint-dir", conf.Get("state.savepoints.dir", "")) != "",
		FlinkVersionChanged: s.Deployed.FlinkVersion != "" && desired.FlinkVersion != s.Deployed.FlinkVersion,
		LastStateFallback:   options.LastStateFallback.Get(conf),
		CancelForLastState:  options.LastStateCancel.Get(conf),
		RestorePath:         recordedRestorePath(st, jobs.UpgradeModeOf(desired.Job)),
		NothingRan:          s.FirstDeployment && st.ReconciliationStatus.State == flinkv1beta1.ReconciliationUpgrading,
	}
	if in.HAEnabled && in.Mode != flinkv1beta1.UpgradeModeStateless {
		// Read where the new configuration's JobManager will look for it (the same store as
		// the deployed one's unless HA moved, and then there is nothing to restore from).
		store, err := r.haStore(s, conf)
		if err != nil {
			return jobs.UpgradeSituation{}, err
		}
		if in.HAMetadata, err = store.HasJobMetadata(ctx); err != nil {
			return jobs.UpgradeSituation{}, err
		}
	}
	if maxAge := options.MaxCheckpointAge.Get(conf); maxAge > 0 && in.Mode == flinkv1beta1.UpgradeModeLastState && jobRunning(st) &&
		st.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady {
		if in.Checkpoint, err = r.checkpointFreshness(ctx, s, maxAge, time.Now()); err != nil {
			return jobs.UpgradeSituation{}, err
		}
	}
	return in, nil
}

// checkpointFreshness compares the running job's latest checkpoint with the maximum age a
// last-state upgrade accepts (upstream's changeLastStateIfCheckpointTooOld): a job started
// within it, or a checkpoint completed within it, is fresh; otherwise a checkpoint in progress
// is waited for, and without one a savepoint is taken.
func (r *FlinkDeploymentReconciler) checkpointFreshness(ctx context.Context, s *scope, maxAge time.Duration, now time.Time) (jobs.CheckpointFreshness, error) {
	cl, err := r.RestClient(ctx, s)
	if err != nil {
		return jobs.CheckpointFresh, err
	}
	within := func(ms int64) bool { return ms > 0 && now.Sub(time.UnixMilli(ms)) < maxAge }
	details, err := cl.JobDetails(ctx, s.status().JobStatus.JobID)
	if err != nil {
		return jobs.CheckpointFresh, fmt.Errorf("job start time for the checkpoint age check: %w", err)
	}
	if within(details.StartTime) {
		return jobs.CheckpointFresh, nil
	}
	stats, err := cl.CheckpointStatistics(ctx, s.status().JobStatus.JobID)
	if err != nil {
		return jobs.CheckpointFresh, fmt.Errorf("checkpoints for the checkpoint age check: %w", err)
	}
	switch {
	case stats.Latest.Completed != nil && within(max(stats.Latest.Completed.LatestAck, stats.Latest.Completed.TriggerTimestamp)):
		return jobs.CheckpointFresh, nil
	case stats.Counts.InProgress > 0:
		return jobs.CheckpointPending, nil
	}
	return jobs.CheckpointTooOld, nil
}

// recordedRestorePath is the savepoint or checkpoint the status says the job restores from,
// with the Apache operator's conventions understood (resources it managed are adopted as they
// are): its last-state sentinel means "from HA metadata", not a path; a savepoint-mode job with
// no recorded path restores the legacy savepointInfo.lastSavepoint, as upstream's restoreJob does.
func recordedRestorePath(st *flinkv1beta1.FlinkDeploymentStatus, mode flinkv1beta1.UpgradeMode) string {
	path := st.JobStatus.UpgradeSavepointPath
	if path == flinkv1beta1.LastStateSentinelPath {
		return ""
	}
	if info := st.JobStatus.SavepointInfo; path == "" && mode == flinkv1beta1.UpgradeModeSavepoint && !jobRunning(st) &&
		info != nil && info.LastSavepoint != nil {
		return info.LastSavepoint.Location
	}
	return path
}

// deploy records what is about to be deployed (spec, job id, restore path), then applies the
// cluster's objects. keepJobID keeps the job id (first deployment, or a last-state restore
// through HA, which finds the job's checkpoints by its id).
func (r *FlinkDeploymentReconciler) deploy(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, restore string, keepJobID bool) (ctrl.Result, error) {
	st := s.status()
	switch {
	case desired.Job == nil:
	case flinkconf.UserJobID(desired) != "":
		st.JobStatus.JobID = flinkconf.UserJobID(desired) // the user's fixed job id wins
	case !keepJobID || st.JobStatus.JobID == "":
		st.JobStatus.JobID = reconciler.DeterministicJobID(string(s.dep.UID), st.ReconciliationStatus.ReconciliationTimestamp)
	}
	if desired.Job != nil {
		st.JobStatus.State = flinkv1beta1.JobStatusReconciling
		st.JobStatus.UpgradeSavepointPath = restore
	}
	st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerDeploying
	s.recordProgress(flinkv1beta1.ReconciliationUpgrading)
	if err := r.persist(ctx, s); err != nil {
		return ctrl.Result{}, err
	}

	dep := s.dep.DeepCopy()
	dep.Spec = *desired
	// The JobManager is stamped with the generation of the spec it runs (the target's), which
	// observe compares to tell a finished upgrade from one still to do.
	dep.Generation = st.ObservedGeneration
	// The result stores are new for every recorded deployment attempt, and the same while
	// that attempt is retried (the attempt is the recorded reconciliation timestamp).
	opts := flinkconf.BuildOptions{JobID: st.JobStatus.JobID, RestorePath: restore, Attempt: deployAttemptID(st),
		ResultStoreID: reconciler.DeterministicJobID(string(s.dep.UID)+"/result-store", st.ReconciliationStatus.ReconciliationTimestamp)}
	if desired.Job != nil && desired.Job.AllowNonRestoredState != nil {
		opts.AllowNonRestoredState = *desired.Job.AllowNonRestoredState
	}
	cluster, err := native.Build(dep, r.Defaults, opts)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("build cluster: %w", err)
	}
	if err := native.Apply(ctx, r.Client, r.clusterObjects(), cluster); err != nil {
		if foreign, ok := native.IsForeignObject(err); ok {
			return r.refuseForeignObject(s, foreign), nil
		}
		return ctrl.Result{}, err
	}
	msg := jobs.MessageSubmit
	if restore != "" {
		msg += " from " + restore
	}
	r.Recorder.Event(s.dep, corev1.EventTypeNormal, reconciler.ReasonSubmit, msg)
	s.recordProgress(flinkv1beta1.ReconciliationDeployed)
	return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, nil
}

// clusterObjects is ClusterObjects, or liveReader when none is set.
func (r *FlinkDeploymentReconciler) clusterObjects() client.Reader {
	if r.ClusterObjects != nil {
		return r.ClusterObjects
	}
	return r.liveReader()
}

// liveReader is APIReader, or the client when none is set (a reconciler driven directly).
func (r *FlinkDeploymentReconciler) liveReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// refuseForeignObject reports that an object of the cluster's names belongs to someone else:
// nothing was written, the object is left as it is, and the deployment is tried again at the
// reconcile interval (its owner may remove or rename it). Not returned as an error, so it is not
// retried with back-off nor reported a second time as a reconcile failure.
func (r *FlinkDeploymentReconciler) refuseForeignObject(s *scope, foreign *native.ForeignObjectError) ctrl.Result {
	msg := foreign.Error()
	s.status().Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionReconciliation, flinkv1beta1.ErrorReasonForeignObject, msg)
	r.Recorder.Event(s.dep, corev1.EventTypeWarning, reconciler.ReasonForeignObject, msg)
	return ctrl.Result{RequeueAfter: r.Intervals.Reconcile}
}

// cleanup runs on deletion: deletionPhases, once the DELETING lifecycle state is written.
func (r *FlinkDeploymentReconciler) cleanup(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.dep, DeploymentFinalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.persist(ctx, s); err != nil { // lifecycle DELETING
		return ctrl.Result{}, err
	}
	return jobs.RunPhases(ctx, &pass{scope: s}, r.deletionPhases())
}

// deletionPhases are the phases of a deletion, in order: the job's state kept when asked for,
// the session's jobs gone, then the cluster and its HA metadata, then the finalizer.
func (r *FlinkDeploymentReconciler) deletionPhases() []phase {
	return []phase{
		{Name: "savepointOnDeletion", Run: r.savepointOnDeletion},
		{Name: "awaitSessionJobs", Run: r.awaitSessionJobs},
		{Name: "deleteCluster", Run: r.deleteClusterOnDeletion},
		{Name: "removeFinalizer", Run: r.removeFinalizer},
	}
}

// savepointOnDeletion is kubernetes.operator.job.savepoint-on-deletion: the job's state is kept
// in a savepoint before its cluster goes. The step is decided by lifecycle.DecideDeletion: a
// savepoint that fails, or a JobManager that cannot be asked, is waited for until the cleanup
// timeout after the deletion started (metadata.deletionTimestamp, so a restarted operator does
// not start it again); then, or at once when no JobManager runs, the deployment goes without it
// (withoutFinalSavepoint), never silently.
func (r *FlinkDeploymentReconciler) savepointOnDeletion(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	if p.dep.Spec.Job == nil || p.Deployed == nil || p.Deployed.Job == nil {
		return jobs.Next(), nil
	}
	conf, err := r.config(p.scope, p.Deployed)
	if err != nil {
		return jobs.PhaseResult{}, err
	}
	st := p.status()
	if !options.SavepointOnDeletion.Get(conf) || !finalSavepointDue(st) {
		return jobs.Next(), nil
	}
	timeout := options.ResourceCleanupTimeout.Get(conf)
	block := finalSavepointBlock(st)
	decision := lifecycle.DecideDeletion(lifecycle.DeletionObserved{Step: lifecycle.StepFinalSavepoint, Blocked: block,
		Elapsed: time.Since(p.dep.DeletionTimestamp.Time), Timeout: timeout})
	if decision.Action == lifecycle.DeletionGiveUp {
		return jobs.Next(), r.withoutFinalSavepoint(ctx, p, block, timeout)
	}
	progress, err := r.jobStop(p.scope, conf).WithSavepoint(ctx, options.DrainOnSavepointDeletion.Get(conf))
	if err != nil {
		// Not returned: a JobManager that does not answer would be retried with a growing
		// back-off, past the bound; it is asked again at the progress-check interval, and at
		// the bound at the latest.
		r.Recorder.Eventf(p.dep, corev1.EventTypeWarning, reasonCleanupFailed,
			"Cannot take the savepoint on deletion yet (given up %s after the deletion started): %v", decision.Bound, err)
		return jobs.Acted(ctrl.Result{RequeueAfter: decision.Requeue(r.Intervals.ProgressCheck)}), nil
	}
	if progress != jobs.StopDone {
		return jobs.Acted(ctrl.Result{RequeueAfter: decision.Requeue(r.Intervals.ProgressCheck)}), nil
	}
	return jobs.Acted(reconciler.RequeueSoon()), nil
}

// reasonCleanupFailed is upstream's Warning event reason while a deletion waits.
const reasonCleanupFailed = "CleanupFailed"

// finalSavepointDue: the job may still run, or ran until its JobManager went, and no final
// savepoint was taken or given up yet: it runs, a savepoint of it is in flight, or it was not
// seen to end (RECONCILING) while its JobManager runs but did not say how the job is, or is
// missing or failed. In the last two cases no savepoint can be taken, and the deletion says so
// at once (finalSavepointBlock: lifecycle.BlockGone) instead of going without a word. The status
// is the one last observed: a deletion does not observe again.
func finalSavepointDue(st *flinkv1beta1.FlinkDeploymentStatus) bool {
	if flinkv1beta1.ErrorReason(st.Error) == flinkv1beta1.ErrorReasonNoFinalSavepoint {
		return false // given up already, and said so
	}
	info := st.JobStatus.SavepointInfo
	if info != nil && info.TriggerID != "" && info.TriggerType == flinkv1beta1.SnapshotTriggerUpgrade {
		return true
	}
	switch st.JobStatus.State {
	case flinkv1beta1.JobStatusRunning:
		return true
	case flinkv1beta1.JobStatusReconciling:
		switch st.JobManagerDeploymentStatus {
		case flinkv1beta1.JobManagerReady, flinkv1beta1.JobManagerDeployedNotReady, flinkv1beta1.JobManagerMissing, flinkv1beta1.JobManagerError:
			return true
		}
	}
	return false
}

// finalSavepointBlock is why the final savepoint is not taken yet, as the status says.
func finalSavepointBlock(st *flinkv1beta1.FlinkDeploymentStatus) lifecycle.DeletionBlock {
	switch st.JobManagerDeploymentStatus {
	case flinkv1beta1.JobManagerMissing, flinkv1beta1.JobManagerError:
		return lifecycle.BlockGone
	case flinkv1beta1.JobManagerReady:
		if flinkv1beta1.ErrorReason(st.Error) == flinkv1beta1.ErrorReasonUpgradeFailed {
			return lifecycle.BlockFailed
		}
		return lifecycle.BlockInProgress
	default:
		return lifecycle.BlockUnreachable
	}
}

// withoutFinalSavepoint records that the deployment goes without the savepoint on deletion the
// user asked for: status.error (reason NoFinalSavepoint) is written before the cluster is
// deleted, so it is the status the resource shows last, and a Warning event says what was
// skipped, why, and what state is left.
func (r *FlinkDeploymentReconciler) withoutFinalSavepoint(ctx context.Context, p *pass, block lifecycle.DeletionBlock, timeout time.Duration) error {
	st := p.status()
	var why string
	switch block {
	case lifecycle.BlockGone:
		why = fmt.Sprintf("its JobManager is %s, so no savepoint can be taken", st.JobManagerDeploymentStatus)
	case lifecycle.BlockFailed:
		why = fmt.Sprintf("the savepoint kept failing for %s (kubernetes.operator.resource.cleanup.timeout): %s", timeout, flinkv1beta1.ErrorMessage(st.Error))
	case lifecycle.BlockUnreachable:
		why = fmt.Sprintf("its JobManager was %s for %s (kubernetes.operator.resource.cleanup.timeout)", st.JobManagerDeploymentStatus, timeout)
	default:
		why = fmt.Sprintf("the savepoint did not complete within %s (kubernetes.operator.resource.cleanup.timeout)", timeout)
	}
	kept := "there is no earlier savepoint"
	if info := st.JobStatus.SavepointInfo; info != nil && info.LastSavepoint != nil && info.LastSavepoint.Location != "" {
		kept = "the last savepoint taken is " + info.LastSavepoint.Location
	}
	msg := fmt.Sprintf("No final savepoint of job %s: %s. The cluster is deleted without one; the job's state since its last savepoint or retained checkpoint is not kept (%s)",
		st.JobStatus.JobID, why, kept)
	if info := st.JobStatus.SavepointInfo; info != nil && info.TriggerType == flinkv1beta1.SnapshotTriggerUpgrade {
		// The savepoint given up is no longer followed: nothing waits for it any more.
		info.TriggerID, info.TriggerType, info.TriggerTimestamp = "", "", nil
	}
	st.Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionReconciliation, flinkv1beta1.ErrorReasonNoFinalSavepoint, msg)
	if err := r.persist(ctx, p.scope); err != nil {
		return fmt.Errorf("record that there is no final savepoint: %w", err)
	}
	r.Recorder.Event(p.dep, corev1.EventTypeWarning, string(lifecycle.ReasonNoFinalSavepoint), msg)
	return nil
}

// awaitSessionJobs: a session cluster outlives its session jobs (upstream's
// kubernetes.operator.session.deletion.block-on-session-jobs, default true), since deleting it
// first would strand their state: its FlinkSessionJobs go first, then the jobs no
// FlinkSessionJob manages are waited for (awaitUnmanagedJobs), then the session goes.
//
// Upstream waits for the user to delete the session jobs, without end. A deleted resource never
// comes back, so that wait can only end with the user deleting them or removing a finalizer by
// hand (which strands the jobs); here, once the cleanup timeout has passed since the session's
// deletion started (lifecycle.DecideDeletion), the operator deletes them itself, and each goes
// within its own bounds (its job stopped, with a savepoint on deletion when asked for).
func (r *FlinkDeploymentReconciler) awaitSessionJobs(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	if p.dep.Spec.Job != nil {
		return jobs.Next(), nil
	}
	var sessionJobs flinkv1beta1.FlinkSessionJobList
	var reader client.Reader = r.Client
	if r.Shard != nil {
		reader = r.liveReader() // the cache holds this shard's session jobs, not all of this session's
	}
	if err := reader.List(ctx, &sessionJobs, client.InNamespace(p.dep.Namespace)); err != nil {
		return jobs.PhaseResult{}, fmt.Errorf("list session jobs: %w", err)
	}
	var waiting []string
	var notDeleted []*flinkv1beta1.FlinkSessionJob
	for i, j := range sessionJobs.Items {
		if j.Spec.DeploymentName == p.dep.Name {
			waiting = append(waiting, j.Name)
			if j.DeletionTimestamp.IsZero() {
				notDeleted = append(notDeleted, &sessionJobs.Items[i])
			}
		}
	}
	timeout := r.cleanupTimeout(p.scope)
	elapsed := time.Since(p.dep.DeletionTimestamp.Time)
	if len(waiting) > 0 {
		decision := lifecycle.DecideDeletion(lifecycle.DeletionObserved{Step: lifecycle.StepSessionJobs, Blocked: lifecycle.BlockDependents,
			Elapsed: elapsed, Timeout: timeout})
		if decision.Action == lifecycle.DeletionGiveUp && len(notDeleted) > 0 {
			if err := r.deleteSessionJobs(ctx, p, notDeleted, timeout); err != nil {
				return jobs.PhaseResult{}, err
			}
			return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), nil
		}
		if len(notDeleted) == 0 {
			// All of them are being deleted (by the user, or by this deletion at its bound):
			// each ends within its own bounds.
			r.Recorder.Eventf(p.dep, corev1.EventTypeWarning, reasonCleanupFailed,
				"Waiting for the session jobs of this session cluster to go: %s (being deleted)", strings.Join(waiting, ", "))
		} else {
			r.Recorder.Eventf(p.dep, corev1.EventTypeWarning, reasonCleanupFailed,
				"Waiting for the session jobs of this session cluster to be deleted: %s (the operator deletes them %s after the deletion started)",
				strings.Join(waiting, ", "), decision.Bound)
		}
		return jobs.Acted(ctrl.Result{RequeueAfter: decision.Requeue(r.Intervals.ProgressCheck)}), nil
	}
	running, err := r.awaitUnmanagedJobs(ctx, p.scope)
	if err != nil || len(running) == 0 {
		return jobs.Next(), err
	}
	decision := lifecycle.DecideDeletion(lifecycle.DeletionObserved{Step: lifecycle.StepUnmanagedJobs, Blocked: lifecycle.BlockDependents,
		Elapsed: elapsed, Timeout: timeout})
	if decision.Action == lifecycle.DeletionGiveUp {
		r.Recorder.Eventf(p.dep, corev1.EventTypeWarning, string(decision.Reason),
			"Deleting the session cluster with jobs no FlinkSessionJob manages still running after %s (kubernetes.operator.resource.cleanup.timeout): [%s]; they end with it, without a savepoint, and their HA metadata is deleted",
			timeout, strings.Join(running, ", "))
		return jobs.Next(), nil
	}
	r.Recorder.Eventf(p.dep, corev1.EventTypeWarning, reasonCleanupFailed,
		"The session cluster has non terminated jobs [%s] that should be cancelled first (it is deleted with them %s after the deletion started)",
		strings.Join(running, ", "), decision.Bound)
	return jobs.Acted(ctrl.Result{RequeueAfter: decision.Requeue(r.Intervals.Reconcile)}), nil
}

// deleteSessionJobs deletes the FlinkSessionJobs a deleted session cluster waited for past its
// bound, and says so; the next reconciles wait for them to go.
func (r *FlinkDeploymentReconciler) deleteSessionJobs(ctx context.Context, p *pass, left []*flinkv1beta1.FlinkSessionJob, timeout time.Duration) error {
	names := make([]string, 0, len(left))
	for _, j := range left {
		if err := r.Client.Delete(ctx, j); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete session job %s of the deleted session cluster: %w", j.Name, err)
		}
		names = append(names, j.Name)
	}
	r.Recorder.Eventf(p.dep, corev1.EventTypeWarning, string(lifecycle.ReasonSessionJobsDeleted),
		"The session jobs of this session cluster were not deleted within %s (kubernetes.operator.resource.cleanup.timeout): deleting them: %s; each stops its job first",
		timeout, strings.Join(names, ", "))
	return nil
}

// cleanupTimeout is kubernetes.operator.resource.cleanup.timeout of the deployed spec (the
// default when nothing was deployed, or its configuration cannot be read).
func (r *FlinkDeploymentReconciler) cleanupTimeout(s *scope) time.Duration {
	var conf flinkconf.Config
	if running := s.running(); running != nil {
		conf, _ = r.config(s, running)
	}
	return options.ResourceCleanupTimeout.Get(conf)
}

// deleteClusterOnDeletion deletes the cluster with its HA metadata and waits until it is gone.
func (r *FlinkDeploymentReconciler) deleteClusterOnDeletion(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	gone, err := r.deleteCluster(ctx, p.scope, false)
	if err != nil {
		return jobs.PhaseResult{}, err
	}
	if !gone {
		return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), nil
	}
	r.Recorder.Event(p.dep, corev1.EventTypeNormal, reconciler.ReasonCleanup, "Cluster deleted")
	return jobs.Next(), nil
}

// removeFinalizer forgets what the reconciler keeps of the resource, then lets it go.
func (r *FlinkDeploymentReconciler) removeFinalizer(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	r.exceptions.Forget(p.dep.UID)
	r.Autoscaling.AutoscalerMetrics().Forget(p.dep.Namespace, metrics.KindDeployment, p.dep.Name)
	if err := r.Release(ctx, r.Client, p.dep, DeploymentFinalizer); err != nil {
		return jobs.PhaseResult{}, err
	}
	return jobs.Acted(ctrl.Result{}), nil
}

// awaitUnmanagedJobs are the jobs the deletion of a session cluster waits for: those no
// FlinkSessionJob manages (its FlinkSessionJobs are gone by now, so every job still running
// is one submitted another way: the CLI, the SQL gateway). Deleting the cluster would kill them
// and delete their HA metadata. As upstream's SessionReconciler.cleanupInternal, with
// kubernetes.operator.session.deletion.block-on-unmanaged-jobs (default true) from the deployed
// spec's configuration: a JobManager that is not ready, or that cannot list its jobs, does not
// keep the deletion (there is no job to wait for that could be told apart).
func (r *FlinkDeploymentReconciler) awaitUnmanagedJobs(ctx context.Context, s *scope) ([]string, error) {
	if s.Deployed == nil || s.status().JobManagerDeploymentStatus != flinkv1beta1.JobManagerReady {
		return nil, nil
	}
	conf, err := r.config(s, s.running())
	if err != nil {
		return nil, err
	}
	if !options.BlockOnUnmanagedJobs.Get(conf) {
		return nil, nil
	}
	cl, err := r.RestClient(ctx, s)
	if err != nil {
		log.FromContext(ctx).Info("cannot list the session's jobs before deleting it", "error", err.Error())
		return nil, nil
	}
	jobs, err := cl.JobsOverview(ctx)
	if err != nil {
		log.FromContext(ctx).Info("cannot list the session's jobs before deleting it", "error", err.Error())
		return nil, nil
	}
	return nonTerminalJobs(jobs), nil
}

// nonTerminalJobs are the ids of the jobs that can still run (not FINISHED, CANCELED or
// FAILED), in the order listed.
func nonTerminalJobs(jobs []flink.JobOverview) []string {
	var out []string
	for _, j := range jobs {
		if !j.State.IsGloballyTerminal() {
			out = append(out, j.ID)
		}
	}
	return out
}

func (r *FlinkDeploymentReconciler) requeueAfter(s *scope) time.Duration {
	switch s.status().JobManagerDeploymentStatus {
	case flinkv1beta1.JobManagerDeploying, flinkv1beta1.JobManagerDeployedNotReady:
		return r.Intervals.ProgressCheck
	}
	if s.dep.Spec.Job != nil && s.status().JobStatus.State != flinkv1beta1.JobStatusRunning && !reconciler.IsTerminal(s.status().JobStatus.State) {
		return r.Intervals.ProgressCheck
	}
	return r.Intervals.Reconcile
}

func jobRunning(st *flinkv1beta1.FlinkDeploymentStatus) bool {
	return st.JobStatus.State == flinkv1beta1.JobStatusRunning
}
