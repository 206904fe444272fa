package jobs

import (
	"time"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// MinRecheck is the first look at an operation Flink was just asked for. Not sooner, although a
// small job's stop-with-savepoint takes Flink 30 to 50 ms: at 100 ms the operator deleted the
// JobManager while Flink was still cleaning up after the stopped job on a busy machine, and its
// JVM then hung on the pod's SIGTERM until Flink's shutdown safeguard halted it 5 s later
// (make bench-flink: 2 savepoint upgrades of 9, none of 18 at 250 ms).
const MinRecheck = 250 * time.Millisecond

// Recheck says when to look again at an operation triggered at since and still pending at now:
// after half the time it has taken so far, at least MinRecheck and at most ceiling (the
// progress-check interval). A stop-with-savepoint of a small job completes within a second, and
// the upgrade waits for nothing else; looking only at the progress-check interval (10 s by
// default) made the interval, not Flink, the upgrade's duration. Halving keeps the number of
// looks logarithmic in the operation's duration (about ten before the ceiling at 10 s) and each
// look late by at most half of what has elapsed.
func Recheck(since, now time.Time, ceiling time.Duration) time.Duration {
	if ceiling <= MinRecheck {
		return ceiling
	}
	elapsed := now.Sub(since)
	if elapsed < 0 {
		elapsed = 0 // a clock behind the recorded trigger time: the operation is new
	}
	return min(max(elapsed/2, MinRecheck), ceiling)
}

// PendingRecheck is when to look again at a stop that is pending: by Recheck from the upgrade
// savepoint's trigger time while one is in flight; while the job is CANCELLING, once the cancel
// has been visible for CancellingVisible, then by Recheck from it; else at ceiling.
func (x *JobStop) PendingRecheck(now time.Time, ceiling time.Duration) time.Duration {
	js := &x.Status.JobStatus
	if js.State == flinkv1beta1.JobStatusCancelling {
		age, known := stateAge(js, now)
		switch {
		case !known:
			return MinRecheck
		case age < CancellingVisible:
			return CancellingVisible - age
		}
		return Recheck(now.Add(-age), now, ceiling)
	}
	info := x.Status.JobStatus.SavepointInfo
	if !UpgradeSavepointInFlight(x.Status) || info == nil || info.TriggerTimestamp == nil {
		return ceiling
	}
	return Recheck(time.UnixMilli(*info.TriggerTimestamp), now, ceiling)
}
