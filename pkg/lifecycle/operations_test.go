package lifecycle

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// progressStep is one status computation of a scenario: the Progressing reason (True when it is
// an acting reason), the generation, and the snapshot the status records.
type progressStep struct {
	reason     Reason
	generation int64
	snapshot   string
	// neverStable: no spec was stable yet (the first deployment)
	neverStable bool
}

// wantOp is what a scenario leaves in status.operations, per operation.
type wantOp struct {
	kind       flinkv1beta1.OperationType
	outcome    flinkv1beta1.OperationOutcome
	generation int64
	snapshot   string
}

func TestRecordOperations(t *testing.T) {
	const sp1, sp2 = "file:///sp/savepoint-1", "file:///sp/savepoint-2"
	for _, c := range []struct {
		name  string
		steps []progressStep
		want  []wantOp
	}{
		{"first deployment", []progressStep{{ReasonUpgrading, 1, "", true}, {ReasonDeploying, 1, "", true}, {ReasonJobStarting, 1, "", true}, {ReasonSettled, 1, "", false}},
			[]wantOp{{flinkv1beta1.OperationDeploy, flinkv1beta1.OperationSucceeded, 1, ""}}},
		{"a resource at rest records nothing", []progressStep{{ReasonSettled, 1, "", false}, {ReasonSettled, 1, "", false}}, nil},
		{"savepoint upgrade: its stop and new JobManager are steps of it", []progressStep{
			{ReasonSettled, 1, "", false}, {ReasonSavepointing, 2, "", false}, {ReasonUpgrading, 2, sp1, false}, {ReasonDeploying, 2, sp1, false}, {ReasonJobStarting, 2, sp1, false}, {ReasonSettled, 2, "", false}},
			[]wantOp{{flinkv1beta1.OperationUpgrade, flinkv1beta1.OperationSucceeded, 2, sp1}}},
		{"suspend, then resume from its savepoint", []progressStep{
			{ReasonSettled, 1, "", false}, {ReasonSuspending, 2, "", false}, {ReasonSuspending, 2, sp1, false}, {ReasonSuspended, 2, sp1, false},
			{ReasonUpgrading, 3, sp1, false}, {ReasonDeploying, 3, sp1, false}, {ReasonSettled, 3, "", false}},
			[]wantOp{{flinkv1beta1.OperationSuspend, flinkv1beta1.OperationSucceeded, 2, sp1}, {flinkv1beta1.OperationResume, flinkv1beta1.OperationSucceeded, 3, sp1}}},
		{"a newer spec during an upgrade supersedes it", []progressStep{
			{ReasonUpgrading, 2, "", false}, {ReasonUpgrading, 3, sp1, false}, {ReasonSettled, 3, "", false}},
			[]wantOp{{flinkv1beta1.OperationUpgrade, flinkv1beta1.OperationSuperseded, 2, ""}, {flinkv1beta1.OperationUpgrade, flinkv1beta1.OperationSucceeded, 3, sp1}}},
		{"a rolled-back upgrade failed; the rollback succeeded", []progressStep{
			{ReasonUpgrading, 2, sp1, false}, {ReasonJobStarting, 2, sp1, false}, {ReasonRollingBack, 2, sp2, false},
			{ReasonUpgrading, 2, sp2, false}, {ReasonDeploying, 2, sp2, false}, {ReasonRolledBack, 2, sp2, false}},
			[]wantOp{{flinkv1beta1.OperationUpgrade, flinkv1beta1.OperationFailed, 2, sp1}, {flinkv1beta1.OperationRollback, flinkv1beta1.OperationSucceeded, 2, sp2}}},
		{"an upgrade whose job then restarts in a loop, rolled back after it settled, failed", []progressStep{
			{ReasonUpgrading, 2, sp1, false}, {ReasonJobStarting, 2, sp1, false}, {ReasonSettled, 2, sp1, false}, {ReasonRollingBack, 2, sp2, false},
			{ReasonUpgrading, 2, sp2, false}, {ReasonRolledBack, 2, sp2, false}},
			[]wantOp{{flinkv1beta1.OperationUpgrade, flinkv1beta1.OperationFailed, 2, sp1}, {flinkv1beta1.OperationRollback, flinkv1beta1.OperationSucceeded, 2, sp2}}},
		{"a rollback after a rescale leaves the rescale as it ended", []progressStep{
			{ReasonScaling, 2, "", false}, {ReasonSettled, 2, "", false}, {ReasonRollingBack, 2, sp2, false}, {ReasonRolledBack, 2, sp2, false}},
			[]wantOp{{flinkv1beta1.OperationScale, flinkv1beta1.OperationSucceeded, 2, ""}, {flinkv1beta1.OperationRollback, flinkv1beta1.OperationSucceeded, 2, sp2}}},
		{"an upgrade that waits for a person failed", []progressStep{{ReasonUpgrading, 2, "", false}, {ReasonWaitingForUser, 2, "", false}},
			[]wantOp{{flinkv1beta1.OperationUpgrade, flinkv1beta1.OperationFailed, 2, ""}}},
		{"a deletion supersedes what was in progress", []progressStep{{ReasonUpgrading, 2, "", false}, {ReasonDeleting, 2, "", false}},
			[]wantOp{{flinkv1beta1.OperationUpgrade, flinkv1beta1.OperationSuperseded, 2, ""}, {flinkv1beta1.OperationDelete, flinkv1beta1.OperationInProgress, 2, ""}}},
		{"a JobManager recovered without a spec change", []progressStep{{ReasonSettled, 1, "", false}, {ReasonDeploying, 1, "", false}, {ReasonSettled, 1, "", false}},
			[]wantOp{{flinkv1beta1.OperationDeploy, flinkv1beta1.OperationSucceeded, 1, ""}}},
		{"a spec change while the first deployment starts supersedes it", []progressStep{{ReasonDeploying, 1, "", false}, {ReasonUpgrading, 2, "", false}},
			[]wantOp{{flinkv1beta1.OperationDeploy, flinkv1beta1.OperationSuperseded, 1, ""}, {flinkv1beta1.OperationUpgrade, flinkv1beta1.OperationInProgress, 2, ""}}},
		{"a rescale in place: the upgrade's savepoint is not its snapshot", []progressStep{
			{ReasonSettled, 1, sp1, false}, {ReasonScaling, 2, sp1, false}, {ReasonScaling, 2, sp1, false}, {ReasonSettled, 2, sp1, false}},
			[]wantOp{{flinkv1beta1.OperationScale, flinkv1beta1.OperationSucceeded, 2, ""}}},
		{"a rescale replaced by another one", []progressStep{{ReasonScaling, 2, "", false}, {ReasonScaling, 3, "", false}, {ReasonSettled, 3, "", false}},
			[]wantOp{{flinkv1beta1.OperationScale, flinkv1beta1.OperationSuperseded, 2, ""}, {flinkv1beta1.OperationScale, flinkv1beta1.OperationSucceeded, 3, ""}}},
		{"a JobManager lost during a rescale is recovered as a deployment of its own", []progressStep{{ReasonScaling, 2, "", false}, {ReasonDeploying, 2, "", false}},
			[]wantOp{{flinkv1beta1.OperationScale, flinkv1beta1.OperationSuperseded, 2, ""}, {flinkv1beta1.OperationDeploy, flinkv1beta1.OperationInProgress, 2, ""}}},
		{"adopted mid-upgrade (no condition before): the upgrade is recorded from then", []progressStep{{ReasonUpgrading, 5, sp1, false}},
			[]wantOp{{flinkv1beta1.OperationUpgrade, flinkv1beta1.OperationInProgress, 5, sp1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
			var ops []flinkv1beta1.Operation
			var before *metav1.Condition
			for i, s := range c.steps {
				after := progressCondition(s.reason)
				ops = RecordOperations(ops, OperationStep{Before: before, After: after, Degraded: metav1.Condition{Message: "degraded " + string(s.reason)},
					Generation: s.generation, Snapshot: s.snapshot, NeverStable: s.neverStable, Now: metav1.NewTime(t0.Add(time.Duration(i) * time.Second))})
				before = &after
			}
			var got []wantOp
			for _, op := range ops {
				got = append(got, wantOp{op.Type, op.Outcome, op.Generation, op.Snapshot})
				assert.Equal(t, op.Outcome == flinkv1beta1.OperationInProgress, op.EndedAt == nil, "%s: endedAt set once it ended", op.Type)
				if op.EndedAt != nil {
					assert.False(t, op.EndedAt.Before(&op.StartedAt), "%s ends after it started", op.Type)
				}
			}
			assert.Equal(t, c.want, got)
		})
	}
}

func TestRecordOperationsSaysWhyAnOperationFailed(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC))
	ops := RecordOperations(nil, OperationStep{After: progressCondition(ReasonUpgrading), Generation: 2, Now: now})
	ops = RecordOperations(ops, OperationStep{After: progressCondition(ReasonWaitingForUser),
		Degraded: metav1.Condition{Message: "ManualRestoreRequired: choose the state to restore"}, Generation: 2, Now: now})
	assert.Equal(t, "ManualRestoreRequired: choose the state to restore", ops[0].Message)
}

