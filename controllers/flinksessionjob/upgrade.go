package flinksessionjob

import (
	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
)

// The decisions of a session job's upgrade, as pure functions of what the status recorded.
// upgradeSavepointPath is the one place the restore point lives: every decision keeps it, sets
// it from something Flink reported, or refuses to go on when a stateful job's state is unknown.

// jobNotFoundMessage is upstream's status.error (JobStatusObserver.JOB_NOT_FOUND_ERR) for a
// job its session no longer knows.
const jobNotFoundMessage = "Job Not Found"

// manualRestoreMessage is upstream's UpgradeFailureException for an ended job whose latest
// state is unknown (AbstractJobReconciler.getJobUpgrade).
const manualRestoreMessage = "Job is in terminal state but last checkpoint is unknown, possibly due to an unrecoverable restore error. " +
	"Manual restore required. Set job.initialSavepointPath and a new job.savepointRedeployNonce to restore it."

// jobNotFoundError is status.error for a lost session job: upstream's text, with the reason
// this operator branches on.
func jobNotFoundError() string {
	return flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionJobNotFound, flinkv1beta1.ErrorReasonJobNotFound, jobNotFoundMessage)
}

// manualRestoreError is status.error when a stateful job would otherwise start with no state.
func manualRestoreError() string {
	return flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionUpgradeFailure, flinkv1beta1.ErrorReasonManualRestoreRequired, manualRestoreMessage)
}

// JobLost says status.error reports the job lost by its session: this operator's typed error,
// or upstream's bare "Job Not Found" on a resource adopted from it.
func JobLost(statusError string) bool {
	return statusError == jobNotFoundMessage || flinkv1beta1.ErrorReason(statusError) == flinkv1beta1.ErrorReasonJobNotFound
}

// waitsForUser says the job cannot go on until the user says where its state is (a lost job, or
// an ended one whose state is unknown): a newer spec may then replace an upgrade's target.
func waitsForUser(statusError string) bool {
	return JobLost(statusError) || flinkv1beta1.ErrorReason(statusError) == flinkv1beta1.ErrorReasonManualRestoreRequired
}

// specChangeAction is what a spec change does to a deployed session job.
type specChangeAction string

const (
	// specChangeUpgrade records the new spec as UPGRADING with RestorePath (write-ahead).
	specChangeUpgrade specChangeAction = "upgrade"
	// specChangeWait records nothing: the job is lost and its state with it (upstream's
	// "Job Not Found" upgrade is not available until the user answers).
	specChangeWait specChangeAction = "wait"
	// specChangeManualRestore records nothing: the job ended and no state of it is known.
	specChangeManualRestore specChangeAction = "manual-restore"
)

// specChange is the situation of a spec change.
type specChange struct {
	// Deployed and Desired are the job specs last reconciled and wanted.
	Deployed, Desired *flinkv1beta1.JobSpec
	// Job is the job's recorded state; RestorePath its recorded upgradeSavepointPath.
	Job         flinkv1beta1.JobStatusState
	RestorePath string
	// Lost: the session no longer knows the job ("Job Not Found").
	Lost bool
}

// specChangePlan is what planSpecChange decided.
type specChangePlan struct {
	Action      specChangeAction
	RestorePath string
	// Answered: the change is the user's answer to a lost job (a savepoint redeploy, or
	// stateless); the "Job Not Found" report goes.
	Answered bool
	Reason   string
}

// planSpecChange decides what a spec change of a deployed session job does (upstream's
// getJobUpgrade for session jobs). A savepoint or last-state job never starts over with no
// state, nor from a stale path: the recorded path is kept only while it is still the job's
// latest state, and refused where it cannot be.
func planSpecChange(c specChange) specChangePlan {
	suspended := c.Deployed != nil && c.Deployed.State == flinkv1beta1.JobStateSuspended
	switch {
	case jobs.RedeployRequested(c.Deployed, c.Desired):
		return specChangePlan{specChangeUpgrade, c.Desired.InitialSavepointPath, true, "savepoint redeploy from job.initialSavepointPath"}
	case jobs.UpgradeModeOf(c.Desired) == flinkv1beta1.UpgradeModeStateless:
		return specChangePlan{specChangeUpgrade, "", true, "stateless upgrade"}
	case suspended:
		// Resuming: the state kept when the job was suspended.
		return specChangePlan{specChangeUpgrade, c.RestorePath, false, "resume"}
	case c.Lost:
		return specChangePlan{Action: specChangeWait, Reason: "the job is not on its session (Job Not Found); " +
			"set job.initialSavepointPath and a new job.savepointRedeployNonce to restore it, or upgradeMode stateless to start it over"}
	case reconciler.IsTerminal(c.Job) && c.RestorePath == "":
		return specChangePlan{Action: specChangeManualRestore, Reason: "the job is " + string(c.Job) + " and none of its checkpoints or savepoints is known"}
	case reconciler.IsTerminal(c.Job):
		// Its latest state, observed while it is ended.
		return specChangePlan{specChangeUpgrade, c.RestorePath, false, "restore the ended job's latest state"}
	case c.Job == flinkv1beta1.JobStatusReconciling:
		// Not seen running since its submission: what that submission restored is still its state.
		return specChangePlan{specChangeUpgrade, c.RestorePath, false, "resubmit from what the job was submitted with"}
	default:
		// It runs: stopping it records its state afresh; an older path must not be restored.
		return specChangePlan{specChangeUpgrade, "", false, "stop the running job keeping its state"}
	}
}

// usersRestorePath says the upgrade in progress restores the savepoint the user named (a
// savepoint redeploy, or a first submission from initialSavepointPath not seen running): the
// replaced job's own state is then neither taken nor recorded over it.
func usersRestorePath(st *flinkv1beta1.FlinkSessionJobStatus, target *flinkv1beta1.FlinkSessionJobSpec) bool {
	return st.ReconciliationStatus.State == flinkv1beta1.ReconciliationUpgrading && target != nil && target.Job != nil &&
		st.JobStatus.UpgradeSavepointPath != "" && st.JobStatus.UpgradeSavepointPath == target.Job.InitialSavepointPath
}
