package jobs

import (
	"fmt"
	"strings"
	"time"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/schedule"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// Event reasons of snapshots.
const (
	ReasonSavepoint       = "SavepointTriggered"
	ReasonSavepointDone   = "SavepointCompleted"
	ReasonCheckpoint      = "CheckpointTriggered"
	ReasonCheckpointDone  = "CheckpointCompleted"
	ReasonCheckpointError = "CheckpointError"
	// ReasonPeriodicIntervalClamped: a periodic snapshot interval below the minimum was raised.
	ReasonPeriodicIntervalClamped = "PeriodicIntervalClamped"
)

func nonceChanged(deployed, desired *int64) bool {
	return desired != nil && (deployed == nil || *deployed != *desired)
}

// pendingSnapshotSavepoint says a manual or periodic savepoint (legacy mode) was triggered and
// its outcome is not recorded yet.
func pendingSnapshotSavepoint(st *flinkv1beta1.CommonStatus) bool {
	info := st.JobStatus.SavepointInfo
	return info != nil && info.TriggerID != "" && info.TriggerType != flinkv1beta1.SnapshotTriggerUpgrade
}

// abandonPendingSavepoint forgets a manual or periodic savepoint in flight, with a warning: its
// outcome is never recorded (Flink may still write it to the savepoint directory).
func abandonPendingSavepoint(rec record.EventRecorder, obj runtime.Object, st *flinkv1beta1.CommonStatus, why string) {
	info := st.JobStatus.SavepointInfo
	rec.Eventf(obj, corev1.EventTypeWarning, reconciler.ReasonSavepointError, "%s savepoint %s abandoned: %s", info.TriggerType, info.TriggerID, why)
	info.TriggerID, info.TriggerType, info.TriggerTimestamp = "", "", nil
}

// periodicDue: a periodic option is set (a duration, or a Quartz cron expression as upstream
// accepts) and the next snapshot is due since the last periodic one (or the job's start).
//
// Snapshots are never taken more often than minInterval (the operator's reconcile interval,
// MinPeriodicInterval), whatever the option says: upstream has no minimum, and an interval of
// seconds would have the operator take a savepoint, and create a FlinkStateSnapshot, at every
// progress check. A shorter interval is clamped (periodicBelowMinimum tells the user), not
// refused, so resources written for upstream keep working.
func periodicDue(conf flinkconf.Config, key string, last int64, jobStart string, minInterval time.Duration) bool {
	raw := strings.TrimSpace(conf[key])
	if raw == "" {
		return false
	}
	since := last
	if since == 0 {
		if ms, err := parseMillis(jobStart); err == nil {
			since = ms
		}
	}
	elapsed := time.Since(time.UnixMilli(since))
	if interval, err := flinkconf.ParseFlinkDuration(raw); err == nil {
		return interval > 0 && elapsed >= max(interval, minInterval)
	}
	cron, err := schedule.ParseCron(raw)
	if err != nil {
		return false // rejected by validation with a message naming the option
	}
	next := cron.Next(time.UnixMilli(since))
	return !next.IsZero() && !time.Now().Before(next) && elapsed >= minInterval
}

// MinPeriodicInterval is the shortest interval of periodic snapshots: the reconcile interval
// (kubernetes.operator.reconcile.interval), since a settled job is looked at that often anyway.
func MinPeriodicInterval(intervals reconciler.Intervals) time.Duration { return intervals.Reconcile }

// warnPeriodicBelowMinimum records a Warning event when a periodic option's duration is shorter
// than minInterval, as a periodic snapshot is taken: the user asked for more than is done.
func warnPeriodicBelowMinimum(rec record.EventRecorder, obj runtime.Object, conf flinkconf.Config, key string, minInterval time.Duration) {
	interval, err := flinkconf.ParseFlinkDuration(strings.TrimSpace(conf[key]))
	if err != nil || interval <= 0 || interval >= minInterval {
		return
	}
	rec.Eventf(obj, corev1.EventTypeWarning, ReasonPeriodicIntervalClamped,
		"%s %s is below the operator's minimum, its reconcile interval %s: periodic snapshots are taken every %s", key, interval, minInterval, minInterval)
}

func parseMillis(s string) (int64, error) {
	var v int64
	_, err := fmt.Sscan(s, &v)
	return v, err
}

// SavepointFormat is kubernetes.operator.savepoint.format.type (CANONICAL or NATIVE).
func SavepointFormat(conf flinkconf.Config) flink.SavepointFormat {
	if strings.EqualFold(options.SavepointFormat.Get(conf), string(flink.SavepointFormatNative)) {
		return flink.SavepointFormatNative
	}
	return flink.SavepointFormatCanonical
}
