package autoscaler

import (
	"fmt"
	"maps"
	"math"
	"time"
)

// Names of evaluated metrics (upstream's ScalingMetric), used in VertexSummary.Metrics and in
// the stored state.
const (
	MetricLoad                   = "LOAD"
	MetricTrueProcessingRate     = "TRUE_PROCESSING_RATE"
	MetricTargetDataRate         = "TARGET_DATA_RATE"
	MetricCatchUpDataRate        = "CATCH_UP_DATA_RATE"
	MetricLag                    = "LAG"
	MetricParallelism            = "PARALLELISM"
	MetricRecommendedParallelism = "RECOMMENDED_PARALLELISM"
	MetricMaxParallelism         = "MAX_PARALLELISM"
	MetricNumSourcePartitions    = "NUM_SOURCE_PARTITIONS"
	MetricScaleUpRateThreshold   = "SCALE_UP_RATE_THRESHOLD"
	MetricScaleDownRateThreshold = "SCALE_DOWN_RATE_THRESHOLD"
	MetricExpectedProcessingRate = "EXPECTED_PROCESSING_RATE"
	MetricGCPressure             = "GC_PRESSURE"
	MetricHeapMaxUsageRatio      = "HEAP_MAX_USAGE_RATIO"
)

// Event reasons of warnings, as upstream.
const (
	ReasonIneffectiveScaling = "IneffectiveScaling"
	ReasonMemoryPressure     = "MemoryPressure"
	ReasonScalingLimited     = "ScalingLimited"
	// ReasonNotEvaluable is this package's own: the metrics do not allow an evaluation (upstream
	// reports the exception instead).
	ReasonNotEvaluable = "AutoscalerError"
)

func current(v float64) EvaluatedMetric {
	return EvaluatedMetric{Current: roundMetric(v), Average: math.NaN()}
}
func average(v float64) EvaluatedMetric {
	return EvaluatedMetric{Current: math.NaN(), Average: roundMetric(v)}
}

// roundMetric keeps three decimals as upstream stores evaluated metrics, but never rounds a
// small rate down to zero.
func roundMetric(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r := math.Round(v*1000) / 1000
	if r == 0 {
		return v
	}
	return r
}

// value is the metric's meaningful value: the average where it has one, else the current one.
func (m EvaluatedMetric) value() float64 {
	if !math.IsNaN(m.Average) {
		return m.Average
	}
	return m.Current
}

// vertexMetrics are the evaluated metrics of one vertex.
type vertexMetrics map[string]EvaluatedMetric

func (m vertexMetrics) get(name string) EvaluatedMetric {
	if v, ok := m[name]; ok {
		return v
	}
	return EvaluatedMetric{Current: math.NaN(), Average: math.NaN()}
}

// seconds truncates to whole seconds, as upstream's Duration.toSeconds() does in its formulas.
func seconds(d time.Duration) float64 { return float64(d / time.Second) }

// processingBacklog reports whether any source has more lag than backlog-processing.lag-threshold
// worth of input; while it does, the utilization band is widened to [0, 1] so that catching up
// does not trigger needless rescales.
func processingBacklog(w window, t Topology, c Config) bool {
	for _, v := range t.Sources() {
		rate := w.inputRate(v.ID)
		if math.IsNaN(rate) {
			continue
		}
		l, _ := lag(w.last().Vertices[v.ID])
		if l/rate > seconds(c.BacklogLagThreshold) {
			return true
		}
	}
	return false
}

