package jobs

import (
	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// StopMode is how the running job is stopped before the cluster is replaced (upstream's
// SuspendMode), or why it cannot be yet.
type StopMode string

const (
	StopStateless StopMode = "stateless"  // cancel; the cluster and HA metadata go
	StopSavepoint StopMode = "savepoint"  // stop-with-savepoint; its path is restored
	stopLastState StopMode = "last-state" // delete the cluster, keep HA metadata
	StopCancel    StopMode = "cancel"     // record the latest checkpoint, then cancel
	StopNone      StopMode = "none"       // the job is already terminal or gone
	StopWait      StopMode = "wait"       // not possible yet: look again later
	StopFail      StopMode = "fail"       // state cannot be carried over: a human must restore
)

// RestoreMode is what the next deployment starts from.
type RestoreMode string

const (
	RestoreNothing   RestoreMode = "stateless"  // empty state, new job id
	RestoreSavepoint RestoreMode = "savepoint"  // status.jobStatus.upgradeSavepointPath
	RestoreLastState RestoreMode = "last-state" // HA metadata, same job id
)

// UpgradeSituation is everything the decision looks at, observed before each upgrade step.
type UpgradeSituation struct {
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
	Checkpoint CheckpointFreshness
}

// CheckpointFreshness says whether a last-state upgrade may rely on the latest checkpoint.
type CheckpointFreshness string

const (
	CheckpointFresh   CheckpointFreshness = ""        // recent enough, or no limit set
	CheckpointPending CheckpointFreshness = "pending" // none recent, one in progress
	CheckpointTooOld  CheckpointFreshness = "too-old" // none recent: a savepoint carries the state
)

// UpgradePlan is the decision: how to stop, what to restore, and why (for events and errors).
type UpgradePlan struct {
	Stop    StopMode
	Restore RestoreMode
	Reason  string
}

// PlanUpgrade is upstream's upgrade decision (AbstractJobReconciler.getJobUpgrade), as one pure function.
// It is evaluated again at every step of an upgrade, and each step moves the situation to a
// row that continues the same plan: a completed stop-with-savepoint leaves a FINISHED job with
// a recorded path (stop none, restore savepoint); a last-state stop leaves no JobManager and HA
// metadata (restore last-state). So nothing but the status has to be remembered across steps,
// and an operator restarted between steps takes the same decision.
//
// It never downgrades a savepoint or last-state upgrade to stateless: when state cannot be
// carried over it says so (stopFail) instead of starting the job empty.
func PlanUpgrade(s UpgradeSituation) UpgradePlan {
	terminal := reconciler.IsTerminal(s.Job)
	switch {
	case s.NothingRan:
		return planNothingRan(s)
	case s.Mode == flinkv1beta1.UpgradeModeStateless:
		return planStateless(s, terminal)
	case s.Job == flinkv1beta1.JobStatusCancelling:
		return UpgradePlan{Stop: StopWait, Reason: "the job is being cancelled"}
	case terminal && (s.RestorePath != "" || s.Job == flinkv1beta1.JobStatusCanceled || !s.haRestore() || s.reachable()):
		return planEnded(s)
	case s.Job == flinkv1beta1.JobStatusRunning && s.reachable():
		return planRunning(s)
	}
	return planNotRunning(s, terminal)
}

// reachable: the JobManager is ready to be asked.
func (s UpgradeSituation) reachable() bool { return s.JobManager == flinkv1beta1.JobManagerReady }

// haRestore: the job's state can be restored from HA metadata.
func (s UpgradeSituation) haRestore() bool { return s.HAEnabled && s.HAMetadata }

// planNothingRan: no state but what was recorded (initialSavepointPath, or the state kept at a
// suspension).
func planNothingRan(s UpgradeSituation) UpgradePlan {
	if s.RestorePath != "" {
		return UpgradePlan{StopNone, RestoreSavepoint, "first deployment from " + s.RestorePath}
	}
	return UpgradePlan{StopNone, RestoreNothing, "first deployment"}
}

// planStateless: a stateless job's recorded path is one the user chose (a savepoint redeploy).
func planStateless(s UpgradeSituation, terminal bool) UpgradePlan {
	restore := RestoreNothing
	if s.RestorePath != "" {
		restore = RestoreSavepoint
	}
	if terminal || s.JobManager == flinkv1beta1.JobManagerMissing {
		return UpgradePlan{StopNone, restore, "stateless upgrade"}
	}
	return UpgradePlan{StopStateless, restore, "stateless upgrade"}
}

// planEnded: the job ended, and its state is the recorded path or nowhere the operator knows.
func planEnded(s UpgradeSituation) UpgradePlan {
	if s.RestorePath != "" {
		return UpgradePlan{StopNone, RestoreSavepoint, "the job is " + string(s.Job) + "; restoring " + s.RestorePath}
	}
	return UpgradePlan{Stop: StopFail, Reason: "the job is " + string(s.Job) +
		" and no savepoint or checkpoint of it is known. Manual restore required: set job.initialSavepointPath and savepointRedeployNonce"}
}

// planRunning: a running job of savepoint or last-state mode.
func planRunning(s UpgradeSituation) UpgradePlan {
	if s.Mode == flinkv1beta1.UpgradeModeSavepoint {
		return UpgradePlan{StopSavepoint, RestoreSavepoint, "savepoint upgrade"}
	}
	switch {
	case s.FlinkVersionChanged && s.SavepointDir:
		// HA metadata of one Flink version is not read by another: take a savepoint.
		return UpgradePlan{StopSavepoint, RestoreSavepoint, "the Flink version changes; a savepoint carries the state"}
	case s.Checkpoint == CheckpointPending:
		return UpgradePlan{Stop: StopWait, Reason: "waiting for the checkpoint in progress: the latest completed one is older than " + options.MaxCheckpointAge.Key}
	case s.Checkpoint == CheckpointTooOld && s.SavepointDir:
		return UpgradePlan{StopSavepoint, RestoreSavepoint, "the latest checkpoint is older than " + options.MaxCheckpointAge.Key + "; a savepoint carries the state"}
	case s.FlinkVersionChanged || !s.haRestore() || s.CancelForLastState:
		return UpgradePlan{StopCancel, RestoreSavepoint, "last-state upgrade from the latest checkpoint"}
	default:
		return UpgradePlan{stopLastState, RestoreLastState, "last-state upgrade from HA metadata"}
	}
}

// planNotRunning: no savepoint can be taken now.
func planNotRunning(s UpgradeSituation, terminal bool) UpgradePlan {
	if s.Mode == flinkv1beta1.UpgradeModeSavepoint && !s.LastStateFallback && !s.FlinkVersionChanged {
		return UpgradePlan{Stop: StopWait, Reason: "a savepoint upgrade needs a running job (" + options.LastStateFallback.Key + " is off)"}
	}
	if s.haRestore() && !s.FlinkVersionChanged {
		return UpgradePlan{stopLastState, RestoreLastState, "the job is not running; restoring its HA metadata"}
	}
	if s.reachable() && !terminal && s.Job != "" && s.Job != flinkv1beta1.JobStatusReconciling {
		// Restarting, created, initializing or failing: cancellable, its checkpoints survive.
		return UpgradePlan{StopCancel, RestoreSavepoint, "the job is not running; cancelling it and restoring its latest checkpoint"}
	}
	if s.JobManager == flinkv1beta1.JobManagerMissing || s.JobManager == flinkv1beta1.JobManagerError {
		if s.RestorePath != "" {
			return UpgradePlan{StopNone, RestoreSavepoint, "restoring " + s.RestorePath}
		}
		return UpgradePlan{Stop: StopFail, Reason: "the JobManager deployment is missing and HA metadata is not available. Manual restore required: set job.initialSavepointPath and savepointRedeployNonce"}
	}
	return UpgradePlan{Stop: StopWait, Reason: "waiting for the job to be observed"}
}

// UpgradeModeOf is a job's upgrade mode (of a FlinkDeployment or a FlinkSessionJob).
func UpgradeModeOf(job *flinkv1beta1.JobSpec) flinkv1beta1.UpgradeMode {
	if job == nil || job.UpgradeMode == "" {
		return flinkv1beta1.UpgradeModeStateless
	}
	return job.UpgradeMode
}
