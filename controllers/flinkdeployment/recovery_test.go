package flinkdeployment

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// TestEvaluateHealth is the health check's rule, observation by observation.
func TestEvaluateHealth(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_000_000)
	o := healthOptions{RestartWindow: 2 * time.Minute, RestartLimit: 64, CheckpointWindow: 10 * time.Minute}
	steps := []struct {
		name                string
		after               time.Duration
		restarts, completed int64
		healthy             bool
	}{
		{"baseline", 0, 3, 10, true},
		{"a few restarts", time.Minute, 30, 11, true},
		{"more than 64 within the window", 90 * time.Second, 70, 12, false},
		{"window over: new baseline", 4 * time.Minute, 80, 13, true},
		{"no checkpoint for 11 minutes", 15 * time.Minute, 80, 13, false},
		{"checkpoints again", 16 * time.Minute, 80, 14, true},
		{"new job: counters restart", 17 * time.Minute, 0, 0, true},
	}
	var rec *healthRecord
	for _, s := range steps {
		next := evaluateHealth(rec, t0.Add(s.after), s.restarts, s.completed, o)
		assert.Equal(t, s.healthy, next.Healthy, "%s: %s", s.name, next.Reason)
		rec = &next
	}
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"numRestartsEvaluationTimeStamp"`)
}

func TestHealthOptionsDeriveTheCheckpointWindow(t *testing.T) {
	t.Parallel()
	conf := flinkconf.Config{"execution.checkpointing.interval": "30 s"}
	assert.Equal(t, 20*time.Minute, healthOptionsOf(conf).CheckpointWindow, "max(30 s, 10 min timeout) × 2")
	conf = flinkconf.Config{"execution.checkpointing.interval": "15 min", "execution.checkpointing.tolerable-failed-checkpoints": "1"}
	assert.Equal(t, 45*time.Minute, healthOptionsOf(conf).CheckpointWindow)
	assert.Zero(t, healthOptionsOf(flinkconf.Config{}).CheckpointWindow, "no checkpointing, no checkpoint check")
	assert.Zero(t, healthOptionsOf(flinkconf.Config{"execution.checkpointing.interval": "30 s", options.HealthCheckpointProgress.Key: "false"}).CheckpointWindow)
}
