package controllers

import (
	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// stopMode is how the running job is stopped before the cluster is replaced (upstream's
// SuspendMode), or why it cannot be yet.
type stopMode string

const (
	stopStateless stopMode = "stateless"  // cancel; the cluster and HA metadata go
	stopSavepoint stopMode = "savepoint"  // stop-with-savepoint; its path is restored
	stopLastState stopMode = "last-state" // delete the cluster, keep HA metadata
	stopCancel    stopMode = "cancel"     // record the latest checkpoint, then cancel
	stopNone      stopMode = "none"       // the job is already terminal or gone
	stopWait      stopMode = "wait"       // not possible yet: look again later
	stopFail      stopMode = "fail"       // state cannot be carried over: a human must restore
)

// restoreMode is what the next deployment starts from.
type restoreMode string

const (
	restoreNothing   restoreMode = "stateless"  // empty state, new job id
	restoreSavepoint restoreMode = "savepoint"  // status.jobStatus.upgradeSavepointPath
	restoreLastState restoreMode = "last-state" // HA metadata, same job id
)

// upgradeSituation is everything the decision looks at, observed before each upgrade step.
type upgradeSituation struct {
	Mode       flinkv1beta1.UpgradeMode
	Job        flinkv1beta1.JobStatusState
	JobManager flinkv1beta1.JobManagerDeploymentStatus
	// HAEnabled: Kubernetes HA in both the deployed and the new configuration.
	HAEnabled bool
	// HAMetadata: HA ConfigMaps holding the job's checkpoint pointers exist.
	HAMetadata bool
	// SavepointDir: a savepoint directory is configured.
	SavepointDir        bool
	FlinkVersionChanged bool
	LastStateFallback   bool
	CancelForLastState  bool
	// RestorePath is the savepoint or checkpoint the status recorded for this upgrade.
	RestorePath string
	// NothingRan: no job ran since its state was recorded in RestorePath (an interrupted first
	// deployment; a session job resumed from suspension, or submitted but never seen by Flink),
	// so that recorded state, or none, is all there is.
	NothingRan bool
	// Checkpoint is how recent the running job's state in checkpoints is, against
	// kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age (fresh when unset).
	Checkpoint checkpointFreshness
}

// checkpointFreshness says whether a last-state upgrade may rely on the latest checkpoint.
type checkpointFreshness string

const (
	checkpointFresh   checkpointFreshness = ""        // recent enough, or no limit set
	checkpointPending checkpointFreshness = "pending" // none recent, one in progress
	checkpointTooOld  checkpointFreshness = "too-old" // none recent: a savepoint carries the state
)

// upgradePlan is the decision: how to stop, what to restore, and why (for events and errors).
type upgradePlan struct {
	Stop    stopMode
	Restore restoreMode
	Reason  string
}

// planUpgrade is upstream's upgrade decision (AbstractJobReconciler.getJobUpgrade), as one pure function.
// It is evaluated again at every step of an upgrade, and each step moves the situation to a
// row that continues the same plan: a completed stop-with-savepoint leaves a FINISHED job with
// a recorded path (stop none, restore savepoint); a last-state stop leaves no JobManager and HA
// metadata (restore last-state). So nothing but the status has to be remembered across steps,
// and an operator restarted between steps takes the same decision.
//
// It never downgrades a savepoint or last-state upgrade to stateless: when state cannot be
// carried over it says so (stopFail) instead of starting the job empty.
func planUpgrade(s upgradeSituation) upgradePlan {
	terminal := isTerminal(s.Job)
	switch {
	case s.NothingRan:
		return planNothingRan(s)
	case s.Mode == flinkv1beta1.UpgradeModeStateless:
		return planStateless(s, terminal)
	case s.Job == flinkv1beta1.JobStatusCancelling:
		return upgradePlan{Stop: stopWait, Reason: "the job is being cancelled"}
	case terminal && (s.RestorePath != "" || s.Job == flinkv1beta1.JobStatusCanceled || !s.haRestore() || s.reachable()):
		return planEnded(s)
	case s.Job == flinkv1beta1.JobStatusRunning && s.reachable():
		return planRunning(s)
	}
	return planNotRunning(s, terminal)
}

// reachable: the JobManager is ready to be asked.
func (s upgradeSituation) reachable() bool { return s.JobManager == flinkv1beta1.JobManagerReady }

// haRestore: the job's state can be restored from HA metadata.
func (s upgradeSituation) haRestore() bool { return s.HAEnabled && s.HAMetadata }

// planNothingRan: no state but what was recorded (initialSavepointPath, or the state kept at a
// suspension).
func planNothingRan(s upgradeSituation) upgradePlan {
	if s.RestorePath != "" {
		return upgradePlan{stopNone, restoreSavepoint, "first deployment from " + s.RestorePath}
	}
	return upgradePlan{stopNone, restoreNothing, "first deployment"}
}

// planStateless: a stateless job's recorded path is one the user chose (a savepoint redeploy).
func planStateless(s upgradeSituation, terminal bool) upgradePlan {
	restore := restoreNothing
	if s.RestorePath != "" {
		restore = restoreSavepoint
	}
	if terminal || s.JobManager == flinkv1beta1.JobManagerMissing {
		return upgradePlan{stopNone, restore, "stateless upgrade"}
	}
	return upgradePlan{stopStateless, restore, "stateless upgrade"}
}

// planEnded: the job ended, and its state is the recorded path or nowhere the operator knows.
func planEnded(s upgradeSituation) upgradePlan {
	if s.RestorePath != "" {
		return upgradePlan{stopNone, restoreSavepoint, "the job is " + string(s.Job) + "; restoring " + s.RestorePath}
	}
	return upgradePlan{Stop: stopFail, Reason: "the job is " + string(s.Job) +
		" and no savepoint or checkpoint of it is known. Manual restore required: set job.initialSavepointPath and savepointRedeployNonce"}
}

// planRunning: a running job of savepoint or last-state mode.
func planRunning(s upgradeSituation) upgradePlan {
	if s.Mode == flinkv1beta1.UpgradeModeSavepoint {
		return upgradePlan{stopSavepoint, restoreSavepoint, "savepoint upgrade"}
	}
	switch {
	case s.FlinkVersionChanged && s.SavepointDir:
		// HA metadata of one Flink version is not read by another: take a savepoint.
		return upgradePlan{stopSavepoint, restoreSavepoint, "the Flink version changes; a savepoint carries the state"}
	case s.Checkpoint == checkpointPending:
		return upgradePlan{Stop: stopWait, Reason: "waiting for the checkpoint in progress: the latest completed one is older than " + options.MaxCheckpointAge.Key}
	case s.Checkpoint == checkpointTooOld && s.SavepointDir:
		return upgradePlan{stopSavepoint, restoreSavepoint, "the latest checkpoint is older than " + options.MaxCheckpointAge.Key + "; a savepoint carries the state"}
	case s.FlinkVersionChanged || !s.haRestore() || s.CancelForLastState:
		return upgradePlan{stopCancel, restoreSavepoint, "last-state upgrade from the latest checkpoint"}
	default:
		return upgradePlan{stopLastState, restoreLastState, "last-state upgrade from HA metadata"}
	}
}

// planNotRunning: no savepoint can be taken now.
func planNotRunning(s upgradeSituation, terminal bool) upgradePlan {
	if s.Mode == flinkv1beta1.UpgradeModeSavepoint && !s.LastStateFallback && !s.FlinkVersionChanged {
		return upgradePlan{Stop: stopWait, Reason: "a savepoint upgrade needs a running job (" + options.LastStateFallback.Key + " is off)"}
	}
	if s.haRestore() && !s.FlinkVersionChanged {
		return upgradePlan{stopLastState, restoreLastState, "the job is not running; restoring its HA metadata"}
	}
	if s.reachable() && !terminal && s.Job != "" && s.Job != flinkv1beta1.JobStatusReconciling {
		// Restarting, created, initializing or failing: cancellable, its checkpoints survive.
		return upgradePlan{stopCancel, restoreSavepoint, "the job is not running; cancelling it and restoring its latest checkpoint"}
	}
	if s.JobManager == flinkv1beta1.JobManagerMissing || s.JobManager == flinkv1beta1.JobManagerError {
		if s.RestorePath != "" {
			return upgradePlan{stopNone, restoreSavepoint, "restoring " + s.RestorePath}
		}
		return upgradePlan{Stop: stopFail, Reason: "the JobManager deployment is missing and HA metadata is not available. Manual restore required: set job.initialSavepointPath and savepointRedeployNonce"}
	}
	return upgradePlan{Stop: stopWait, Reason: "waiting for the job to be observed"}
}

// upgradeModeOf is a job's upgrade mode (of a FlinkDeployment or a FlinkSessionJob).
func upgradeModeOf(job *flinkv1beta1.JobSpec) flinkv1beta1.UpgradeMode {
	if job == nil || job.UpgradeMode == "" {
		return flinkv1beta1.UpgradeModeStateless
	}
	return job.UpgradeMode
}