// TestRecordOperationsScaleTimedOut: a rescale Flink did not carry out in time ends Failed with
// what Degraded says, not Succeeded because Progressing turned False.
func TestRecordOperationsScaleTimedOut(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC))
	ops := RecordOperations(nil, OperationStep{After: progressCondition(ReasonScaling), Generation: 2, Now: now})
	ops = RecordOperations(ops, OperationStep{After: progressCondition(ReasonSettled), Degraded: metav1.Condition{Type: ConditionDegraded,
		Status: metav1.ConditionTrue, Reason: string(ReasonScaleTimedOut), Message: "asked for a:4, Flink reports a:2"}, Generation: 2, Now: now})
	assert.Equal(t, flinkv1beta1.OperationFailed, ops[0].Outcome)
	assert.Equal(t, "asked for a:4, Flink reports a:2", ops[0].Message)
}

func TestRecordOperationsKeepsTheLatest(t *testing.T) {
	var ops []flinkv1beta1.Operation
	for g := int64(1); g <= MaxOperations+5; g++ {
		ops = RecordOperations(ops, OperationStep{After: progressCondition(ReasonUpgrading), Generation: g, Now: metav1.Now()})
		ops = RecordOperations(ops, OperationStep{After: progressCondition(ReasonSettled), Generation: g, Now: metav1.Now()})
	}
	assert.Len(t, ops, MaxOperations)
	assert.Equal(t, int64(6), ops[0].Generation, "the oldest went first")
	assert.Equal(t, int64(MaxOperations+5), ops[len(ops)-1].Generation)

	// A status someone else wrote with more is cut to the latest, even at rest.
	foreign := make([]flinkv1beta1.Operation, 1000)
	foreign[999].Generation = 999
	ops = RecordOperations(foreign, OperationStep{After: progressCondition(ReasonSettled), Generation: 1, Now: metav1.Now()})
	assert.Len(t, ops, MaxOperations)
	assert.Equal(t, int64(999), ops[len(ops)-1].Generation)
}

