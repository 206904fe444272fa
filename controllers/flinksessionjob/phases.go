package flinksessionjob

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/metrics"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// A FlinkSessionJob reconcile is connect → observe → validate (reconcileSessionJob), then the
// phases below, in order, with jobs.RunPhases (jobs/phases.go), then the status
// (finishJob). As for deployments, a phase either acts, which ends the reconcile, or leaves the
// job to the phases after it; every action records its inputs in the status before it touches
// the session (write-ahead), so an operator restarted at any moment takes the same path again.
//
// The session job's states, from status.reconciliationStatus and the job on the session:
//
//	nothing reconciled yet, suspended → record the spec; nothing runs
//	session JobManager not ready      → wait (progress-check interval)
//	nothing reconciled yet            → deploy
//	DEPLOYED, spec unchanged          → unchangedJobPhases: (re)submit a job RECONCILING under the
//	                                    recorded job id (crash between the write-ahead and the
//	                                    submission, or a stateless job its session lost; a lost
//	                                    stateful job, "Job Not Found", waits), restart a FAILED
//	                                    one, take its snapshots
//	DEPLOYED, spec changed            → planSpecChange: record the new spec as UPGRADING with what
//	                                    it restores (write-ahead); or record nothing while the job
//	                                    is lost, or ended with no state known (manual restore)
//	UPGRADING                         → planUpgrade, the deployments' decision table, and jobStop,
//	                                    their stop executor: savepoint (stop-with-savepoint, trigger
//	                                    id first, path recorded), last-state (latest checkpoint
//	                                    recorded, cancel, read again once CANCELED), stateless and
//	                                    a savepoint the user named (cancel); then suspended:
//	                                    DEPLOYED (SUSPENDED); else deploy from what the plan restores
//	UPGRADING, waiting for the user   → a newer spec (the user's answer) replaces the target
//	DEPLOYED, not RUNNING within the  → with rollback enabled, ROLLING_BACK: the failed job is
//	readiness timeout after a change    stopped as planUpgrade decides and the last stable spec
//	                                    submitted from what it kept, then ROLLED_BACK (rollback.go)
//	ROLLED_BACK                       → the stable spec runs (resubmitted under its id while
//	                                    RECONCILING); a spec set back to it is recorded, any other
//	                                    change is an upgrade
//
// deploy records a new job id, the restore path and DEPLOYED with job state RECONCILING before
// the jar is uploaded and run; submitting an id Flink already runs counts as done.

// jobPass is what the phases of one session job reconcile share: the scope and the spec
// reconciled to (the validated spec with the autoscaler's overrides; nil on deletion).
type jobPass struct {
	*jobScope
	desired *flinkv1beta1.FlinkSessionJobSpec
}

// jobPhase is one step of a session job reconcile.
type jobPhase = jobs.PhaseOf[*jobPass]

// reconcileJob brings the session job to the validated spec target: the phases of
// jobSpecPhases, run in order on what observe found and the status recorded.
func (r *FlinkSessionJobReconciler) reconcileJob(ctx context.Context, s *jobScope, target *flinkv1beta1.FlinkSessionJobSpec) (ctrl.Result, error) {
	desired := target.DeepCopy()
	if err := r.applyAutoscaler(ctx, s, desired); err != nil {
		return ctrl.Result{}, err
	}
	return jobs.RunPhases(ctx, &jobPass{jobScope: s, desired: desired}, r.jobSpecPhases())
}

// jobSpecPhases are the phases of the reconcile of a validated session job spec, in the order
// they are tried.
func (r *FlinkSessionJobReconciler) jobSpecPhases() []jobPhase {
	return []jobPhase{
		// Created suspended: the spec is recorded, nothing runs.
		{Name: "createdSuspended", Run: r.createdSuspended},
		// The session's JobManager is not ready (or not reachable): wait for it.
		{Name: "awaitSession", Run: r.awaitSession},
		// Nothing submitted yet: submit, restoring initialSavepointPath.
		{Name: "firstSubmission", Run: r.firstSubmission},
		// ROLLING_BACK with the spec unchanged: the rollback goes on (a changed spec abandons it,
		// in recordChange).
		{Name: "continueRollback", Run: r.rollingBackJob},
		// ROLLED_BACK and the spec set back to the stable one: recorded without a restart.
		{Name: "rolledBack", Run: r.rolledBackJob},
		// A deployed job whose spec did not change: unchangedJobPhases.
		{Name: "unchanged", Run: r.unchangedJob},
		// The spec changed (or the user answered a job that waits for them): record it as the
		// upgrade target (write-ahead), unless a pending savepoint is waited for first.
		{Name: "recordChange", Run: r.recordJobChange},
		// Carry the recorded upgrade out: planUpgrade decides how the job stops and what is
		// restored, jobStop stops it, the target is submitted (upgradeJob).
		{Name: "upgrade", Run: r.upgradeJobPhase},
	}
}

