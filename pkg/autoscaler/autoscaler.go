package autoscaler

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flink-operator/flink-operator/pkg/options"
)

// Headers of the ScalingReport message, as upstream.
const (
	reportHeaderEnabled  = "Scaling execution enabled, begin scaling vertices:"
	reportHeaderDisabled = "Scaling execution disabled by config "
)

// Evaluate decides the parallelism of every vertex from the collected samples. It is pure: the
// returned state is what to store, the input state is not modified.
//
// The steps follow upstream's autoscaler: nothing is decided until the metric window has been
// full since the stabilization interval after the last (re)start; then each vertex's true
// processing rate (records per busy second) is compared with the target rate propagated from the
// sources (their input rate plus lag growth, plus catching up the lag and the restart within
// catch-up.duration); a job is rescaled only when a vertex's rate leaves the utilization band,
// and then every vertex gets its ideal parallelism, clamped by the max factors and the
// parallelism bounds and aligned to key groups or source partitions. Scale-downs wait for
// scale-down.interval; ineffective scale-ups and memory pressure hold scaling back.
//
// Result.Decision explains an evaluation that applies, recommends or holds back a change, per
// vertex, with the bounds decided where each limit is applied (limitParallelism, align, the
// holds); the caller shows it in the resource's status.
//
// With the autoscaler disabled the result is empty, State included: upstream then clears all
// autoscaler state, and the job runs at the parallelism of its spec again (the caller must stop
// applying stored overrides).
func Evaluate(now time.Time, t Topology, s State, c Config) (res Result) {
	if !c.Enabled {
		// Upstream clears all autoscaler state of a job whose autoscaler is disabled.
		return Result{}
	}
	s = s.clone()
	s.History = trimHistory(now, c, s.History, t)
	s.RestartTimes = trimRestarts(now, c, s.RestartTimes)
	for id := range s.DelayedScaleDown {
		if _, ok := t.Vertex(id); !ok {
			delete(s.DelayedScaleDown, id)
		}
	}
	s.recordRestartDuration(t)
	res.State = s

	order, err := t.Order()
	if err != nil {
		res.Warnings = append(res.Warnings, Warning{Type: EventWarning, Reason: ReasonNotEvaluable, Message: err.Error()})
		return res
	}
	if len(s.Samples) < 2 {
		return res
	}
	fillObservedTPR(s.Samples, t, c)
	res.State.Samples = s.Samples
	w := window(s.Samples)
	restart := s.restartTime(c)
	metrics, err := evaluateMetrics(w, t, order, c, restart)
	if err != nil {
		res.Warnings = append(res.Warnings, Warning{Type: EventWarning, Reason: ReasonNotEvaluable, Message: err.Error()})
		return res
	}
	defer func() { res.Vertices = summaries(order, metrics) }()
	if !windowFull(now, s.Samples, c) {
		return res
	}
	excludedPeriod := c.inExcludedPeriod(now)
	pressure := memoryPressure(w, c)
	d := &decider{now: now, c: c, restart: restart, delayed: s.DelayedScaleDown}
	decided := d.vertices(order, metrics, s.History, pressure != nil)
	if outcome, hold, ok := outcomeOf(decided, c.ScalingEnabled, excludedPeriod); ok {
		res.Decision = explain(now, outcome, hold, order, decided, metrics, c.excluded, restart)
	}
	if pressure != nil {
		res.Warnings = append(res.Warnings, *pressure)
		return res
	}
	res.Warnings = append(res.Warnings, d.warnings...)
	res.State.DelayedScaleDown = d.delayed
	changes := map[VertexID]change{}
	anyOutside := false
	for id, ch := range decided {
		if !ch.none() {
			changes[id] = ch
			anyOutside = anyOutside || ch.outside
		}
	}
	if !anyOutside || len(changes) == 0 {
		// Within the band everywhere: not worth a restart.
		return res
	}
	for id, ch := range changes {
		metrics[id][MetricRecommendedParallelism] = current(float64(ch.next))
	}
	res.Reason = ReasonScalingReport
	if !c.ScalingEnabled {
		res.Message = reportHeaderDisabled + options.AutoscalerPrefix + "scaling.enabled:false, recommended parallelism change:" + report(changes, metrics)
		return res
	}
	if excludedPeriod {
		res.Message = reportHeaderDisabled + options.AutoscalerPrefix + "excluded.periods:[" + strings.Join(c.ExcludedPeriods, ", ") + "], recommended parallelism change:" + report(changes, metrics)
		return res
	}
	res.Message = reportHeaderEnabled + report(changes, metrics)

	overrides := map[VertexID]int{}
	for _, v := range order {
		overrides[v.ID] = v.Parallelism
		if ch, ok := changes[v.ID]; ok {
			overrides[v.ID] = ch.next
			rec := ScalingRecord{Time: now, CurrentParallelism: ch.current, NewParallelism: ch.next, Metrics: maps.Clone(metrics[v.ID])}
			res.State.History[v.ID] = append(res.State.History[v.ID], rec)
		}
	}
	res.State.History = trimHistory(now, c, res.State.History, t)
	res.State.RestartTimes = append(res.State.RestartTimes, RestartRecord{Time: now})
	res.State.Overrides = overrides
	res.State.DelayedScaleDown = map[VertexID]DelayedScaleDown{}
	// The samples describe the old parallelism; stabilization starts over from the decision.
	res.State.Samples, res.State.JobStart = nil, now
	res.Overrides = maps.Clone(overrides)
	res.Scaled = true
	return res
}