// evaluateMetrics computes every vertex's metrics over the window, in topological order so that
// target rates propagate from the sources downstream.
func evaluateMetrics(w window, t Topology, order []Vertex, c Config, restart time.Duration) (map[VertexID]vertexMetrics, error) {
	out := map[VertexID]vertexMetrics{}
	backlog := processingBacklog(w, t, c)
	outs := t.outputs()
	latest := w.last()
	for _, v := range order {
		m := vertexMetrics{}
		if v.isSource() {
			ingestion := math.Max(0, w.inputRate(v.ID)+w.rate(v.ID, lag))
			if math.IsNaN(ingestion) {
				return nil, fmt.Errorf("cannot evaluate metrics without the input rate of source vertex %s", v.ID)
			}
			m[MetricTargetDataRate] = average(ingestion)
			l, _ := lag(latest.Vertices[v.ID])
			catchUp := 0.0
			if s := seconds(c.CatchUpDuration); s > 0 {
				catchUp = l / s
			}
			m[MetricCatchUpDataRate] = current(catchUp)
			m[MetricLag] = current(l)
		} else {
			target, catchUp := 0.0, 0.0
			for _, in := range v.Inputs {
				ratio := edgeOutputRatio(w, t, outs, in, v.ID)
				target += out[in].get(MetricTargetDataRate).Average * ratio
				catchUp += out[in].get(MetricCatchUpDataRate).Current * ratio
			}
			m[MetricTargetDataRate] = average(target)
			m[MetricCatchUpDataRate] = current(catchUp)
		}

		busyAvg := busyTimeAvg(w, v, c)
		tpr := trueProcessingRate(busyAvg, tprInputRate(w, v, c))
		if v.isSource() {
			tpr = selectTPR(tpr, w.observedTPR(v.ID, c.ObservedTPRMinObservations), c)
		}
		m[MetricTrueProcessingRate] = average(tpr)
		m[MetricLoad] = average(busyAvg / 1000)
		m[MetricParallelism] = current(float64(v.Parallelism))
		m[MetricMaxParallelism] = current(float64(v.MaxParallelism))
		m[MetricNumSourcePartitions] = current(float64(v.SourcePartitions))

		upper, lower := c.UtilMax, c.UtilMin
		if backlog {
			upper, lower = 1, 0
		}
		m[MetricScaleUpRateThreshold] = current(targetCapacity(m, c, upper, false, restart))
		m[MetricScaleDownRateThreshold] = current(targetCapacity(m, c, lower, true, restart))
		out[v.ID] = m
	}
	return out, nil
}

// busyTimeAvg is the vertex's busy milliseconds per second over the window: from the
// accumulated busy time per subtask with the AVG aggregator (when collected), else the mean of
// the sampled busy time.
func busyTimeAvg(w window, v Vertex, c Config) float64 {
	if c.BusyTimeAggregator == AggregatorAvg && v.Parallelism > 0 {
		if r := w.rate(v.ID, accBusy); !math.IsNaN(r) {
			return r / float64(v.Parallelism)
		}
	}
	return w.avg(v.ID, busy)
}

// tprInputRate is the records-in rate to divide by the busy time; it must be estimated the same
// way as the busy time: the per-second gauge with a sampled busy time, the accumulated counter
// with the accumulated one. Sources have no per-second input gauge upstream.
func tprInputRate(w window, v Vertex, c Config) float64 {
	if c.BusyTimeAggregator == AggregatorAvg || v.isSource() {
		return w.inputRate(v.ID)
	}
	if a := w.avg(v.ID, recordsInRate); !math.IsNaN(a) && !math.IsInf(a, 0) {
		return a
	}
	return w.inputRate(v.ID)
}

// selectTPR picks the observed true processing rate of a source over the busy-time one when the
// busy time overstates it (a source reading from outside spends time that busy time misses).
func selectTPR(busyTPR, observed float64, c Config) float64 {
	switch {
	case math.IsNaN(observed):
		return busyTPR
	case math.IsInf(busyTPR, 0) || math.IsNaN(busyTPR):
		return observed
	case busyTPR > observed*(1+c.ObservedTPRSwitchThreshold):
		return observed
	}
	return busyTPR
}

// fillObservedTPR derives, oldest first, each source sample's observed true processing rate
// where it is not known yet: measured while the source catches up a lag (records in per second
// of time not back-pressured), otherwise the average of the earlier samples' (as upstream, so a
// measurement outlives the catch-up). Samples it fills get their own vertex map, so the
// caller's state is not modified.
func fillObservedTPR(samples []Sample, t Topology, c Config) {
	for _, v := range t.Sources() {
		for i := range samples {
			vs, ok := samples[i].Vertices[v.ID]
			if !ok || vs.hasObservedTPR || math.IsNaN(vs.RecordsInPerSecond) {
				continue
			}
			val, measured := measureTPR(vs, c)
			if !measured {
				val = window(samples[:i]).observedTPR(v.ID, 1)
			}
			vs.observedTPR, vs.hasObservedTPR = val, true
			samples[i].Vertices = maps.Clone(samples[i].Vertices)
			samples[i].Vertices[v.ID] = vs
		}
	}
}