// progressCondition is the Progressing condition assess computes with reason r: True for the
// reasons of an action, False for those at rest.
func progressCondition(r Reason) metav1.Condition {
	status := metav1.ConditionFalse
	if operationOf(r) != "" {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{Type: ConditionProgressing, Status: status, Reason: string(r), Message: fmt.Sprintf("message of %s", r)}
}

// TestRecordOperationsRollbackThroughHA: a rollback through HA metadata restores a checkpoint
// only Flink knows; RestoreUnrecorded asks for it while the rollback is open, and the path
// Flink reports is what the Rollback operation records as it ends.
func TestRecordOperationsRollbackThroughHA(t *testing.T) {
	const restored = "file:///ha/checkpoints/chk-7"
	now := metav1.NewTime(time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC))
	ops := RecordOperations(nil, OperationStep{After: progressCondition(ReasonRollingBack), Generation: 2, Now: now})
	require.True(t, RestoreUnrecorded(ops), "the rollback's snapshot is not known yet")
	ops = RecordOperations(ops, OperationStep{After: progressCondition(ReasonDeploying), Generation: 2, Now: now})
	ops = RecordOperations(ops, OperationStep{After: progressCondition(ReasonRolledBack), Generation: 2, Restored: restored, Now: now})
	require.Len(t, ops, 1)
	assert.Equal(t, flinkv1beta1.OperationRollback, ops[0].Type)
	assert.Equal(t, flinkv1beta1.OperationSucceeded, ops[0].Outcome)
	assert.Equal(t, restored, ops[0].Snapshot)
	assert.False(t, RestoreUnrecorded(ops))

	// A snapshot already recorded (a savepoint or checkpoint path the operator restored) stays.
	ops = RecordOperations(nil, OperationStep{After: progressCondition(ReasonRollingBack), Snapshot: "file:///sp/savepoint-1", Generation: 2, Now: now})
	assert.False(t, RestoreUnrecorded(ops))
	ops = RecordOperations(ops, OperationStep{After: progressCondition(ReasonRolledBack), Restored: restored, Generation: 2, Now: now})
	assert.Equal(t, "file:///sp/savepoint-1", ops[0].Snapshot)
}