// unchangedJobPhases look after a deployed session job whose spec did not change, in this order.
func (r *FlinkSessionJobReconciler) unchangedJobPhases() []jobPhase {
	return []jobPhase{
		// Not RUNNING within kubernetes.operator.deployment.readiness.timeout after a change, with
		// rollback enabled: ROLLING_BACK to the last stable spec, through the upgrade steps, then
		// ROLLED_BACK (rollback.go). When it cannot be rolled back, the reason is reported and
		// the rest goes on.
		{Name: "rollback", Run: r.rollbackJob},
		// RECONCILING under a recorded job id: submitted again (a crash between the write-ahead
		// and the submission, or a stateless job its session lost).
		{Name: "resubmit", Run: r.resubmit},
		// A FAILED job with kubernetes.operator.job.restart.failed is upgraded to the same spec.
		{Name: "restartFailed", Run: r.restartFailedJob},
		// Manual (nonce) and periodic savepoints and checkpoints of a running job.
		{Name: "snapshots", Run: r.takeJobSnapshots},
		// None of the above acted: the resource is settled, which the log says.
		jobs.SettledPhase(func(p *jobPass) client.ObjectKey { return client.ObjectKeyFromObject(p.job) }),
	}
}

// createdSuspended records a spec created suspended: there is nothing to run yet.
func (r *FlinkSessionJobReconciler) createdSuspended(_ context.Context, p *jobPass) (jobs.PhaseResult, error) {
	if p.Deployed != nil || p.desired.Job == nil || p.desired.Job.State != flinkv1beta1.JobStateSuspended {
		return jobs.Next(), nil
	}
	return jobs.Acted(ctrl.Result{}), p.recordJobSpec(*p.desired, flinkv1beta1.ReconciliationDeployed)
}

// awaitSession waits for the session's JobManager: nothing can be submitted, stopped or asked.
func (r *FlinkSessionJobReconciler) awaitSession(_ context.Context, p *jobPass) (jobs.PhaseResult, error) {
	if p.flink != nil {
		return jobs.Next(), nil
	}
	st := p.status()
	jobs.SetJobState(&st.JobStatus, orReconciling(st.JobStatus.State))
	return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), nil
}

// firstSubmission submits the first spec, restoring initialSavepointPath.
func (r *FlinkSessionJobReconciler) firstSubmission(ctx context.Context, p *jobPass) (jobs.PhaseResult, error) {
	if p.Deployed != nil {
		return jobs.Next(), nil
	}
	p.status().ReconciliationStatus.ReconciliationTimestamp = time.Now().UnixMilli()
	res, err := r.deployJob(ctx, p.jobScope, p.desired, p.desired.Job.InitialSavepointPath)
	return jobs.Acted(res), err
}

// unchangedJob runs unchangedJobPhases for a job whose spec is the one deployed and that is not
// being upgraded.
func (r *FlinkSessionJobReconciler) unchangedJob(ctx context.Context, p *jobPass) (jobs.PhaseResult, error) {
	if state := p.status().ReconciliationStatus.State; state == flinkv1beta1.ReconciliationUpgrading ||
		state == flinkv1beta1.ReconciliationRollingBack || jobSpecChanged(p.Deployed, p.desired) {
		return jobs.Next(), nil
	}
	res, err := jobs.RunPhases(ctx, p, r.unchangedJobPhases())
	return jobs.Acted(res), err
}

// resubmit submits the deployed spec again under the recorded job id while the job is
// RECONCILING: not seen since a submission that may not have happened, or a stateless job its
// session lost. A suspended job is not run; a lost stateful job waits for the user.
func (r *FlinkSessionJobReconciler) resubmit(ctx context.Context, p *jobPass) (jobs.PhaseResult, error) {
	st := p.status()
	suspended := p.Deployed.Job != nil && p.Deployed.Job.State == flinkv1beta1.JobStateSuspended
	if st.JobStatus.State != flinkv1beta1.JobStatusReconciling || st.JobStatus.JobID == "" || suspended || JobLost(st.Error) {
		return jobs.Next(), nil
	}
	res, err := r.submit(ctx, p.jobScope, p.running())
	return jobs.Acted(res), err
}

