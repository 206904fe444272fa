package jobs

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Flink's options that bound the checkpoint history.
const (
	// Flink's number of retained checkpoints; the CHECKPOINT resources are capped at it too.
	// Flink 1.20 renamed state.checkpoints.num-retained; either spelling is honoured.
	optCheckpointsRetained       = "execution.checkpointing.num-retained"
	optCheckpointsRetainedLegacy = "state.checkpoints.num-retained"
	defaultCheckpointsRetained   = 1
)

// snapshotHistoryLimits bound how many of a job's operator-taken snapshot resources history
// cleanup keeps, and for how long.
type snapshotHistoryLimits struct {
	savepointMaxCount  int
	savepointMaxAge    time.Duration
	checkpointMaxCount int // checkpoints have no age limit (upstream's rule)
}

// snapshotHistoryLimitsFrom reads the limits from a job's configuration. The .threshold caps
// are read from operatorConf, the operator's own configuration, so that a resource cannot
// lift them; a nil operatorConf reads them from conf. Invalid or non-positive values fall back
// to the defaults (validation reports them); every count is at least 1.
func snapshotHistoryLimitsFrom(conf, operatorConf flinkconf.Config) snapshotHistoryLimits {
	if operatorConf == nil {
		operatorConf = conf
	}
	limits := snapshotHistoryLimits{savepointMaxCount: options.SavepointHistoryMaxCount.Get(nil), savepointMaxAge: options.SavepointHistoryMaxAge.Get(nil),
		checkpointMaxCount: defaultCheckpointsRetained}
	if n := options.SavepointHistoryMaxCount.Get(conf); n >= 1 {
		limits.savepointMaxCount = n
	}
	if capped := options.SavepointHistoryMaxCountThreshold.Get(operatorConf); capped >= 1 && capped < limits.savepointMaxCount {
		limits.savepointMaxCount = capped
	}
	if d := options.SavepointHistoryMaxAge.Get(conf); d > 0 {
		limits.savepointMaxAge = d
	}
	if capped := options.SavepointHistoryMaxAgeThreshold.Get(operatorConf); capped > 0 && capped < limits.savepointMaxAge {
		limits.savepointMaxAge = capped
	}
	retained := conf.Get(optCheckpointsRetained, conf.Get(optCheckpointsRetainedLegacy, ""))
	if n, err := strconv.Atoi(strings.TrimSpace(retained)); err == nil && n >= 1 {
		limits.checkpointMaxCount = n
	}
	return limits
}

// snapshotsToCleanUp decides which of one job's snapshot resources history cleanup deletes.
// Only the snapshots the operator took on its own are history: trigger type (label
// snapshot.trigger-type) PERIODIC or UPGRADE. MANUAL snapshots, and snapshots without the
// label, are the user's; they are never deleted here, whatever their age or number (deleting
// a savepoint resource may dispose its data).
//
// Savepoints and checkpoints are separate histories. In each, oldest first, a snapshot is
// deleted while the history holds more than its max count, and a savepoint also when older
// than the max age; snapshots still in flight count but are never deleted (that would abandon
// a trigger Flink is executing and orphan its result). One snapshot always stays: the newest
// completed one, else the newest. The newest completed savepoint is kept even when it is older
// than max.age, because it may be the only state the job can be restored from: periodic
// savepoints rarer than max.age, or a job whose later savepoints all failed, would otherwise
// be left with none, and with dispose-on-delete its data would be gone too.
func snapshotsToCleanUp(snapshots []flinkv1beta1.FlinkStateSnapshot, limits snapshotHistoryLimits, now time.Time) []flinkv1beta1.FlinkStateSnapshot {
	var savepoints, checkpoints []flinkv1beta1.FlinkStateSnapshot
	for _, s := range snapshots {
		if !s.DeletionTimestamp.IsZero() || !isHistory(s) {
			continue
		}
		if s.Spec.Checkpoint != nil {
			checkpoints = append(checkpoints, s)
		} else {
			savepoints = append(savepoints, s)
		}
	}
	out := historyBeyondLimits(savepoints, limits.savepointMaxCount, limits.savepointMaxAge, now)
	return append(out, historyBeyondLimits(checkpoints, limits.checkpointMaxCount, 0, now)...)
}

