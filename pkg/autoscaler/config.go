package autoscaler

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flink-operator/flink-operator/pkg/options"
)

// Alignment modes of scaling.parallelism-alignment.mode, and of the legacy
// scaling.key-group.partitions.adjust.mode.
const (
	AlignBalanced             = "BALANCED"
	AlignEvenlySpread         = "EVENLY_SPREAD"
	AlignOff                  = "OFF"
	alignLegacyEvenlySpread   = "LEGACY_EVENLY_SPREAD"
	alignLegacyMaximizeUtilis = "LEGACY_MAXIMIZE_UTILISATION"
)

// Busy time aggregators of metrics.busy-time.aggregator.
const (
	AggregatorMax = "MAX"
	AggregatorAvg = "AVG"
	AggregatorMin = "MIN"
)

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	// The band is computed at run time as upstream does (0.7-0.3 is 0.39999999999999997 there).
	target, boundary := 0.7, 0.3
	return Config{
		ScalingEnabled:             true,
		MetricsWindow:              15 * time.Minute,
		Stabilization:              5 * time.Minute,
		TargetUtil:                 target,
		UtilMin:                    target - boundary,
		UtilMax:                    target + boundary,
		CatchUpDuration:            30 * time.Minute,
		RestartTime:                5 * time.Minute,
		RestartTimeLimit:           15 * time.Minute,
		ScaleUpMaxFactor:           100000,
		ScaleDownMaxFactor:         0.6,
		ScaleDownInterval:          time.Hour,
		VertexMinParallel:          1,
		VertexMaxParallel:          200,
		HistoryMaxCount:            3,
		HistoryMaxAge:              24 * time.Hour,
		EffectivenessThreshold:     0.1,
		BacklogLagThreshold:        5 * time.Minute,
		ObservedTPRLagThreshold:    30 * time.Second,
		ObservedTPRSwitchThreshold: 0.15,
		ObservedTPRMinObservations: 2,
		HeapUsageThreshold:         1,
		GCPressureThreshold:        1,
		BusyTimeAggregator:         AggregatorMax,
		AlignmentMode:              AlignBalanced,
	}
}

// confReader looks options up the way Flink resolves an option with deprecated and fallback
// keys: the key itself, then its deprecated names, then the legacy-prefixed names.
type confReader struct {
	conf map[string]string
	errs []string
}

// lookup returns the value and the full key it was found under.
func (r *confReader) lookup(names ...string) (string, string, bool) {
	for _, prefix := range []string{options.AutoscalerPrefix, options.LegacyAutoscalerPrefix} {
		for _, n := range names {
			if v, ok := r.conf[prefix+n]; ok {
				return strings.TrimSpace(v), prefix + n, true
			}
		}
	}
	return "", "", false
}

func (r *confReader) fail(key, format string, args ...any) {
	r.errs = append(r.errs, key+": "+fmt.Sprintf(format, args...))
}

func (r *confReader) boolean(dst *bool, names ...string) {
	_, key, ok := r.lookup(names...)
	if !ok {
		return
	}
	// The value as written: Flink's boolean has nothing around true or false.
	b, err := options.ParseBool(r.conf[key])
	if err != nil {
		r.fail(key, "%v", err)
		return
	}
	*dst = b
}

func (r *confReader) duration(dst *time.Duration, names ...string) {
	v, key, ok := r.lookup(names...)
	if !ok {
		return
	}
	d, err := options.ParseDuration(v)
	if err != nil {
		r.fail(key, "%v", err)
		return
	}
	*dst = d
}

// float reads a number within [lo, hi].
func (r *confReader) float(dst *float64, lo, hi float64, names ...string) bool {
	v, key, ok := r.lookup(names...)
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		r.fail(key, "%q is not a number", v)
		return false
	}
	if f < lo || f > hi {
		r.fail(key, "%v is out of range: allowed %v to %v", f, lo, hi)
		return false
	}
	*dst = f
	return true
}

// integer reads an integer of at least lo.
func (r *confReader) integer(dst *int, lo int, names ...string) {
	v, key, ok := r.lookup(names...)
	if !ok {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(key, "%q is not an integer", v)
		return
	}
	if n < lo {
		r.fail(key, "%d is too small: at least %d", n, lo)
		return
	}
	*dst = n
}

// choice reads one of the allowed upper-case values (Flink matches enum names case-insensitively).
func (r *confReader) choice(allowed []string, names ...string) (string, bool) {
	v, key, ok := r.lookup(names...)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a, true
		}
	}
	r.fail(key, "%q is not supported: allowed %s", v, strings.Join(allowed, ", "))
	return "", false
}