// measureTPR is a source's observed true processing rate in one sample, if it is catching up.
func measureTPR(vs VertexSample, c Config) (float64, bool) {
	rate := vs.RecordsInPerSecond
	if rate == 0 {
		return math.Inf(1), true // nothing comes in: allow scaling down
	}
	l, _ := lag(vs)
	if l < seconds(c.ObservedTPRLagThreshold)*rate {
		return 0, false
	}
	bp := vs.BackPressuredTimeMsPerSecond
	if math.IsNaN(bp) || bp >= 1000 {
		return 0, false
	}
	return rate / (1 - bp/1000), true
}

// trueProcessingRate is what the vertex would process when busy all the time.
func trueProcessingRate(busyMsPerSecond, rate float64) float64 {
	if rate == 0 {
		return math.Inf(1)
	}
	return rate / (busyMsPerSecond / 1000)
}

// edgeOutputRatio is how many records the edge from→to carries per record "from" receives.
func edgeOutputRatio(w window, t Topology, outs map[VertexID][]VertexID, from, to VertexID) float64 {
	in := w.inputRate(from)
	if !(in > 0) {
		return 0
	}
	if r := edgeDataRate(w, t, outs, from, to); r > 0 {
		return r / in
	}
	return 0
}

// edgeDataRate estimates the records per second on the edge from→to; Flink reports rates per
// vertex only, so with several inputs the other inputs' outputs are subtracted where they feed
// only this vertex, else the upstream vertex's whole output is taken.
func edgeDataRate(w window, t Topology, outs map[VertexID][]VertexID, from, to VertexID) float64 {
	toV, _ := t.Vertex(to)
	if len(toV.Inputs) == 1 {
		return w.inputRate(to)
	}
	others := 0.0
	for _, in := range toV.Inputs {
		if in == from {
			continue
		}
		if len(outs[in]) != 1 {
			return w.outputRate(from)
		}
		others += w.outputRate(in)
	}
	if math.IsNaN(others) {
		return w.outputRate(from)
	}
	return w.inputRate(to) - others
}

// targetCapacity is the processing rate the vertex needs at the given utilization:
// lag catch-up rate + (with restart) the input missed while restarting spread over the catch-up
// duration + the input rate divided by the utilization.
func targetCapacity(m vertexMetrics, c Config, utilization float64, withRestart bool, restart time.Duration) float64 {
	catchUpRate := m.get(MetricCatchUpDataRate).Current
	if math.IsNaN(catchUpRate) {
		return math.NaN()
	}
	catchUpSec := seconds(c.CatchUpDuration)
	utilization = math.Min(1, math.Max(0, utilization))
	target := m.get(MetricTargetDataRate).Average
	if math.IsNaN(target) {
		return math.NaN()
	}
	if utilization == 0 {
		return math.Inf(1)
	}
	restartRate := 0.0
	if withRestart && catchUpSec != 0 {
		restartRate = target * seconds(restart) / catchUpSec
	}
	return math.Floor(catchUpRate + restartRate + target/utilization + 0.5)
}

// memoryPressure returns a warning when GC time or heap usage is above its threshold; scaling
// would not help a job that lacks memory.
func memoryPressure(w window, c Config) *Warning {
	gc := w.last().GCTimeMsPerSecond / 1000
	if gc > c.GCPressureThreshold {
		return &Warning{Type: EventNormal, Reason: ReasonMemoryPressure, Message: fmt.Sprintf(
			"GC Pressure %s is above the allowed limit for scaling operations. Please adjust the available memory manually.", javaDouble(gc))}
	}
	heap := w.globalAvg(func(s Sample) float64 { return s.HeapUsedRatio })
	if heap > c.HeapUsageThreshold {
		return &Warning{Type: EventNormal, Reason: ReasonMemoryPressure, Message: fmt.Sprintf(
			"Heap Usage %s is above the allowed limit for scaling operations. Please adjust the available memory manually.", javaDouble(heap))}
	}
	return nil
}
