package lifecycle

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestDecideDeletion is the table of docs/concepts/deletion.md: for every step of every kind's
// deletion, what is chosen before and at its bound (T is the cleanup timeout).
func TestDecideDeletion(t *testing.T) {
	const T = 5 * time.Minute
	tests := []struct {
		name    string
		step    DeletionStep
		blocked DeletionBlock
		elapsed time.Duration
		want    DeletionDecision
	}{
		// FlinkDeployment and FlinkSessionJob: savepoint on deletion.
		{"final savepoint taken", StepFinalSavepoint, BlockNone, time.Minute, DeletionDecision{Action: DeletionProceed, Bound: T}},
		{"final savepoint in progress", StepFinalSavepoint, BlockInProgress, time.Minute, DeletionDecision{Action: DeletionWait, Bound: T, RecheckWithin: 4 * time.Minute}},
		{"final savepoint failing", StepFinalSavepoint, BlockFailed, T - time.Second, DeletionDecision{Action: DeletionWait, Bound: T, RecheckWithin: time.Second}},
		{"final savepoint failing at the bound", StepFinalSavepoint, BlockFailed, T, DeletionDecision{Action: DeletionGiveUp, Reason: ReasonNoFinalSavepoint, Bound: T}},
		{"JobManager unreachable at the bound", StepFinalSavepoint, BlockUnreachable, T + time.Hour, DeletionDecision{Action: DeletionGiveUp, Reason: ReasonNoFinalSavepoint, Bound: T}},
		{"JobManager gone", StepFinalSavepoint, BlockGone, 0, DeletionDecision{Action: DeletionGiveUp, Reason: ReasonNoFinalSavepoint, Bound: T}},
		// A session cluster.
		{"session jobs left", StepSessionJobs, BlockDependents, time.Minute, DeletionDecision{Action: DeletionWait, Bound: T, RecheckWithin: 4 * time.Minute}},
		{"session jobs left at the bound", StepSessionJobs, BlockDependents, T, DeletionDecision{Action: DeletionGiveUp, Reason: ReasonSessionJobsDeleted, Bound: T}},
		{"no session job left", StepSessionJobs, BlockNone, T, DeletionDecision{Action: DeletionProceed, Bound: T}},
		{"unmanaged jobs running", StepUnmanagedJobs, BlockDependents, 0, DeletionDecision{Action: DeletionWait, Bound: T, RecheckWithin: T}},
		{"unmanaged jobs running at the bound", StepUnmanagedJobs, BlockDependents, T, DeletionDecision{Action: DeletionGiveUp, Reason: ReasonUnmanagedJobsStopped, Bound: T}},
		// A FlinkSessionJob's stop: a cancel after a given-up savepoint has a timeout of its own.
		{"session unreachable", StepJobStop, BlockUnreachable, T, DeletionDecision{Action: DeletionWait, Bound: 2 * T, RecheckWithin: T}},
		{"cancel failing at the bound", StepJobStop, BlockFailed, 2 * T, DeletionDecision{Action: DeletionGiveUp, Reason: ReasonJobStopUnconfirmed, Bound: 2 * T}},
		{"job stopped", StepJobStop, BlockNone, 3 * T, DeletionDecision{Action: DeletionProceed, Bound: 2 * T}},
		// A FlinkStateSnapshot.
		{"snapshot in progress", StepSnapshotInProgress, BlockInProgress, time.Minute, DeletionDecision{Action: DeletionWait, Bound: T, RecheckWithin: 4 * time.Minute}},
		{"snapshot in progress at the bound", StepSnapshotInProgress, BlockInProgress, T, DeletionDecision{Action: DeletionGiveUp, Reason: ReasonSnapshotAbandonedOnDeletion, Bound: T}},
		{"disposal waiting for a running job", StepSavepointDisposal, BlockUnreachable, T, DeletionDecision{Action: DeletionWait, Bound: 2 * T, RecheckWithin: T}},
		{"disposal failing at the bound", StepSavepointDisposal, BlockFailed, 2 * T, DeletionDecision{Action: DeletionGiveUp, Reason: ReasonSavepointNotDisposed, Bound: 2 * T}},
		// Operator restarted mid-deletion: the elapsed time is read from deletionTimestamp,
		// so a restart changes nothing in the decision.
		{"restarted after the bound", StepFinalSavepoint, BlockInProgress, T + time.Second, DeletionDecision{Action: DeletionGiveUp, Reason: ReasonNoFinalSavepoint, Bound: T}},
		// Clock skew: a deletionTimestamp ahead of the operator's clock waits longer, still bounded.
		{"deletion timestamp ahead", StepFinalSavepoint, BlockInProgress, -time.Second, DeletionDecision{Action: DeletionWait, Bound: T, RecheckWithin: T + time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideDeletion(DeletionObserved{Step: tt.step, Blocked: tt.blocked, Elapsed: tt.elapsed, Timeout: T})
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestDecideDeletionWithoutTimeout: a cleanup timeout of zero gives every blocked step up at
// once; nothing waits unbounded.
func TestDecideDeletionWithoutTimeout(t *testing.T) {
	for step := range deletionBound {
		got := DecideDeletion(DeletionObserved{Step: step, Blocked: BlockInProgress, Timeout: 0})
		assert.Equal(t, DeletionGiveUp, got.Action, step)
		assert.NotEmpty(t, got.Reason, step)
	}
}

// TestDeletionRequeue: a waiting step looks again at its bound at the latest.
func TestDeletionRequeue(t *testing.T) {
	for _, tt := range []struct {
		within, interval, want time.Duration
	}{
		{0, 10 * time.Second, 10 * time.Second},
		{time.Minute, 10 * time.Second, 10 * time.Second},
		{3 * time.Second, 10 * time.Second, 3 * time.Second},
		{time.Nanosecond, 10 * time.Second, time.Millisecond},
	} {
		t.Run(fmt.Sprint(tt.within), func(t *testing.T) {
			assert.Equal(t, tt.want, DeletionDecision{Action: DeletionWait, RecheckWithin: tt.within}.Requeue(tt.interval))
		})
	}
}