// isHistory: the snapshot was taken by the operator on its own (upstream's
// CLEAN_UP_SNAPSHOT_TRIGGER_TYPES).
func isHistory(s flinkv1beta1.FlinkStateSnapshot) bool {
	switch flinkv1beta1.SnapshotTriggerType(s.Labels[LabelSnapshotTrigger]) {
	case flinkv1beta1.SnapshotTriggerPeriodic, flinkv1beta1.SnapshotTriggerUpgrade:
		return true
	}
	return false
}

// historyBeyondLimits applies the count and age limits to one history (see
// snapshotsToCleanUp). maxAge 0 means no age limit.
func historyBeyondLimits(history []flinkv1beta1.FlinkStateSnapshot, maxCount int, maxAge time.Duration, now time.Time) []flinkv1beta1.FlinkStateSnapshot {
	if len(history) < 2 {
		return nil
	}
	sort.SliceStable(history, func(i, j int) bool { return TakenBefore(history[i], history[j]) })
	kept := len(history) - 1
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Status.State == flinkv1beta1.SnapshotCompleted {
			kept = i
			break
		}
	}
	var out []flinkv1beta1.FlinkStateSnapshot
	remaining := len(history)
	for i, s := range history {
		if i == kept || !snapshotFinished(s) {
			continue
		}
		tooMany := remaining > maxCount
		tooOld := maxAge > 0 && now.Sub(s.CreationTimestamp.Time) > maxAge
		if tooMany || tooOld {
			out = append(out, s)
			remaining--
		}
	}
	return out
}

func snapshotFinished(s flinkv1beta1.FlinkStateSnapshot) bool {
	switch s.Status.State {
	case flinkv1beta1.SnapshotCompleted, flinkv1beta1.SnapshotFailed, flinkv1beta1.SnapshotAbandoned:
		return true
	}
	return false
}

// TakenBefore orders snapshots by creationTimestamp (upstream's order). That has second
// precision, so within a second the trigger time that ends an operator-made name
// (<job>-<kind>-<trigger>-<epochMillis>) decides, then the name.
func TakenBefore(a, b flinkv1beta1.FlinkStateSnapshot) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if ma, mb := nameMillis(a.Name), nameMillis(b.Name); ma != mb {
		return ma < mb
	}
	return a.Name < b.Name
}

// nameMillis is the epoch-millisecond suffix of an operator-made snapshot name, 0 if none.
func nameMillis(name string) int64 {
	ms, err := strconv.ParseInt(name[strings.LastIndexByte(name, '-')+1:], 10, 64)
	if err != nil {
		return 0
	}
	return ms
}

// TrimSnapshotHistory deletes the snapshot resources of one job that snapshotsToCleanUp
// selects, unless kubernetes.operator.savepoint.cleanup.enabled is false. A deleted savepoint's
// data is disposed by the snapshot controller only if the resource says so (disposeOnDelete);
// a checkpoint's never (Flink owns it).
func TrimSnapshotHistory(ctx context.Context, c client.Client, ns string, kind flinkv1beta1.JobKind, name string, conf, operatorConf flinkconf.Config, now time.Time) error {
	if !savepointCleanupEnabled(conf) {
		return nil
	}
	var list flinkv1beta1.FlinkStateSnapshotList
	if err := c.List(ctx, &list, client.InNamespace(ns),
		client.MatchingLabels{LabelJobReferenceKind: string(kind), LabelJobReferenceName: name}); err != nil {
		return fmt.Errorf("list snapshots of %s %s/%s: %w", kind, ns, name, err)
	}
	for _, s := range snapshotsToCleanUp(list.Items, snapshotHistoryLimitsFrom(conf, operatorConf), now) {
		// The UID precondition: a snapshot recreated under the same name since the list is not
		// the one selected (the API server answers Conflict).
		err := c.Delete(ctx, &s, client.Preconditions{UID: &s.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("trim snapshot history of %s %s/%s: delete %s: %w", kind, ns, name, s.Name, err)
		}
		log.FromContext(ctx).Info("trimmed snapshot history", "snapshot", s.Name,
			"trigger", s.Labels[LabelSnapshotTrigger], "type", SnapshotKind(&s))
	}
	return nil
}

// savepointCleanupEnabled: history cleanup runs unless kubernetes.operator.savepoint.cleanup.enabled
// turns it off.
func savepointCleanupEnabled(conf flinkconf.Config) bool { return options.SavepointCleanup.Get(conf) }
