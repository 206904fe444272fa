package lifecycle

import "time"

// Deletion: every step of a deletion that waits on something outside the operator (Flink, the
// user, another resource) has a bound, after which the step is given up and the deletion goes
// on. DecideDeletion is the one place where that choice is made, for every kind; the table in
// deletion_test.go (TestDecideDeletion) is its specification and docs/concepts/deletion.md
// documents it.
//
// Bounds are counted from the resource's metadata.deletionTimestamp, written by the API server
// when the deletion started: it survives an operator restart, so a restarted operator neither
// starts a bound again nor needs any bookkeeping of its own.

// DeletionStep is a step of a deletion that may have to wait.
type DeletionStep string

const (
	// StepFinalSavepoint: kubernetes.operator.job.savepoint-on-deletion asked for a savepoint
	// of the job before it goes (FlinkDeployment, FlinkSessionJob).
	StepFinalSavepoint DeletionStep = "FinalSavepoint"
	// StepSessionJobs: a session cluster waits for its FlinkSessionJobs to be deleted
	// (kubernetes.operator.session.deletion.block-on-session-jobs).
	StepSessionJobs DeletionStep = "SessionJobs"
	// StepUnmanagedJobs: a session cluster waits for the jobs no FlinkSessionJob manages
	// (kubernetes.operator.session.deletion.block-on-unmanaged-jobs).
	StepUnmanagedJobs DeletionStep = "UnmanagedJobs"
	// StepJobStop: a FlinkSessionJob waits until its session confirms the job stopped.
	StepJobStop DeletionStep = "JobStop"
	// StepSnapshotInProgress: a FlinkStateSnapshot whose savepoint Flink is still writing.
	StepSnapshotInProgress DeletionStep = "SnapshotInProgress"
	// StepSavepointDisposal: a completed FlinkStateSnapshot with disposeOnDelete waits to
	// dispose of its savepoint through the job's cluster.
	StepSavepointDisposal DeletionStep = "SavepointDisposal"
)

// DeletionBlock says why a step is not done yet.
type DeletionBlock string

const (
	// BlockNone: the step is done, or there is nothing to do.
	BlockNone DeletionBlock = ""
	// BlockInProgress: Flink is working on it (a savepoint being written, a cancel in flight).
	BlockInProgress DeletionBlock = "InProgress"
	// BlockFailed: Flink said the step failed (the savepoint, the cancel, the disposal).
	BlockFailed DeletionBlock = "Failed"
	// BlockUnreachable: the JobManager cannot be asked (not ready, or its REST API fails).
	BlockUnreachable DeletionBlock = "Unreachable"
	// BlockDependents: resources or jobs that must go first are still there.
	BlockDependents DeletionBlock = "Dependents"
	// BlockGone: what the step needs is gone for good (no JobManager to take the savepoint,
	// its JobManager failed): waiting cannot help, the step is given up at once.
	BlockGone DeletionBlock = "Gone"
)

// DeletionObserved is what a deletion step sees.
type DeletionObserved struct {
	Step    DeletionStep
	Blocked DeletionBlock
	// Elapsed is the time since the resource's metadata.deletionTimestamp.
	Elapsed time.Duration
	// Timeout is kubernetes.operator.resource.cleanup.timeout (upstream's 5 minutes by default).
	Timeout time.Duration
}

// DeletionAction is what the step does.
type DeletionAction string

const (
	// DeletionProceed: the step is done; the deletion goes on.
	DeletionProceed DeletionAction = "Proceed"
	// DeletionWait: the step waits; look again within Decision.RecheckWithin.
	DeletionWait DeletionAction = "Wait"
	// DeletionGiveUp: the bound is reached: the step is given up, a Warning event with
	// Decision.Reason says what was skipped and why, and the deletion goes on.
	DeletionGiveUp DeletionAction = "GiveUp"
)

// DeletionReason is the event reason of a step given up (Warning events; a step that waits
// keeps upstream's CleanupFailed).
type DeletionReason string

