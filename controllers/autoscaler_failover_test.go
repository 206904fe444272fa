package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestAutoscalerFailoverRestartsStabilization: a failover keeps the job id and its start-time;
// Flink's timestamps.RUNNING moves. The autoscaler starts over there, as upstream's
// ScalingMetricCollector does: the samples before it are dropped and none is taken within the
// stabilization interval after it (recovery and catch-up are not the job's load).
func TestAutoscalerFailoverRestartsStabilization(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns := testEnv(t).NewNamespace(t, "autoscale-failover")
	fl := fakeflink.New(t)
	k := &cluster{t: t, c: c, flink: fl}
	source := &scriptedMetrics{flink: fl, busy: 300, rate: 1000}
	clock := &stepClock{now: time.Now(), step: 20 * time.Second}
	_, _ = startManager(t, managerOptions{namespaces: []string{ns}, setup: autoscalingController(fl, source, clock.Now)})
	const name = "job"
	jobID := autoscaled(t, c, k, ns, name, nil) // stabilization 1m, window 2m

	wait.For(t, 30*time.Second, "samples collected", func() bool {
		s, _ := autoscalerState(t, c, ns, name)
		return len(s.Samples) >= 3
	}, func() string {
		s, _ := autoscalerState(t, c, ns, name)
		return fmt.Sprintf("%d samples", len(s.Samples))
	})

	failover := clock.Now().Truncate(time.Millisecond)
	fl.SetRunningSince(jobID, failover.UnixMilli())
	stable := failover.Add(time.Minute)
	wait.For(t, 60*time.Second, "samples again, past the stabilization after the failover", func() bool {
		s, _ := autoscalerState(t, c, ns, name)
		n := len(s.Samples)
		return n > 0 && s.Samples[n-1].Time.After(stable.Add(30*time.Second))
	}, func() string {
		s, _ := autoscalerState(t, c, ns, name)
		return fmt.Sprintf("samples %v", sampleTimes(s.Samples))
	})
	s, _ := autoscalerState(t, c, ns, name)
	for _, smp := range s.Samples {
		require.False(t, smp.Time.Before(stable), "a sample at %v, before the failover at %v plus stabilization: samples %v",
			smp.Time, failover, sampleTimes(s.Samples))
	}
}

func sampleTimes(samples []autoscaler.Sample) []string {
	out := make([]string, len(samples))
	for i, s := range samples {
		out[i] = s.Time.Format(time.TimeOnly)
	}
	return out
}