// ParseConfig reads the job.autoscaler.* options (also under the legacy
// kubernetes.operator.job.autoscaler. prefix) from a Flink configuration. Keys it does not know
// are left to the configuration's own validation. When the autoscaler is enabled, bad values of
// known keys fail with an error naming every offending key and what it allows; when it is
// disabled they do not matter (as upstream, which then does not read them).
func ParseConfig(flinkConf map[string]string) (Config, error) {
	c := DefaultConfig()
	r := &confReader{conf: flinkConf}

	r.boolean(&c.Enabled, "enabled")
	if len(r.errs) > 0 {
		return c, fmt.Errorf("invalid autoscaler configuration: %s", r.errs[0])
	}
	r.boolean(&c.ScalingEnabled, "scaling.enabled")
	r.duration(&c.MetricsWindow, "metrics.window")
	r.duration(&c.Stabilization, "stabilization.interval")
	r.float(&c.TargetUtil, 0, 1, "utilization.target", "target.utilization")
	boundary := 0.3
	r.float(&boundary, 0, math.MaxFloat64, "target.utilization.boundary")
	c.UtilMin, c.UtilMax = c.TargetUtil-boundary, c.TargetUtil+boundary
	// An explicit band must contain the target, as upstream's validator requires.
	r.float(&c.UtilMin, 0, c.TargetUtil, "utilization.min")
	r.float(&c.UtilMax, c.TargetUtil, 1, "utilization.max")
	r.duration(&c.CatchUpDuration, "catch-up.duration")
	r.duration(&c.RestartTime, "restart.time")
	r.boolean(&c.RestartTimeTracking, "restart.time-tracking.enabled")
	r.duration(&c.RestartTimeLimit, "restart.time-tracking.limit")
	r.float(&c.ScaleUpMaxFactor, 0, math.MaxFloat64, "scale-up.max-factor")
	r.float(&c.ScaleDownMaxFactor, 0, math.MaxFloat64, "scale-down.max-factor")
	r.duration(&c.ScaleDownInterval, "scale-down.interval", "scale-up.grace-period")
	r.integer(&c.VertexMinParallel, 1, "vertex.min-parallelism")
	r.integer(&c.VertexMaxParallel, 1, "vertex.max-parallelism")
	r.integer(&c.HistoryMaxCount, 0, "history.max.count")
	r.duration(&c.HistoryMaxAge, "history.max.age")
	r.boolean(&c.EffectivenessDetection, "scaling.effectiveness.detection.enabled")
	r.float(&c.EffectivenessThreshold, 0, 1, "scaling.effectiveness.threshold")
	r.duration(&c.BacklogLagThreshold, "backlog-processing.lag-threshold")
	r.duration(&c.ObservedTPRLagThreshold, "observed-true-processing-rate.lag-threshold")
	r.float(&c.ObservedTPRSwitchThreshold, 0, math.MaxFloat64, "observed-true-processing-rate.switch-threshold")
	r.integer(&c.ObservedTPRMinObservations, 0, "observed-true-processing-rate.min-observations")
	r.float(&c.HeapUsageThreshold, 0, 1, "memory.heap-usage.threshold")
	r.float(&c.GCPressureThreshold, 0, 1, "memory.gc-pressure.threshold")
	if v, _, ok := r.lookup("vertex.exclude.ids"); ok {
		for _, id := range strings.Split(v, ";") {
			if id = strings.TrimSpace(id); id != "" {
				c.ExcludedVertices = append(c.ExcludedVertices, VertexID(id))
			}
		}
	}
	if v, key, ok := r.lookup("excluded.periods"); ok {
		for _, expr := range strings.Split(v, ";") {
			if expr = strings.TrimSpace(expr); expr == "" {
				continue
			}
			if _, err := parseExcludedPeriod(expr); err != nil {
				r.fail(key, "%v", err)
				continue
			}
			c.ExcludedPeriods = append(c.ExcludedPeriods, expr)
		}
	}
	if v, ok := r.choice([]string{AggregatorMax, AggregatorAvg, AggregatorMin}, "metrics.busy-time.aggregator"); ok {
		c.BusyTimeAggregator = v
	}
	// Upstream uses the legacy key-group mode only when the alignment mode is not set, and
	// falls back to BALANCED for a mode that is not built in and whose plugin class it cannot
	// find; plugins do not exist here, so every other name gets BALANCED.
	if v, _, set := r.lookup("scaling.parallelism-alignment.mode"); set {
		c.AlignmentMode = AlignBalanced
		for _, m := range []string{AlignEvenlySpread, AlignOff} {
			if v == m {
				c.AlignmentMode = m
			}
		}
	} else {
		if v, ok := r.choice([]string{"EVENLY_SPREAD", "MAXIMIZE_UTILISATION"}, "scaling.key-group.partitions.adjust.mode"); ok {
			c.AlignmentMode = map[string]string{"EVENLY_SPREAD": alignLegacyEvenlySpread, "MAXIMIZE_UTILISATION": alignLegacyMaximizeUtilis}[v]
		}
	}

	if !c.Enabled {
		// Upstream neither reads nor validates the options of a disabled autoscaler.
		return c, nil
	}
	if c.VertexMinParallel > c.VertexMaxParallel {
		r.errs = append(r.errs, fmt.Sprintf("%svertex.min-parallelism (%d) must not exceed %svertex.max-parallelism (%d)", options.AutoscalerPrefix, c.VertexMinParallel, options.AutoscalerPrefix, c.VertexMaxParallel))
	}
	if len(r.errs) > 0 {
		return c, fmt.Errorf("invalid autoscaler configuration: %s", strings.Join(r.errs, "; "))
	}
	return c, nil
}

// excluded reports whether scaling of the vertex is disabled by vertex.exclude.ids.
func (c Config) excluded(id VertexID) bool {
	for _, e := range c.ExcludedVertices {
		if strings.EqualFold(string(e), string(id)) {
			return true
		}
	}
	return false
}
