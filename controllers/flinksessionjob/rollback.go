package flinksessionjob

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// A session job rolls back as a FlinkDeployment does, under the same options
// (kubernetes.operator.deployment.rollback.enabled and .readiness.timeout, from the session's
// configuration with the job's own over it) and with the same decision (jobs.RollbackDue,
// jobs.RollbackMode). Upstream rolls back FlinkDeployments only; with the option off (the
// default) nothing here runs.
//
//	DEPLOYED, not RUNNING within the timeout → ROLLING_BACK (write-ahead), Warning event
//	ROLLING_BACK                              → the failed job is stopped as PlanUpgrade decides
//	                                            for the rollback's mode (its latest checkpoint, or
//	                                            the savepoint it was submitted from, is kept); the
//	                                            last stable spec is recorded with a new job id and
//	                                            that path, then ROLLED_BACK, then submitted
//	ROLLED_BACK                               → resubmit submits the stable spec (rolledBackTo);
//	                                            the failed spec stays the last reconciled one and
//	                                            is not tried again until the spec changes

// rollbackDue is jobs.RollbackDue on what a session job is: healthy when its job runs or ran
// to its end.
func (s *jobScope) rollbackDue(now time.Time) (bool, time.Duration) {
	st := s.status()
	conf := s.jobConfig()
	return jobs.RollbackDue(jobs.RollbackObserved{Enabled: options.RollbackEnabled.Get(conf), Reconciliation: st.ReconciliationStatus,
		Healthy: jobs.JobHealthy(st.JobStatus.State), Timeout: options.ReadinessTimeout.Get(conf), Now: now})
}

// rolledBackTo is the last stable spec while a rollback has put it back in place (ROLLED_BACK):
// what runs on the session, while Deployed still names the spec that failed. nil otherwise.
func (s *jobScope) rolledBackTo() *flinkv1beta1.FlinkSessionJobSpec {
	if s.status().ReconciliationStatus.State != flinkv1beta1.ReconciliationRolledBack {
		return nil
	}
	stable, err := s.stableSpec()
	if err != nil {
		return nil
	}
	return stable
}

// stableSpec reads status.reconciliationStatus.lastStableSpec.
func (s *jobScope) stableSpec() (*flinkv1beta1.FlinkSessionJobSpec, error) {
	var stable flinkv1beta1.FlinkSessionJobSpec
	found, _, err := flinkv1beta1.DecodeReconciledSpec(s.status().ReconciliationStatus.LastStableSpec, &stable)
	if err != nil {
		return nil, fmt.Errorf("last stable spec: %w", err)
	}
	if !found || stable.Job == nil {
		return nil, fmt.Errorf("last stable spec: none recorded")
	}
	return &stable, nil
}

// running is the spec the job on the session runs: the last reconciled one, or after a
// rollback the stable one it went back to.
func (s *jobScope) running() *flinkv1beta1.FlinkSessionJobSpec {
	if stable := s.rolledBackTo(); stable != nil {
		return stable
	}
	return s.Deployed
}

// rollbackImpossible says why the last stable spec cannot be rolled back to ("" when it can),
// with upstream's preconditions (shouldRollBack) as they apply to a job on a session: a
// suspended stable spec is not run again, nor one on another session (the rollback would move
// the job between clusters, which is not what a rollback is).
func (s *jobScope) rollbackImpossible() string {
	stable, err := s.stableSpec()
	switch {
	case err != nil:
		return "the last stable spec cannot be read"
	case stable.Job.State == flinkv1beta1.JobStateSuspended:
		return "the last stable spec is suspended"
	case stable.DeploymentName != s.Deployed.DeploymentName:
		return "the last stable spec runs on another session"
	}
	return ""
}

