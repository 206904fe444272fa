package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

func TestPeriodicDue(t *testing.T) {
	t.Parallel()
	hourAgo := time.Now().Add(-time.Hour).UnixMilli()
	minuteAgo := time.Now().Add(-time.Minute).UnixMilli()
	tests := []struct {
		name  string
		value string
		last  int64
		want  bool
	}{
		{"unset", "", hourAgo, false},
		{"duration passed", "30 min", hourAgo, true},
		{"duration not yet", "30 min", minuteAgo, false},
		{"zero disables", "0", hourAgo, false},
		{"cron due", "0 * * * * ?", hourAgo, true},             // every minute
		{"cron not yet", "0 0 0 1 1 ? 2199", minuteAgo, false}, // far future
		{"invalid", "sometimes", hourAgo, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := flinkconf.Config{options.PeriodicSavepoint.Key: tt.value}
			assert.Equal(t, tt.want, periodicDue(conf, options.PeriodicSavepoint.Key, tt.last, "", 0))
		})
	}
}

// TestPeriodicSnapshotMinimum: periodic snapshots are never taken more
// often than the operator's reconcile interval, whatever interval or cron expression a resource
// asks for; a shorter duration is clamped, with a Warning event saying so.
func TestPeriodicSnapshotMinimum(t *testing.T) {
	t.Parallel()
	const minInterval = time.Minute
	secondsAgo := time.Now().Add(-5 * time.Second).UnixMilli()
	minutesAgo := time.Now().Add(-2 * time.Minute).UnixMilli()
	for _, tt := range []struct {
		name  string
		value string
		last  int64
		want  bool
	}{
		{"a second, last one seconds ago", "1 s", secondsAgo, false},
		{"a second, last one minutes ago", "1 s", minutesAgo, true},
		{"cron every second, last one seconds ago", "* * * * * ?", secondsAgo, false},
		{"cron every second, last one minutes ago", "* * * * * ?", minutesAgo, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conf := flinkconf.Config{options.PeriodicSavepoint.Key: tt.value}
			assert.Equal(t, tt.want, periodicDue(conf, options.PeriodicSavepoint.Key, tt.last, "", minInterval))
		})
	}
	assert.Equal(t, reconciler.DefaultIntervals.Reconcile, MinPeriodicInterval(reconciler.DefaultIntervals))

	rec := record.NewFakeRecorder(10)
	obj := &flinkv1beta1.FlinkDeployment{}
	warnPeriodicBelowMinimum(rec, obj, flinkconf.Config{options.PeriodicSavepoint.Key: "1 s"}, options.PeriodicSavepoint.Key, minInterval)
	warnPeriodicBelowMinimum(rec, obj, flinkconf.Config{options.PeriodicSavepoint.Key: "1 h"}, options.PeriodicSavepoint.Key, minInterval)
	require.Len(t, rec.Events, 1)
	assert.Equal(t, "Warning PeriodicIntervalClamped kubernetes.operator.periodic.savepoint.interval 1s is below the operator's minimum, "+
		"its reconcile interval 1m0s: periodic snapshots are taken every 1m0s", <-rec.Events)
}