// summaries lists every vertex with its evaluated metrics and recommended parallelism.
func summaries(order []Vertex, metrics map[VertexID]vertexMetrics) []VertexSummary {
	out := make([]VertexSummary, 0, len(order))
	for _, v := range order {
		m := metrics[v.ID]
		next := v.Parallelism
		if r, ok := m[MetricRecommendedParallelism]; ok {
			next = int(r.Current)
		}
		flat := make(map[string]float64, len(m))
		for k, val := range m {
			flat[k] = val.value()
		}
		out = append(out, VertexSummary{ID: v.ID, Current: v.Parallelism, New: next, Metrics: flat})
	}
	return out
}

// report renders the per-vertex entries of a ScalingReport, ordered by vertex id.
func report(changes map[VertexID]change, metrics map[VertexID]vertexMetrics) string {
	ids := slices.Sorted(maps.Keys(changes))
	var b strings.Builder
	for _, id := range ids {
		ch, m := changes[id], metrics[id]
		fmt.Fprintf(&b, "{ Vertex ID %s | Parallelism %d -> %d | Processing capacity %s -> %s | Target data rate %s}",
			id, ch.current, ch.next,
			javaFixed2(m.get(MetricTrueProcessingRate).Average),
			javaFixed2(m.get(MetricExpectedProcessingRate).Current),
			javaFixed2(m.get(MetricTargetDataRate).Average))
	}
	return b.String()
}

// restartTime is the expected restart duration: restart.time, or with restart time tracking the
// longest observed restart capped by restart.time-tracking.limit.
func (s State) restartTime(c Config) time.Duration {
	if !c.RestartTimeTracking {
		return c.RestartTime
	}
	longest := time.Duration(-1)
	for _, r := range s.RestartTimes {
		if r.Duration > 0 && r.Duration.Truncate(time.Second) > longest {
			longest = r.Duration.Truncate(time.Second)
		}
	}
	if longest < 0 {
		return c.RestartTime
	}
	return min(longest, c.RestartTimeLimit.Truncate(time.Second))
}

// recordRestartDuration completes the latest rescale record once the job runs again with the
// parallelism that rescale chose.
func (s *State) recordRestartDuration(t Topology) {
	n := len(s.RestartTimes)
	if n == 0 || s.RestartTimes[n-1].Duration != 0 || !s.JobStart.After(s.RestartTimes[n-1].Time) {
		return
	}
	at := s.RestartTimes[n-1].Time
	for id, recs := range s.History {
		for _, r := range recs {
			if !r.Time.Equal(at) {
				continue
			}
			if v, ok := t.Vertex(id); !ok || v.Parallelism != r.NewParallelism {
				return
			}
		}
	}
	s.RestartTimes[n-1].Duration = s.JobStart.Sub(at)
}

// trimHistory keeps, per vertex still in the job, the decisions younger than history.max.age and
// at most history.max.count of them.
func trimHistory(now time.Time, c Config, h map[VertexID][]ScalingRecord, t Topology) map[VertexID][]ScalingRecord {
	out := map[VertexID][]ScalingRecord{}
	cut := now.Add(-c.HistoryMaxAge)
	for id, recs := range h {
		if _, ok := t.Vertex(id); !ok {
			continue
		}
		var kept []ScalingRecord
		for _, r := range recs {
			if !r.Time.Before(cut) {
				kept = append(kept, r)
			}
		}
		if len(kept) > c.HistoryMaxCount {
			kept = kept[len(kept)-c.HistoryMaxCount:]
		}
		if len(kept) > 0 {
			out[id] = kept
		}
	}
	return out
}

// trimRestarts keeps the restart records younger than history.max.age, at most
// history.max.count of them, and always the latest one.
func trimRestarts(now time.Time, c Config, recs []RestartRecord) []RestartRecord {
	if len(recs) == 0 {
		return nil
	}
	latest := recs[len(recs)-1]
	cut := now.Add(-c.HistoryMaxAge)
	var kept []RestartRecord
	for _, r := range recs[:len(recs)-1] {
		if !r.Time.Before(cut) {
			kept = append(kept, r)
		}
	}
	if keep := c.HistoryMaxCount - 1; len(kept) > max(keep, 0) {
		kept = kept[len(kept)-max(keep, 0):]
	}
	return append(kept, latest)
}

// clone copies everything Evaluate modifies, so the caller's state stays untouched.
func (s State) clone() State {
	s.Samples = slices.Clone(s.Samples)
	h := make(map[VertexID][]ScalingRecord, len(s.History))
	for id, recs := range s.History {
		h[id] = slices.Clone(recs)
	}
	s.History = h
	s.Overrides = maps.Clone(s.Overrides)
	d := make(map[VertexID]DelayedScaleDown, len(s.DelayedScaleDown))
	for id, v := range s.DelayedScaleDown {
		v.Recommended = slices.Clone(v.Recommended)
		d[id] = v
	}
	s.DelayedScaleDown = d
	s.RestartTimes = slices.Clone(s.RestartTimes)
	s.Extra = maps.Clone(s.Extra)
	return s
}

// javaDouble formats like Java's Double.toString, as upstream's messages show numbers.
func javaDouble(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	case x == 0:
		return "0.0"
	}
	if a := math.Abs(x); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(x, 'E', -1, 64), "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// javaFixed2 formats like Java's %.2f (NaN and Infinity spelled as Java does).
func javaFixed2(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// sortedIDs returns map keys in order, for stable encodings.
func sortedIDs[V any](m map[VertexID]V) []VertexID {
	ids := make([]VertexID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