// rollbackJob rolls a job that did not become RUNNING within the readiness timeout after a
// change back to its last stable spec (rollbackDue). When it cannot be, the reason is reported
// once and the other phases go on.
func (r *FlinkSessionJobReconciler) rollbackJob(ctx context.Context, p *jobPass) (jobs.PhaseResult, error) {
	due, left := p.rollbackDue(time.Now())
	if !due {
		return jobs.NextWithin(left), nil // look again when the readiness timeout ends
	}
	st := p.status()
	if why := p.rollbackImpossible(); why != "" {
		msg := "Rollback is not possible: " + why
		if failure := flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionRollbackFailure, flinkv1beta1.ErrorReasonRollbackFailed, msg); st.Error != failure {
			st.Error = failure
			r.Recorder.Event(p.job, corev1.EventTypeWarning, jobs.ReasonRollback, msg)
		}
		return jobs.Next(), nil
	}
	conf := p.jobConfig()
	r.Recorder.Eventf(p.job, corev1.EventTypeWarning, jobs.ReasonRollback,
		"Job %s not RUNNING %s after the last change (%s); rolling back to the last stable spec",
		st.JobStatus.JobID, options.ReadinessTimeout.Get(conf), orReconciling(st.JobStatus.State))
	st.ReconciliationStatus.State = flinkv1beta1.ReconciliationRollingBack
	if err := r.persistJob(ctx, p.jobScope); err != nil {
		return jobs.PhaseResult{}, err
	}
	res, err := r.continueJobRollback(ctx, p.jobScope)
	return jobs.Acted(res), err
}

// rollingBackJob continues a rollback while the spec is the one that failed; a changed spec
// abandons it (recordJobChange applies the new one from wherever the rollback got to).
func (r *FlinkSessionJobReconciler) rollingBackJob(ctx context.Context, p *jobPass) (jobs.PhaseResult, error) {
	if p.status().ReconciliationStatus.State != flinkv1beta1.ReconciliationRollingBack || jobSpecChanged(p.Deployed, p.desired) {
		return jobs.Next(), nil
	}
	res, err := r.continueJobRollback(ctx, p.jobScope)
	return jobs.Acted(res), err
}

// continueJobRollback replaces the failed job with the last stable spec through the upgrade
// steps (replaceJob), in the rollback's mode, then submits it as submitRollback records.
func (r *FlinkSessionJobReconciler) continueJobRollback(ctx context.Context, s *jobScope) (ctrl.Result, error) {
	stable, err := s.stableSpec()
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("rollback: %w", err)
	}
	target := stable.DeepCopy()
	target.Job.UpgradeMode = jobs.RollbackMode(s.Deployed.Job)
	return r.replaceJob(ctx, s, target, r.submitRollback)
}

// submitRollback records the stable spec's new job id and the snapshot it restores while
// ROLLING_BACK, so that the Rollback operation names it, then ROLLED_BACK (write-ahead: the
// failed spec stays the last reconciled one), then submits the stable spec. A submission that
// does not finish now is carried on by resubmit, with rolledBackTo.
func (r *FlinkSessionJobReconciler) submitRollback(ctx context.Context, s *jobScope, stable *flinkv1beta1.FlinkSessionJobSpec, restore string) (ctrl.Result, error) {
	st := s.status()
	st.JobStatus.JobID = reconciler.DeterministicJobID(string(s.job.UID), st.ReconciliationStatus.ReconciliationTimestamp)
	jobs.SetJobState(&st.JobStatus, flinkv1beta1.JobStatusReconciling)
	st.JobStatus.UpgradeSavepointPath = restore
	st.Error = "" // the failed spec's submission error is not this job's
	if err := r.persistJob(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	st.ReconciliationStatus.State = flinkv1beta1.ReconciliationRolledBack
	if err := r.persistJob(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	msg := "Rolled back to the last stable spec"
	if restore != "" {
		msg += ", restoring " + restore
	}
	r.Recorder.Event(s.job, corev1.EventTypeNormal, jobs.ReasonRollback, msg)
	log.FromContext(ctx).Info("rolled back", "job", st.JobStatus.JobID, "restoreFrom", restore)
	return r.submit(ctx, s, stable)
}

// rolledBackJob records, without a restart, a spec set back to the one running since the
// rollback (upstream's checkNewSpecAlreadyDeployed).
func (r *FlinkSessionJobReconciler) rolledBackJob(_ context.Context, p *jobPass) (jobs.PhaseResult, error) {
	stable := p.rolledBackTo()
	if stable == nil || !jobSpecChanged(p.Deployed, p.desired) || jobSpecChanged(stable, p.desired) {
		return jobs.Next(), nil
	}
	r.Recorder.Event(p.job, corev1.EventTypeNormal, reconciler.ReasonSpecChanged, "The spec is the one already running since the rollback")
	if err := p.recordJobSpec(*p.desired, flinkv1beta1.ReconciliationDeployed); err != nil {
		return jobs.PhaseResult{}, err
	}
	return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), nil
}
