package jobs

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

func TestFlinkCleanupWait(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	at := func(ago time.Duration) string { return fmt.Sprint(now.Add(-ago).UnixMilli()) }
	tests := []struct {
		name             string
		state            flinkv1beta1.JobStatusState
		updated          string
		kubernetesHA     bool
		jobConfigMapLeft bool
		want             time.Duration
	}{
		{"stopped with a savepoint, Flink still cleaning up", flinkv1beta1.JobStatusFinished, at(300 * time.Millisecond), true, true, 4700 * time.Millisecond},
		{"cancelled, Flink still cleaning up", flinkv1beta1.JobStatusCanceled, at(time.Second), true, true, 4 * time.Second},
		{"failed for good, Flink still cleaning up", flinkv1beta1.JobStatusFailed, at(0), true, true, FlinkCleanupWaitAtMost},
		{"Flink has cleaned up: its ConfigMap is gone", flinkv1beta1.JobStatusFinished, at(300 * time.Millisecond), true, false, 0},
		{"the wait is over: past Flink's own shutdown safeguard", flinkv1beta1.JobStatusFinished, at(FlinkCleanupWaitAtMost), true, true, 0},
		{"no Kubernetes HA: no signal to wait for", flinkv1beta1.JobStatusFinished, at(0), false, true, 0},
		{"the job runs (a last-state upgrade): nothing to clean up", flinkv1beta1.JobStatusRunning, at(0), true, true, 0},
		{"the job restarts: not terminal for good", flinkv1beta1.JobStatusRestarting, at(0), true, true, 0},
		{"no recorded time: not waited for", flinkv1beta1.JobStatusFinished, "", true, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js := &flinkv1beta1.JobStatus{State: tt.state, UpdateTime: tt.updated}
			assert.Equal(t, tt.want, FlinkCleanupWait(js, tt.kubernetesHA, tt.jobConfigMapLeft, now))
		})
	}
}
