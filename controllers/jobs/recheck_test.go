package jobs

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

func TestRecheck(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		elapsed time.Duration
		ceiling time.Duration
		want    time.Duration
	}{
		{"just triggered", 0, 10 * time.Second, MinRecheck},
		{"a clock behind the trigger time", -5 * time.Second, 10 * time.Second, MinRecheck},
		{"half of what has elapsed", 3 * time.Second, 10 * time.Second, 1500 * time.Millisecond},
		{"never later than the ceiling", time.Minute, 10 * time.Second, 10 * time.Second},
		{"a ceiling below the first look", time.Second, 100 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Recheck(t0, t0.Add(c.elapsed), c.ceiling))
		})
	}
}

// The looks at a stop that takes 800 ms: the first finds it pending, and the one that finds it
// done comes well before the 10 s progress check.
func TestRecheckFollowsAShortOperationClosely(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	now, looks := t0, 0
	for now.Sub(t0) < 800*time.Millisecond {
		now = now.Add(Recheck(t0, now, 10*time.Second))
		looks++
	}
	assert.LessOrEqual(t, now.Sub(t0), 1200*time.Millisecond, "found done at %s", now.Sub(t0))
	assert.LessOrEqual(t, looks, 4)
}

func TestPendingRecheckFollowsTheUpgradeSavepoint(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	triggered := now.Add(-2 * time.Second).UnixMilli()
	inFlight := &flinkv1beta1.CommonStatus{JobStatus: flinkv1beta1.JobStatus{SavepointInfo: &flinkv1beta1.SavepointInfo{
		TriggerID: "t", TriggerType: flinkv1beta1.SnapshotTriggerUpgrade, TriggerTimestamp: &triggered}}}
	assert.Equal(t, time.Second, (&JobStop{Status: inFlight}).PendingRecheck(now, 10*time.Second))

	manual := inFlight.DeepCopy()
	manual.JobStatus.SavepointInfo.TriggerType = flinkv1beta1.SnapshotTriggerManual
	assert.Equal(t, 10*time.Second, (&JobStop{Status: manual}).PendingRecheck(now, 10*time.Second), "no upgrade savepoint in flight")
	assert.Equal(t, 10*time.Second, (&JobStop{Status: &flinkv1beta1.CommonStatus{}}).PendingRecheck(now, 10*time.Second))
}

// A cancel is looked at again once it has been visible for CancellingVisible, then followed
// like any other operation: closely, never later than the progress-check interval.
func TestPendingRecheckLetsACancelBeSeen(t *testing.T) {
	now := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
	cancelledAgo := func(d time.Duration) *JobStop {
		return &JobStop{Status: &flinkv1beta1.CommonStatus{JobStatus: flinkv1beta1.JobStatus{
			State: flinkv1beta1.JobStatusCancelling, UpdateTime: fmt.Sprint(now.Add(-d).UnixMilli())}}}
	}
	assert.Equal(t, CancellingVisible, cancelledAgo(0).PendingRecheck(now, 10*time.Second), "just cancelled")
	assert.Equal(t, CancellingVisible-2*time.Second, cancelledAgo(2*time.Second).PendingRecheck(now, 10*time.Second))
	assert.Equal(t, 3*time.Second, cancelledAgo(6*time.Second).PendingRecheck(now, 10*time.Second), "past it, half the time it has taken")
	assert.Equal(t, 10*time.Second, cancelledAgo(time.Minute).PendingRecheck(now, 10*time.Second), "at most the progress-check interval")
	noTime := cancelledAgo(0)
	noTime.Status.JobStatus.UpdateTime = ""
	assert.Equal(t, MinRecheck, noTime.PendingRecheck(now, 10*time.Second), "no recorded time: looked at soon")
}
