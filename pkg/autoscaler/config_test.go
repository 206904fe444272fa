package autoscaler

import (
	"strings"
	"testing"
	"time"
)

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	if c.Enabled || !c.ScalingEnabled || c.MetricsWindow != 15*time.Minute || c.Stabilization != 5*time.Minute ||
		c.TargetUtil != 0.7 || c.UtilMin != d.UtilMin || c.UtilMax != d.UtilMax || c.CatchUpDuration != 30*time.Minute ||
		c.RestartTime != 5*time.Minute || c.ScaleUpMaxFactor != 100000 || c.ScaleDownMaxFactor != 0.6 ||
		c.ScaleDownInterval != time.Hour || c.VertexMinParallel != 1 || c.VertexMaxParallel != 200 ||
		c.HistoryMaxCount != 3 || c.HistoryMaxAge != 24*time.Hour || c.EffectivenessDetection || c.EffectivenessThreshold != 0.1 ||
		c.BacklogLagThreshold != 5*time.Minute || c.AlignmentMode != AlignBalanced || c.BusyTimeAggregator != AggregatorMax {
		t.Errorf("defaults differ from upstream: %+v", c)
	}
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		conf  map[string]string
		check func(Config) bool
	}{
		{"current prefix", map[string]string{"job.autoscaler.enabled": "true", "job.autoscaler.metrics.window": "3 min"},
			func(c Config) bool { return c.Enabled && c.MetricsWindow == 3*time.Minute }},
		{"legacy kubernetes.operator. prefix", map[string]string{"kubernetes.operator.job.autoscaler.enabled": "TRUE", "kubernetes.operator.job.autoscaler.stabilization.interval": "30s"},
			func(c Config) bool { return c.Enabled && c.Stabilization == 30*time.Second }},
		{"current prefix wins over legacy", map[string]string{"job.autoscaler.vertex.max-parallelism": "8", "kubernetes.operator.job.autoscaler.vertex.max-parallelism": "4"},
			func(c Config) bool { return c.VertexMaxParallel == 8 }},
		{"deprecated target.utilization", map[string]string{"job.autoscaler.target.utilization": "0.5"},
			func(c Config) bool { return c.TargetUtil == 0.5 && c.UtilMin == 0.5-0.3 && c.UtilMax == 0.5+0.3 }},
		{"utilization.target wins over target.utilization", map[string]string{"job.autoscaler.target.utilization": "0.5", "job.autoscaler.utilization.target": "0.6"},
			func(c Config) bool { return c.TargetUtil == 0.6 }},
		{"band from target.utilization.boundary", map[string]string{"job.autoscaler.utilization.target": "0.6", "job.autoscaler.target.utilization.boundary": "0.1"},
			func(c Config) bool {
				return c.UtilMin > 0.49 && c.UtilMin < 0.51 && c.UtilMax > 0.69 && c.UtilMax < 0.71
			}},
		{"explicit band", map[string]string{"job.autoscaler.utilization.min": "0.2", "job.autoscaler.utilization.max": "0.9"},
			func(c Config) bool { return c.UtilMin == 0.2 && c.UtilMax == 0.9 }},
		{"deprecated scale-up.grace-period", map[string]string{"job.autoscaler.scale-up.grace-period": "10 min"},
			func(c Config) bool { return c.ScaleDownInterval == 10*time.Minute }},
		{"exclude ids", map[string]string{"job.autoscaler.vertex.exclude.ids": "a;b ; "},
			func(c Config) bool { return len(c.ExcludedVertices) == 2 && c.excluded("A") && !c.excluded("c") }},
		{"legacy key-group mode used when no alignment mode", map[string]string{"job.autoscaler.scaling.key-group.partitions.adjust.mode": "MAXIMIZE_UTILISATION"},
			func(c Config) bool { return c.AlignmentMode == alignLegacyMaximizeUtilis }},
		{"alignment mode wins over the legacy key-group mode", map[string]string{"job.autoscaler.scaling.key-group.partitions.adjust.mode": "MAXIMIZE_UTILISATION", "job.autoscaler.scaling.parallelism-alignment.mode": "EVENLY_SPREAD"},
			func(c Config) bool { return c.AlignmentMode == AlignEvenlySpread }},
		{"an alignment mode that is not built in falls back to BALANCED", map[string]string{"job.autoscaler.scaling.parallelism-alignment.mode": "com.example.MyMode"},
			func(c Config) bool { return c.AlignmentMode == AlignBalanced }},
		{"bad values of a disabled autoscaler do not matter", map[string]string{"job.autoscaler.utilization.target": "2", "job.autoscaler.vertex.min-parallelism": "x"},
			func(c Config) bool { return !c.Enabled }},
		{"everything else", map[string]string{
			"job.autoscaler.scaling.enabled": "false", "job.autoscaler.catch-up.duration": "0", "job.autoscaler.restart.time": "1 min",
			"job.autoscaler.restart.time-tracking.enabled": "true", "job.autoscaler.restart.time-tracking.limit": "2 min",
			"job.autoscaler.scale-up.max-factor": "2.0", "job.autoscaler.scale-down.max-factor": "0.5", "job.autoscaler.vertex.min-parallelism": "2",
			"job.autoscaler.history.max.count": "5", "job.autoscaler.history.max.age": "2 h", "job.autoscaler.scaling.effectiveness.detection.enabled": "true",
			"job.autoscaler.scaling.effectiveness.threshold": "0.2", "job.autoscaler.backlog-processing.lag-threshold": "1 min",
			"job.autoscaler.memory.heap-usage.threshold": "0.9", "job.autoscaler.memory.gc-pressure.threshold": "0.3", "job.autoscaler.metrics.busy-time.aggregator": "avg"},
			func(c Config) bool {
				return !c.ScalingEnabled && c.CatchUpDuration == 0 && c.RestartTime == time.Minute && c.RestartTimeTracking && c.RestartTimeLimit == 2*time.Minute &&
					c.ScaleUpMaxFactor == 2 && c.ScaleDownMaxFactor == 0.5 && c.VertexMinParallel == 2 && c.HistoryMaxCount == 5 && c.HistoryMaxAge == 2*time.Hour &&
					c.EffectivenessDetection && c.EffectivenessThreshold == 0.2 && c.BacklogLagThreshold == time.Minute && c.HeapUsageThreshold == 0.9 &&
					c.GCPressureThreshold == 0.3 && c.BusyTimeAggregator == AggregatorAvg
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig(tc.conf)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("%+v", c)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string
	}{
		{"job.autoscaler.enabled", "yes", "want true or false"},
		{"kubernetes.operator.job.autoscaler.enabled", "1", "want true or false"},
		{"job.autoscaler.metrics.window", "5 parsecs", "unknown unit"},
		{"job.autoscaler.utilization.target", "1.5", "allowed 0 to 1"},
		{"job.autoscaler.utilization.target", "NaN", "not a number"},
		{"job.autoscaler.scale-down.max-factor", "-0.1", "out of range"},
		{"job.autoscaler.vertex.min-parallelism", "0", "at least 1"},
		{"job.autoscaler.vertex.max-parallelism", "many", "not an integer"},
		{"job.autoscaler.history.max.count", "-1", "at least 0"},
		{"job.autoscaler.utilization.max", "0.6", "allowed 0.7 to 1"},
		{"job.autoscaler.utilization.min", "0.8", "allowed 0 to 0.7"},
		{"job.autoscaler.memory.heap-usage.threshold", "1.5", "allowed 0 to 1"},
		{"job.autoscaler.metrics.busy-time.aggregator", "MEDIAN", "allowed MAX, AVG, MIN"},
	} {
		conf := map[string]string{tc.key: tc.value}
		if !strings.HasSuffix(tc.key, ".enabled") {
			conf["job.autoscaler.enabled"] = "true"
		}
		_, err := ParseConfig(conf)
		if err == nil || !strings.Contains(err.Error(), tc.key+":") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: error %v, want it to name the key and say %q", tc.key, tc.value, err, tc.want)
		}
	}
	_, err := ParseConfig(map[string]string{"job.autoscaler.enabled": "true", "job.autoscaler.vertex.min-parallelism": "10", "job.autoscaler.vertex.max-parallelism": "5"})
	if err == nil || !strings.Contains(err.Error(), "vertex.min-parallelism (10) must not exceed") {
		t.Errorf("inverted parallelism bounds: %v", err)
	}
}