// restartFailedJob resubmits a FAILED job with kubernetes.operator.job.restart.failed, for
// session jobs as for applications (upstream's AbstractJobReconciler): the spec that ran is
// recorded again as UPGRADING (write-ahead) and goes through the upgrade steps, which restore
// what its upgrade mode keeps: the failed job's latest checkpoint, recorded by the observer, or
// nothing for a stateless job.
func (r *FlinkSessionJobReconciler) restartFailedJob(ctx context.Context, p *jobPass) (jobs.PhaseResult, error) {
	st := p.status()
	if st.JobStatus.State != flinkv1beta1.JobStatusFailed || !options.RestartFailed.Get(p.jobConfig()) {
		return jobs.Next(), nil
	}
	r.Recorder.Event(p.job, corev1.EventTypeWarning, jobs.ReasonRestartFailed, "Job FAILED; restarting it")
	// The spec that ran, in the mode the user asks for now: the recorded mode may be the one
	// the Apache operator restored with, and a change of upgradeMode alone is not recorded.
	target := p.Deployed.DeepCopy()
	target.Job.UpgradeMode = jobs.UpgradeModeOf(p.job.Spec.Job)
	if target.Job.UpgradeMode == flinkv1beta1.UpgradeModeStateless && !usersRestorePath(st, target) {
		st.JobStatus.UpgradeSavepointPath = ""
	}
	if err := p.recordJobSpec(*target, flinkv1beta1.ReconciliationUpgrading); err != nil {
		return jobs.PhaseResult{}, err
	}
	if err := r.persistJob(ctx, p.jobScope); err != nil {
		return jobs.PhaseResult{}, err
	}
	res, err := r.upgradeJob(ctx, p.jobScope, p.Deployed.DeepCopy())
	return jobs.Acted(res), err
}

// takeJobSnapshots triggers and follows the running job's savepoints and checkpoints
// (FlinkSessionJobReconciler.snapshots); a legacy-mode one in flight is looked at again soon,
// otherwise the job at the interval its state asks for.
func (r *FlinkSessionJobReconciler) takeJobSnapshots(ctx context.Context, p *jobPass) (jobs.PhaseResult, error) {
	if inFlight, err := r.snapshots(ctx, p.jobScope, p.desired); inFlight || err != nil {
		return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), err
	}
	return jobs.NextWithin(r.jobRequeue(p.jobScope)), nil
}

// recordJobChange records a changed spec as the upgrade target (recordSpecChange, as
// planSpecChange decides) before anything is stopped. While an upgrade is under way its target
// stays, except when it waits for the user to say where the job's state is: a newer spec is
// the user's answer and replaces it. A savepoint still pending is waited for first.
func (r *FlinkSessionJobReconciler) recordJobChange(ctx context.Context, p *jobPass) (jobs.PhaseResult, error) {
	st := p.status()
	upgrading := st.ReconciliationStatus.State == flinkv1beta1.ReconciliationUpgrading
	if upgrading && (!waitsForUser(st.Error) || !jobSpecChanged(p.Deployed, p.desired)) {
		return jobs.Next(), nil
	}
	if st.ReconciliationStatus.State == flinkv1beta1.ReconciliationRollingBack && jobSpecChanged(p.Deployed, p.desired) {
		// The user changed the spec (typically fixed it): the rollback is abandoned and the new
		// spec applied from wherever the rollback got to, as for deployments.
		r.Recorder.Event(p.job, corev1.EventTypeNormal, jobs.ReasonRollback, "Spec changed during the rollback; applying it instead")
	}
	if wait, err := r.awaitPendingSavepoint(ctx, p.jobScope, p.desired); wait || err != nil {
		return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), err
	}
	if waiting, err := r.recordSpecChange(ctx, p.jobScope, p.desired); waiting || err != nil {
		return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.Reconcile}), err
	}
	return jobs.Next(), nil
}

// upgradeJobPhase carries out the upgrade to the recorded target (upgradeJob).
func (r *FlinkSessionJobReconciler) upgradeJobPhase(ctx context.Context, p *jobPass) (jobs.PhaseResult, error) {
	res, err := r.upgradeJob(ctx, p.jobScope, p.Deployed.DeepCopy())
	return jobs.Acted(res), err
}

