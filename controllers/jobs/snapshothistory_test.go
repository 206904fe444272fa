package jobs

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// historyEntry describes one snapshot resource of the job "orders" for TestSnapshotsToCleanUp.
type historyEntry struct {
	name       string
	trigger    flinkv1beta1.SnapshotTriggerType // "" leaves the label off (a hand-made snapshot)
	checkpoint bool
	state      flinkv1beta1.SnapshotState
	age        time.Duration // creationTimestamp = now - age
	deleting   bool
}

func (e historyEntry) snapshot(now time.Time) flinkv1beta1.FlinkStateSnapshot {
	kind := "SAVEPOINT"
	spec := flinkv1beta1.FlinkStateSnapshotSpec{JobReference: &flinkv1beta1.JobReference{Kind: "FlinkDeployment", Name: "orders"}}
	if e.checkpoint {
		kind = "CHECKPOINT"
		spec.Checkpoint = &flinkv1beta1.CheckpointSpec{}
	} else {
		spec.Savepoint = &flinkv1beta1.SavepointSpec{}
	}
	labels := map[string]string{LabelSnapshotType: kind, LabelJobReferenceKind: "FlinkDeployment", LabelJobReferenceName: "orders"}
	if e.trigger != "" {
		labels[LabelSnapshotTrigger] = string(e.trigger)
	}
	s := flinkv1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: e.name, Labels: labels,
			// The API server's precision: whole seconds.
			CreationTimestamp: metav1.NewTime(now.Add(-e.age).Truncate(time.Second))},
		Spec:   spec,
		Status: flinkv1beta1.FlinkStateSnapshotStatus{State: e.state},
	}
	if e.deleting {
		s.DeletionTimestamp = &s.CreationTimestamp
	}
	return s
}

