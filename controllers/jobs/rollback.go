package jobs

import (
	"time"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// ReasonRollback is the event of a rollback, of a FlinkDeployment or a FlinkSessionJob.
const ReasonRollback = "Rollback"

// RollbackObserved is what the rollback decision looks at, for every kind that runs a job.
type RollbackObserved struct {
	// Enabled is kubernetes.operator.deployment.rollback.enabled.
	Enabled bool
	// Reconciliation is status.reconciliationStatus: its state, the spec last reconciled, the
	// last stable one and when the last reconciled one was recorded.
	Reconciliation flinkv1beta1.ReconciliationStatus
	// Healthy: the resource runs what was last reconciled (the kind says what healthy is:
	// DeploymentHealthy, JobHealthy).
	Healthy bool
	// Timeout is kubernetes.operator.deployment.readiness.timeout.
	Timeout time.Duration
	Now     time.Time
}

// RollbackDue is upstream's shouldRollBack timing, written once for every kind: rollback is
// enabled, the last reconciled spec was deployed and is not the stable one, and it has not
// become healthy within the readiness timeout. left is how long until it is due (for the
// requeue), zero when it never will be or is now.
func RollbackDue(o RollbackObserved) (due bool, left time.Duration) {
	rs := o.Reconciliation
	if !o.Enabled || rs.State != flinkv1beta1.ReconciliationDeployed || rs.LastStableSpec == "" ||
		rs.LastStableSpec == rs.LastReconciledSpec || o.Healthy {
		return false, 0
	}
	left = time.UnixMilli(rs.ReconciliationTimestamp).Add(o.Timeout).Sub(o.Now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// JobHealthy: a job that runs, or ran to its end, is what its spec asked for; one that ended
// is done, not unhealthy, so it is never rolled back (re-run).
func JobHealthy(state flinkv1beta1.JobStatusState) bool {
	return state == flinkv1beta1.JobStatusRunning || state == flinkv1beta1.JobStatusFinished
}

// RollbackMode is how a rollback restores the job, as upstream's
// AbstractFlinkResourceReconciler.prepareCrForRollback decides it: from the spec that failed,
// never from the last stable one. The stable spec's recorded mode is not the user's intent:
// the Apache operator records the restore mode it used (stateless after every first
// deployment), and a change of upgradeMode alone is never recorded. A job whose failed spec is
// stateless stays stateless; any other rolls back keeping its state (last-state): a job that
// is not healthy cannot be relied on to take a savepoint, so its HA metadata or latest
// checkpoint, which keep the state the failed attempt reached, are what it restores.
func RollbackMode(failed *flinkv1beta1.JobSpec) flinkv1beta1.UpgradeMode {
	if failed != nil && UpgradeModeOf(failed) == flinkv1beta1.UpgradeModeStateless {
		return flinkv1beta1.UpgradeModeStateless
	}
	return flinkv1beta1.UpgradeModeLastState
}
