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

// ReasonRollback is the event of a rollback.
const ReasonRollback = "Rollback"

// rollbackDue: rollback is enabled, the last reconciled spec is not the stable one, and it has
// not become healthy within the readiness timeout.
func rollbackDue(st *flinkv1beta1.FlinkDeploymentStatus, conf flinkconf.Config, withJob bool) (bool, time.Duration) {
	rs := st.ReconciliationStatus
	if !options.RollbackEnabled.Get(conf) || rs.State != flinkv1beta1.ReconciliationDeployed ||
		rs.LastStableSpec == "" || rs.LastStableSpec == rs.LastReconciledSpec {
		return false, 0
	}
	healthy := st.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady &&
		(!withJob || st.JobStatus.State == flinkv1beta1.JobStatusRunning || st.JobStatus.State == flinkv1beta1.JobStatusFinished)
	if healthy {
		return false, 0
	}
	timeout := options.ReadinessTimeout.Get(conf)
	left := time.Until(time.UnixMilli(rs.ReconciliationTimestamp).Add(timeout))
	return left <= 0, left
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
		target.Job.UpgradeMode = rollbackMode(failed)
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

// rollbackMode is how a rollback restores the job, as upstream's
// AbstractFlinkResourceReconciler.prepareCrForRollback decides it: from the spec that failed,
// never from the last stable one. The stable spec's recorded mode is not the user's intent:
// the Apache operator records the restore mode it used (stateless after every first
// deployment), and a change of upgradeMode alone is never recorded. A job whose failed spec is
// stateless stays stateless; any other rolls back through its HA metadata (last-state), which
// keeps the state the failed attempt reached.
func rollbackMode(failed *flinkv1beta1.FlinkDeploymentSpec) flinkv1beta1.UpgradeMode {
	if failed != nil && jobs.UpgradeModeOf(failed.Job) == flinkv1beta1.UpgradeModeStateless {
		return flinkv1beta1.UpgradeModeStateless
	}
	return flinkv1beta1.UpgradeModeLastState
}