// cleanupJob runs on deletion: jobDeletionPhases, once the DELETING lifecycle state is written.
func (r *FlinkSessionJobReconciler) cleanupJob(ctx context.Context, s *jobScope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.job, SessionJobFinalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.persistJob(ctx, s); err != nil { // lifecycle DELETING
		return ctrl.Result{}, err
	}
	return jobs.RunPhases(ctx, &jobPass{jobScope: s}, r.jobDeletionPhases())
}

// jobDeletionPhases are the phases of a session job's deletion, in order: the job stopped on
// its session (with a savepoint when kubernetes.operator.job.savepoint-on-deletion is set, else
// cancelled), then the finalizer. Deletion never blocks on a session that is gone, and gives up
// the savepoint after the cleanup timeout with a Warning event.
func (r *FlinkSessionJobReconciler) jobDeletionPhases() []jobPhase {
	return []jobPhase{
		{Name: "stopJob", Run: r.stopJobOnDeletion},
		{Name: "removeFinalizer", Run: r.removeJobFinalizer},
	}
}

// stopJobOnDeletion keeps the finalizer until the job is known not to run (stopBeforeDeletion),
// or until the stop was waited for as long as lifecycle.DecideDeletion allows (twice the cleanup
// timeout from the deletion's start: a savepoint on deletion may have taken the first). Then the
// resource goes, and a Warning event and the status written last say that the job may still
// run on its session, managed by nothing.
func (r *FlinkSessionJobReconciler) stopJobOnDeletion(ctx context.Context, p *jobPass) (jobs.PhaseResult, error) {
	block, err := r.stopBeforeDeletion(ctx, p.jobScope)
	if err != nil {
		return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), errors.Join(err, r.persistJob(ctx, p.jobScope))
	}
	timeout := options.ResourceCleanupTimeout.Get(p.conf)
	decision := lifecycle.DecideDeletion(lifecycle.DeletionObserved{Step: lifecycle.StepJobStop, Blocked: block,
		Elapsed: time.Since(p.job.DeletionTimestamp.Time), Timeout: timeout})
	switch decision.Action {
	case lifecycle.DeletionWait:
		return jobs.Acted(ctrl.Result{RequeueAfter: decision.Requeue(r.Intervals.ProgressCheck)}), r.persistJob(ctx, p.jobScope)
	case lifecycle.DeletionGiveUp:
		st := p.status()
		session := p.job.Spec.DeploymentName
		if p.session != nil {
			session = p.session.Name
		}
		msg := fmt.Sprintf("Job %s may still run on session %s: its stop was not confirmed within %s of the deletion (twice kubernetes.operator.resource.cleanup.timeout; the session %s). Nothing manages it any more: cancel it on the session if it still runs",
			st.JobStatus.JobID, session, decision.Bound, blockSaid(block))
		if flinkv1beta1.ErrorReason(st.Error) != flinkv1beta1.ErrorReasonNoFinalSavepoint {
			// A NoFinalSavepoint error stays: it is what the user asked for and did not get.
			st.Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionReconciliation, flinkv1beta1.ErrorReasonReconcileFailed, msg)
		}
		if err := r.persistJob(ctx, p.jobScope); err != nil {
			return jobs.PhaseResult{}, err
		}
		r.Recorder.Event(p.job, corev1.EventTypeWarning, string(decision.Reason), msg)
	}
	return jobs.Next(), nil
}

// blockSaid is why a stop was not confirmed, in words.
func blockSaid(block lifecycle.DeletionBlock) string {
	switch block {
	case lifecycle.BlockUnreachable:
		return "could not be asked"
	case lifecycle.BlockFailed:
		return "refused the stop"
	default:
		return "did not finish the stop"
	}
}

// removeJobFinalizer lets the deleted session job go, with its autoscaler metrics.
func (r *FlinkSessionJobReconciler) removeJobFinalizer(ctx context.Context, p *jobPass) (jobs.PhaseResult, error) {
	r.Autoscaling.AutoscalerMetrics().Forget(p.job.Namespace, metrics.KindSessionJob, p.job.Name)
	return jobs.Acted(ctrl.Result{}), r.Release(ctx, r.Client, p.job, SessionJobFinalizer)
}
