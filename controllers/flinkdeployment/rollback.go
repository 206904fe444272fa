package flinkdeployment

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// ReasonRollback is the event of a rollback (the one every kind uses).
const ReasonRollback = jobs.ReasonRollback

// rollbackDue is jobs.RollbackDue, the decision shared with session jobs, on what a deployment
// is: healthy when its JobManager is ready and its job, if any, runs or ran to its end.
func rollbackDue(st *flinkv1beta1.FlinkDeploymentStatus, conf flinkconf.Config, withJob bool) (bool, time.Duration) {
	healthy := st.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady && (!withJob || jobs.JobHealthy(st.JobStatus.State))
	return jobs.RollbackDue(jobs.RollbackObserved{Enabled: options.RollbackEnabled.Get(conf), Reconciliation: st.ReconciliationStatus,
		Healthy: healthy, Timeout: options.ReadinessTimeout.Get(conf), Now: time.Now()})
}

// rollbackNotReady rolls a deployment that did not become healthy within the readiness timeout
// after a change back to its last stable spec (rollbackDue). When it cannot be (rollbackImpossible),
// the reason is reported once and the other phases go on.
func (r *FlinkDeploymentReconciler) rollbackNotReady(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	st := p.status()
	due, left := rollbackDue(st, p.conf, p.desired.Job != nil)
	if !due {
		return jobs.NextWithin(left), nil // look again when the readiness timeout ends
	}
	why, err := r.rollbackImpossible(ctx, p.scope, p.conf)
	if err != nil {
		return jobs.PhaseResult{}, err
	}
	if why != "" {
		msg := "Rollback is not possible: " + why
		if failure := flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionRollbackFailure, flinkv1beta1.ErrorReasonRollbackFailed, msg); st.Error != failure {
			st.Error = failure
			r.Recorder.Event(p.dep, corev1.EventTypeWarning, ReasonRollback, msg)
		}
		return jobs.Next(), nil
	}
	if err := r.startRollback(ctx, p.scope, p.conf); err != nil {
		return jobs.PhaseResult{}, err
	}
	res, err := r.continueRollback(ctx, p.scope)
	return jobs.Acted(res), err
}

// rollbackImpossible says why the last stable spec cannot be rolled back to ("" when it can),
// with upstream's preconditions (shouldRollBack): a job is rolled back through its HA metadata,
// so without it there is nothing to roll back with; a suspended stable spec or another Flink
// version is not rolled back to.
func (r *FlinkDeploymentReconciler) rollbackImpossible(ctx context.Context, s *scope, conf flinkconf.Config) (string, error) {
	var stable flinkv1beta1.FlinkDeploymentSpec
	if found, _, err := flinkv1beta1.DecodeReconciledSpec(s.status().ReconciliationStatus.LastStableSpec, &stable); err != nil || !found {
		return "the last stable spec cannot be read", nil
	}
	if stable.FlinkVersion != s.Deployed.FlinkVersion {
		return "the last stable spec runs another Flink version", nil
	}
	if stable.Job == nil {
		return "", nil // a session cluster's jobs recover from its HA metadata, which is kept
	}
	if stable.Job.State == flinkv1beta1.JobStateSuspended {
		return "the last stable spec is suspended", nil
	}
	if !conf.HAEnabled() {
		return "high availability is not enabled", nil
	}
	store, err := r.haStore(s, conf)
	if err != nil {
		return "", err
	}
	has, err := store.HasJobMetadata(ctx)
	if err != nil {
		return "", err
	}
	if !has {
		return "no HA metadata of the job to roll back with", nil
	}
	return "", nil
}

// startRollback records ROLLING_BACK before anything is touched.
func (r *FlinkDeploymentReconciler) startRollback(ctx context.Context, s *scope, conf flinkconf.Config) error {
	timeout := options.ReadinessTimeout.Get(conf)
	r.Recorder.Eventf(s.dep, corev1.EventTypeWarning, ReasonRollback,
		"Not ready %s after the last change; rolling back to the last stable spec", timeout)
	s.status().ReconciliationStatus.State = flinkv1beta1.ReconciliationRollingBack
	return r.persist(ctx, s)
}

// continueRollback redeploys the last stable spec through the upgrade steps, keeping the HA
// metadata (rollback requires HA), then records ROLLED_BACK with the failed spec still as the
// last reconciled one: the operator does not try it again until the spec changes.
func (r *FlinkDeploymentReconciler) continueRollback(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := s.status()
	rs := &st.ReconciliationStatus
	failedRaw, failed := rs.LastReconciledSpec, s.Deployed
	var stable flinkv1beta1.FlinkDeploymentSpec
	if found, _, err := flinkv1beta1.DecodeReconciledSpec(rs.LastStableSpec, &stable); err != nil || !found {
		return ctrl.Result{}, fmt.Errorf("rollback: last stable spec: %v", err)
	}
	target := stable.DeepCopy()
	if target.Job != nil {
		var failedJob *flinkv1beta1.JobSpec
		if failed != nil {
			failedJob = failed.Job
		}
		target.Job.UpgradeMode = jobs.RollbackMode(failedJob)
	}
	res, err := r.continueUpgrade(ctx, s, target)
	if err != nil || rs.State != flinkv1beta1.ReconciliationDeployed {
		// Still on the way (the upgrade steps record UPGRADING): stay ROLLING_BACK.
		if rs.State == flinkv1beta1.ReconciliationUpgrading {
			rs.State = flinkv1beta1.ReconciliationRollingBack
		}
		return res, err
	}
	rs.LastReconciledSpec, rs.State = failedRaw, flinkv1beta1.ReconciliationRolledBack
	s.Deployed = failed
	r.Recorder.Event(s.dep, corev1.EventTypeNormal, ReasonRollback, "Rolled back to the last stable spec")
	return res, nil
}