const (
	// ReasonNoFinalSavepoint: the job goes without the savepoint on deletion it was to take.
	ReasonNoFinalSavepoint DeletionReason = "NoFinalSavepoint"
	// ReasonSessionJobsDeleted: a session cluster deletes its remaining FlinkSessionJobs (each
	// then ends within its own bounds) instead of waiting for the user to.
	ReasonSessionJobsDeleted DeletionReason = "SessionJobsDeleted"
	// ReasonUnmanagedJobsStopped: a session cluster is deleted with jobs no FlinkSessionJob
	// manages still running: they end with it, without a savepoint.
	ReasonUnmanagedJobsStopped DeletionReason = "UnmanagedJobsStopped"
	// ReasonJobStopUnconfirmed: a FlinkSessionJob goes without its session confirming the job
	// stopped: it may still run there, with nothing managing it.
	ReasonJobStopUnconfirmed DeletionReason = "JobStopUnconfirmed"
	// ReasonSnapshotAbandonedOnDeletion: a FlinkStateSnapshot goes while Flink may still be writing its
	// savepoint, which is then not disposed of.
	ReasonSnapshotAbandonedOnDeletion DeletionReason = "SnapshotAbandonedOnDeletion"
	// ReasonSavepointNotDisposed: a FlinkStateSnapshot goes without disposing of its savepoint,
	// which stays in the savepoint storage.
	ReasonSavepointNotDisposed DeletionReason = "SavepointNotDisposed"
)

// DeletionDecision is what DecideDeletion chose.
type DeletionDecision struct {
	Action DeletionAction
	// Reason is set when the step is given up.
	Reason DeletionReason
	// Bound is how long after the deletion started the step is given up.
	Bound time.Duration
	// RecheckWithin is, for a step that waits, the time left before its bound: the resource
	// is looked at again no later than that, so the bound is kept whatever the requeue.
	RecheckWithin time.Duration
}

// deletionBound is each step's bound in multiples of the cleanup timeout, and the reason of
// its giving up. A step that can only start once another gave up gets a timeout of its own
// after it: a FlinkSessionJob's cancel after its final savepoint, a savepoint's disposal after
// its writing.
var deletionBound = map[DeletionStep]struct {
	timeouts int
	reason   DeletionReason
}{
	StepFinalSavepoint:     {1, ReasonNoFinalSavepoint},
	StepSessionJobs:        {1, ReasonSessionJobsDeleted},
	StepUnmanagedJobs:      {1, ReasonUnmanagedJobsStopped},
	StepJobStop:            {2, ReasonJobStopUnconfirmed},
	StepSnapshotInProgress: {1, ReasonSnapshotAbandonedOnDeletion},
	StepSavepointDisposal:  {2, ReasonSavepointNotDisposed},
}

// DeletionBound is how long after the deletion started step is given up.
func DeletionBound(step DeletionStep, timeout time.Duration) time.Duration {
	b, ok := deletionBound[step]
	if !ok {
		return timeout
	}
	return time.Duration(b.timeouts) * timeout
}

// DecideDeletion decides a deletion step: go on when it is done, wait while its bound is not
// reached, give it up once it is, or at once when what it needs is gone. A step whose timeout is not positive waits not at all: a
// deletion is never unbounded. An unknown step is given up at the timeout, with no reason of
// its own; every step of this operator is in deletionBound.
func DecideDeletion(o DeletionObserved) DeletionDecision {
	bound := DeletionBound(o.Step, o.Timeout)
	if o.Blocked == BlockNone {
		return DeletionDecision{Action: DeletionProceed, Bound: bound}
	}
	if o.Elapsed < bound && o.Blocked != BlockGone {
		return DeletionDecision{Action: DeletionWait, Bound: bound, RecheckWithin: bound - o.Elapsed}
	}
	return DeletionDecision{Action: DeletionGiveUp, Reason: deletionBound[o.Step].reason, Bound: bound}
}

// Requeue is how long a waiting step waits before it looks again: interval, or less when the
// bound comes sooner (never less than a millisecond, so a requeue is still a delay).
func (d DeletionDecision) Requeue(interval time.Duration) time.Duration {
	if d.RecheckWithin > 0 && d.RecheckWithin < interval {
		return max(d.RecheckWithin, time.Millisecond)
	}
	return interval
}