func TestSnapshotsToCleanUp(t *testing.T) {
	const (
		manual    = flinkv1beta1.SnapshotTriggerManual
		periodic  = flinkv1beta1.SnapshotTriggerPeriodic
		upgrade   = flinkv1beta1.SnapshotTriggerUpgrade
		unknown   = flinkv1beta1.SnapshotTriggerUnknown
		completed = flinkv1beta1.SnapshotCompleted
		failed    = flinkv1beta1.SnapshotFailed
		abandoned = flinkv1beta1.SnapshotAbandoned
		running   = flinkv1beta1.SnapshotInProgress
		pending   = flinkv1beta1.SnapshotTriggerPending
		day       = 24 * time.Hour
	)
	defaults := snapshotHistoryLimits{savepointMaxCount: 10, savepointMaxAge: day, checkpointMaxCount: 1}
	tight := snapshotHistoryLimits{savepointMaxCount: 1, savepointMaxAge: time.Hour, checkpointMaxCount: 1}
	withCounts := func(savepoints, checkpoints int) snapshotHistoryLimits {
		return snapshotHistoryLimits{savepointMaxCount: savepoints, savepointMaxAge: day, checkpointMaxCount: checkpoints}
	}
	tests := []struct {
		name    string
		limits  snapshotHistoryLimits
		history []historyEntry
		deleted []string
	}{
		{
			name:   "manual and unlabelled savepoints are kept whatever their age and number",
			limits: tight,
			history: []historyEntry{
				{name: "before-migration", trigger: manual, state: completed, age: 2 * day},
				{name: "hand-made", state: completed, age: 3 * day},
				{name: "orders-savepoint-manual-1", trigger: manual, state: completed, age: 5 * day},
				{name: "orders-savepoint-manual-2", trigger: manual, state: failed, age: 4 * day},
				{name: "orders-savepoint-manual-3", trigger: manual, state: completed, age: time.Minute},
				{name: "unknown-trigger", trigger: unknown, state: completed, age: 2 * day},
			},
		},
		{
			name:   "manual checkpoints are kept whatever their number",
			limits: tight,
			history: []historyEntry{
				{name: "orders-checkpoint-manual-1", trigger: manual, checkpoint: true, state: completed, age: 3 * time.Minute},
				{name: "orders-checkpoint-manual-2", trigger: manual, checkpoint: true, state: completed, age: 2 * time.Minute},
				{name: "hand-made-checkpoint", checkpoint: true, state: completed, age: time.Minute},
			},
		},
		{
			name:   "periodic savepoints beyond max.count go, oldest first",
			limits: withCounts(2, 1),
			history: []historyEntry{
				{name: "orders-savepoint-periodic-1", trigger: periodic, state: completed, age: 4 * time.Minute},
				{name: "orders-savepoint-periodic-2", trigger: periodic, state: completed, age: 3 * time.Minute},
				{name: "orders-savepoint-periodic-3", trigger: periodic, state: completed, age: 2 * time.Minute},
				{name: "orders-savepoint-periodic-4", trigger: periodic, state: completed, age: time.Minute},
			},
			deleted: []string{"orders-savepoint-periodic-1", "orders-savepoint-periodic-2"},
		},
		{
			name:   "periodic and upgrade savepoints older than max.age go",
			limits: defaults,
			history: []historyEntry{
				{name: "orders-savepoint-periodic-1", trigger: periodic, state: completed, age: 50 * time.Hour},
				{name: "orders-savepoint-upgrade-2", trigger: upgrade, state: completed, age: 30 * time.Hour},
				{name: "orders-savepoint-periodic-3", trigger: periodic, state: failed, age: 25 * time.Hour},
				{name: "orders-savepoint-periodic-4", trigger: periodic, state: completed, age: 23 * time.Hour},
			},
			deleted: []string{"orders-savepoint-periodic-1", "orders-savepoint-upgrade-2", "orders-savepoint-periodic-3"},
		},
		{
			name:   "upgrade savepoints count against max.count with periodic ones",
			limits: withCounts(2, 1),
			history: []historyEntry{
				{name: "orders-savepoint-upgrade-1", trigger: upgrade, state: completed, age: 3 * time.Minute},
				{name: "orders-savepoint-periodic-2", trigger: periodic, state: completed, age: 2 * time.Minute},
				{name: "orders-savepoint-upgrade-3", trigger: upgrade, state: completed, age: time.Minute},
			},
			deleted: []string{"orders-savepoint-upgrade-1"},
		},
		{
			name:   "manual savepoints neither go nor count against periodic ones",
			limits: withCounts(2, 1),
			history: []historyEntry{
				{name: "orders-savepoint-manual-1", trigger: manual, state: completed, age: 5 * time.Minute},
				{name: "orders-savepoint-manual-2", trigger: manual, state: completed, age: 4 * time.Minute},
				{name: "orders-savepoint-periodic-3", trigger: periodic, state: completed, age: 3 * time.Minute},
				{name: "orders-savepoint-manual-4", trigger: manual, state: completed, age: 2 * time.Minute},
				{name: "orders-savepoint-periodic-5", trigger: periodic, state: completed, age: time.Minute},
			},
		},
		{
			name:   "the newest completed savepoint stays past max.age",
			limits: defaults,
			history: []historyEntry{
				{name: "orders-savepoint-periodic-1", trigger: periodic, state: completed, age: 72 * time.Hour},
				{name: "orders-savepoint-periodic-2", trigger: periodic, state: completed, age: 48 * time.Hour},
				{name: "orders-savepoint-periodic-3", trigger: periodic, state: failed, age: 30 * time.Hour},
				{name: "orders-savepoint-periodic-4", trigger: periodic, state: abandoned, age: 26 * time.Hour},
			},
			deleted: []string{"orders-savepoint-periodic-1", "orders-savepoint-periodic-3", "orders-savepoint-periodic-4"},
		},
		{
			name:   "the newest completed savepoint stays past max.count, newer failures go",
			limits: tight,
			history: []historyEntry{
				{name: "orders-savepoint-periodic-1", trigger: periodic, state: completed, age: 3 * time.Minute},
				{name: "orders-savepoint-periodic-2", trigger: periodic, state: failed, age: 2 * time.Minute},
				{name: "orders-savepoint-periodic-3", trigger: periodic, state: failed, age: time.Minute},
			},
			deleted: []string{"orders-savepoint-periodic-2", "orders-savepoint-periodic-3"},
		},
		{
			name:   "without a completed savepoint the newest stays",
			limits: defaults,
			history: []historyEntry{
				{name: "orders-savepoint-periodic-1", trigger: periodic, state: failed, age: 72 * time.Hour},
				{name: "orders-savepoint-periodic-2", trigger: periodic, state: failed, age: 48 * time.Hour},
				{name: "orders-savepoint-periodic-3", trigger: periodic, state: failed, age: 30 * time.Hour},
			},
			deleted: []string{"orders-savepoint-periodic-1", "orders-savepoint-periodic-2"},
		},
		{
			name:   "snapshots in flight count but never go",
			limits: withCounts(2, 1),
			history: []historyEntry{
				{name: "orders-savepoint-periodic-1", trigger: periodic, state: running, age: 50 * time.Hour},
				{name: "orders-savepoint-periodic-2", trigger: periodic, state: completed, age: 3 * time.Minute},
				{name: "orders-savepoint-periodic-3", trigger: periodic, state: completed, age: 2 * time.Minute},
				{name: "orders-savepoint-periodic-4", trigger: periodic, state: pending, age: time.Minute},
			},
			deleted: []string{"orders-savepoint-periodic-2"},
		},
		{
			name:   "snapshots being deleted neither go again nor count",
			limits: tight,
			history: []historyEntry{
				{name: "orders-savepoint-periodic-1", trigger: periodic, state: completed, age: 2 * time.Minute, deleting: true},
				{name: "orders-savepoint-periodic-2", trigger: periodic, state: completed, age: time.Minute},
			},
		},
		{
			name:   "periodic checkpoints are capped at num-retained (1), the newest completed stays",
			limits: defaults,
			history: []historyEntry{
				{name: "orders-checkpoint-periodic-1", trigger: periodic, checkpoint: true, state: completed, age: 3 * time.Minute},
				{name: "orders-checkpoint-periodic-2", trigger: periodic, checkpoint: true, state: completed, age: 2 * time.Minute},
				{name: "orders-checkpoint-periodic-3", trigger: periodic, checkpoint: true, state: failed, age: time.Minute},
				{name: "orders-checkpoint-manual-4", trigger: manual, checkpoint: true, state: completed, age: 30 * time.Second},
			},
			deleted: []string{"orders-checkpoint-periodic-1", "orders-checkpoint-periodic-3"},
		},
		{
			name:   "checkpoints have no age limit and a history of their own",
			limits: withCounts(1, 2),
			history: []historyEntry{
				{name: "orders-checkpoint-periodic-1", trigger: periodic, checkpoint: true, state: completed, age: 100 * time.Hour},
				{name: "orders-savepoint-periodic-2", trigger: periodic, state: completed, age: 3 * time.Minute},
				{name: "orders-checkpoint-periodic-3", trigger: periodic, checkpoint: true, state: completed, age: 90 * time.Hour},
			},
		},
		{
			name:   "within one creationTimestamp second the trigger time in the name orders",
			limits: tight,
			history: []historyEntry{
				// By name alone "periodic" sorts before "upgrade"; the millis say the upgrade
				// savepoint is the older one.
				{name: "orders-savepoint-periodic-1700000000900", trigger: periodic, state: completed},
				{name: "orders-savepoint-upgrade-1700000000100", trigger: upgrade, state: completed},
			},
			deleted: []string{"orders-savepoint-upgrade-1700000000100"},
		},
		{
			name:   "a single snapshot always stays",
			limits: tight,
			history: []historyEntry{
				{name: "orders-savepoint-periodic-1", trigger: periodic, state: failed, age: 100 * time.Hour},
			},
		},
	}
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var snapshots []flinkv1beta1.FlinkStateSnapshot
			for _, e := range tt.history {
				snapshots = append(snapshots, e.snapshot(now))
			}
			var deleted []string
			for _, s := range snapshotsToCleanUp(snapshots, tt.limits, now) {
				deleted = append(deleted, s.Name)
			}
			assert.ElementsMatch(t, tt.deleted, deleted)
		})
	}
}

func TestSnapshotHistoryLimitsFrom(t *testing.T) {
	defaults := snapshotHistoryLimits{savepointMaxCount: 10, savepointMaxAge: 24 * time.Hour, checkpointMaxCount: 1}
	tests := []struct {
		name         string
		conf         flinkconf.Config
		operatorConf flinkconf.Config
		want         snapshotHistoryLimits
	}{
		{name: "upstream defaults", want: defaults},
		{
			name: "the resource's values",
			conf: flinkconf.Config{options.SavepointHistoryMaxCount.Key: "3", options.SavepointHistoryMaxAge.Key: "2 h", optCheckpointsRetained: "4"},
			want: snapshotHistoryLimits{savepointMaxCount: 3, savepointMaxAge: 2 * time.Hour, checkpointMaxCount: 4},
		},
		{
			name: "num-retained under its pre-1.20 name",
			conf: flinkconf.Config{optCheckpointsRetainedLegacy: "3"},
			want: snapshotHistoryLimits{savepointMaxCount: 10, savepointMaxAge: 24 * time.Hour, checkpointMaxCount: 3},
		},
		{
			name: "num-retained: the new name wins",
			conf: flinkconf.Config{optCheckpointsRetained: "2", optCheckpointsRetainedLegacy: "3"},
			want: snapshotHistoryLimits{savepointMaxCount: 10, savepointMaxAge: 24 * time.Hour, checkpointMaxCount: 2},
		},
		{
			name: "invalid and non-positive values fall back to the defaults",
			conf: flinkconf.Config{options.SavepointHistoryMaxCount.Key: "0", options.SavepointHistoryMaxAge.Key: "soon", optCheckpointsRetained: "-1"},
			want: defaults,
		},
		{
			name:         "the operator's thresholds cap larger values",
			conf:         flinkconf.Config{options.SavepointHistoryMaxCount.Key: "50", options.SavepointHistoryMaxAge.Key: "7 d"},
			operatorConf: flinkconf.Config{options.SavepointHistoryMaxCountThreshold.Key: "20", options.SavepointHistoryMaxAgeThreshold.Key: "2 d"},
			want:         snapshotHistoryLimits{savepointMaxCount: 20, savepointMaxAge: 48 * time.Hour, checkpointMaxCount: 1},
		},
		{
			name:         "the operator's thresholds cap the defaults",
			operatorConf: flinkconf.Config{options.SavepointHistoryMaxCountThreshold.Key: "5", options.SavepointHistoryMaxAgeThreshold.Key: "1 h"},
			want:         snapshotHistoryLimits{savepointMaxCount: 5, savepointMaxAge: time.Hour, checkpointMaxCount: 1},
		},
		{
			name:         "smaller values are left alone",
			conf:         flinkconf.Config{options.SavepointHistoryMaxCount.Key: "3", options.SavepointHistoryMaxAge.Key: "1 h"},
			operatorConf: flinkconf.Config{options.SavepointHistoryMaxCountThreshold.Key: "20", options.SavepointHistoryMaxAgeThreshold.Key: "2 d"},
			want:         snapshotHistoryLimits{savepointMaxCount: 3, savepointMaxAge: time.Hour, checkpointMaxCount: 1},
		},
		{
			name: "a resource cannot lift the operator's thresholds",
			conf: flinkconf.Config{options.SavepointHistoryMaxCount.Key: "50", options.SavepointHistoryMaxCountThreshold.Key: "100",
				options.SavepointHistoryMaxAge.Key: "7 d", options.SavepointHistoryMaxAgeThreshold.Key: "30 d"},
			operatorConf: flinkconf.Config{options.SavepointHistoryMaxCountThreshold.Key: "20", options.SavepointHistoryMaxAgeThreshold.Key: "2 d"},
			want:         snapshotHistoryLimits{savepointMaxCount: 20, savepointMaxAge: 48 * time.Hour, checkpointMaxCount: 1},
		},
		{
			name: "without the operator's configuration the thresholds are read from the resource's",
			conf: flinkconf.Config{options.SavepointHistoryMaxCount.Key: "50", options.SavepointHistoryMaxCountThreshold.Key: "20"},
			want: snapshotHistoryLimits{savepointMaxCount: 20, savepointMaxAge: 24 * time.Hour, checkpointMaxCount: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := tt.conf
			if conf == nil {
				conf = flinkconf.Config{}
			}
			assert.Equal(t, tt.want, snapshotHistoryLimitsFrom(conf, tt.operatorConf), fmt.Sprint(tt.conf, tt.operatorConf))
		})
	}
}
