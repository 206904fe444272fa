package autoscaler

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// decider computes the parallelism of each vertex for one evaluation.
type decider struct {
	now      time.Time
	c        Config
	restart  time.Duration
	delayed  map[VertexID]DelayedScaleDown
	warnings []Warning
}

// change is a vertex's outcome: the new parallelism (equal to the current one for none), the
// one its load and limits ask for before a hold (scale-down.interval, effectiveness detection,
// memory pressure) kept it back, whether its processing rate is outside the utilization band, and
// the bounds that made next or wanted differ from what the load asks for.
type change struct {
	current, next, wanted int
	outside               bool
	bounds                []Bound
}

func (ch change) none() bool { return ch.next == ch.current }

// held returns the change kept at the current parallelism by the hold b.
func (ch change) held(b Bound) change {
	ch.wanted, ch.next = ch.next, ch.current
	ch.bounds = appendBound(ch.bounds, b)
	return ch
}

// appendBound adds b unless it is there already.
func appendBound(bounds []Bound, b Bound) []Bound {
	if slices.Contains(bounds, b) {
		return bounds
	}
	return append(slices.Clip(bounds), b)
}

// vertices decides every vertex's parallelism but the excluded ones', leaving out those whose
// metrics allow no decision. Under memory pressure (held) every change is held back, as upstream,
// which then decides nothing: the changes are still computed to explain what is held back, but
// on copies, so the delayed scale-downs and the metrics of that computation are dropped (and the
// caller drops its warnings).
func (d *decider) vertices(order []Vertex, metrics map[VertexID]vertexMetrics, history map[VertexID][]ScalingRecord, held bool) map[VertexID]change {
	if held {
		delayed := make(map[VertexID]DelayedScaleDown, len(d.delayed))
		for id, v := range d.delayed {
			v.Recommended = slices.Clone(v.Recommended)
			delayed[id] = v
		}
		d.delayed = delayed
	}
	decided := map[VertexID]change{}
	for _, v := range order {
		if d.c.excluded(v.ID) {
			continue
		}
		m := metrics[v.ID]
		if held {
			m = maps.Clone(m)
		}
		ch, ok := d.vertex(v, m, history[v.ID])
		if !ok {
			continue
		}
		if held && !ch.none() {
			ch = ch.held(BoundMemory)
		}
		decided[v.ID] = ch
	}
	return decided
}

// vertex decides one vertex's parallelism from its evaluated metrics and scaling history. The
// second result is false when the metrics do not allow a decision.
func (d *decider) vertex(v Vertex, m vertexMetrics, history []ScalingRecord) (change, bool) {
	cur := v.Parallelism
	noChange := change{current: cur, next: cur, wanted: cur}
	tpr := m.get(MetricTrueProcessingRate).Average
	if math.IsNaN(tpr) {
		return noChange, false
	}
	capacity := targetCapacity(m, d.c, d.c.TargetUtil, true, d.restart)
	if math.IsNaN(capacity) {
		return noChange, false
	}
	factor := capacity / tpr
	if math.IsNaN(factor) {
		// Infinite capacity over infinite rate says nothing about the right parallelism.
		return noChange, false
	}

	next, bounds := d.scale(v, cur, factor)
	if next == cur {
		delete(d.delayed, v.ID)
		// Still worth explaining when the load asks for a change the limits do not allow.
		return change{current: cur, next: cur, wanted: cur, outside: outsideUtilizationBound(m), bounds: bounds}, true
	}
	m[MetricExpectedProcessingRate] = current(tpr / float64(cur) * float64(next))
	ch := change{current: cur, next: next, wanted: next, outside: outsideUtilizationBound(m), bounds: bounds}

	if next > cur {
		delete(d.delayed, v.ID)
		if n := len(history); n > 0 {
			last := history[n-1]
			if cur == last.NewParallelism && last.NewParallelism > last.CurrentParallelism && d.ineffective(v.ID, m, last) {
				return ch.held(BoundIneffectiveScaling), true
			}
		}
		return ch, true
	}
	return d.delayScaleDown(v.ID, ch), true
}

// bounds are the parallelism limits of a vertex: vertex.min/max-parallelism widened to include
// the current parallelism (so the autoscaler never forces a change just to meet them), and the
// vertex's max parallelism (number of key groups) on top.
func (c Config) bounds(v Vertex) (lower, upper, maxParallelism int) {
	maxParallelism = v.MaxParallelism
	if maxParallelism <= 0 {
		maxParallelism = math.MaxInt32
	}
	lower = min(v.Parallelism, c.VertexMinParallel)
	upper = max(v.Parallelism, c.VertexMaxParallel)
	return lower, upper, maxParallelism
}

// limitParallelism applies the scaling factor the load asks for to the vertex's parallelism
// within the max factors and the parallelism bounds, and names the bounds that bind the result:
// those without which it would differ. An upper bound reached hides the max factor (without the
// factor's clamp the result would be the same bound), and so does a lower one.
func limitParallelism(c Config, v Vertex, factor float64) (int, []Bound) {
	cur := v.Parallelism
	lower, upper, maxP := c.bounds(v)
	top := min(maxP, upper)
	apply := func(f float64) int { return int(math.Min(math.Ceil(f*float64(cur)), math.MaxInt32)) }
	within := func(p int) int { return min(max(lower, p), top) }

	clamped := math.Min(math.Max(factor, 1-c.ScaleDownMaxFactor), 1+c.ScaleUpMaxFactor)
	p := apply(clamped)
	next := within(p)
	var bounds []Bound
	switch {
	case p > top:
		if maxP == top {
			bounds = append(bounds, BoundKeyGroups)
		}
		if upper == top {
			bounds = append(bounds, BoundMaxParallelism)
		}
	case p < lower:
		bounds = append(bounds, BoundMinParallelism)
	case clamped != factor && within(apply(factor)) != next:
		bounds = append(bounds, BoundMaxFactor)
	}
	return next, bounds
}

// scale applies the factor to the current parallelism within the bounds, then aligns it.
func (d *decider) scale(v Vertex, cur int, factor float64) (int, []Bound) {
	next, bounds := limitParallelism(d.c, v, factor)
	if next == cur {
		return next, bounds
	}
	lower, upper, maxP := d.c.bounds(v)
	aligned, w := align(d.c.AlignmentMode, v, cur, next, lower, upper, maxP)
	if w != nil {
		d.warnings = append(d.warnings, *w)
	}
	if aligned != next {
		bounds = appendBound(bounds, BoundKeyGroups)
	}
	return aligned, bounds
}

// align moves the parallelism to one that spreads key groups (or source partitions) evenly
// over subtasks, as upstream's alignment modes do. It applies to sources with a known partition
// count and to vertices with a keyed (hash) input.
func align(mode string, v Vertex, cur, target, lower, upper, maxP int) (int, *Warning) {
	if mode == AlignOff || (v.SourcePartitions <= 0 && !v.HashInput) {
		return target, nil
	}
	n := maxP
	if v.SourcePartitions > 0 {
		n = v.SourcePartitions
	}
	if n <= 0 || n == math.MaxInt32 {
		return target, nil // key groups unknown
	}
	scaleUp := target > cur
	end := min(n, min(maxP, upper))
	if !scaleUp {
		end = min(cur, end)
	}
	acceptLoadReducing := mode == AlignBalanced || mode == alignLegacyMaximizeUtilis
	for p := target; p <= end; p++ {
		if n%p == 0 || (acceptLoadReducing && n/p < n/target) {
			return p, nil
		}
	}
	if mode != alignLegacyEvenlySpread && mode != alignLegacyMaximizeUtilis {
		return target, nil
	}
	// The legacy modes fall back to the largest parallelism below the target that does not
	// increase any subtask's load, and keep the current parallelism rather than reverse the
	// direction of the change.
	p := target
	for ; p > 0; p-- {
		if n/p > n/target {
			if n%p != 0 {
				p++
			}
			break
		}
	}
	candidate := max(p, lower)
	limited := func(actual int) *Warning {
		return &Warning{Type: EventWarning, Reason: ReasonScalingLimited, Message: fmt.Sprintf(
			"Scaling limited detected for %s (expected parallelism: %d, actual parallelism %d). "+
				"Scaling limited due to numKeyGroupsOrPartitions : %d，upperBoundForAlignment(maxParallelism or parallelismUpperLimit): %d, parallelismLowerLimit: %d.",
			v.ID, target, actual, n, min(maxP, upper), lower)}
	}
	if (scaleUp && candidate <= cur) || (!scaleUp && candidate >= cur) {
		return cur, limited(cur)
	}
	if candidate != target {
		return candidate, limited(candidate)
	}
	return candidate, nil
}

// outsideUtilizationBound reports whether the processing rate left the band between the scale-up
// and scale-down thresholds; only then does a job get rescaled at all.
func outsideUtilizationBound(m vertexMetrics) bool {
	tpr := m.get(MetricTrueProcessingRate).Average
	return tpr < m.get(MetricScaleUpRateThreshold).Current || tpr > m.get(MetricScaleDownRateThreshold).Current
}

// ineffective reports whether the vertex's last scale-up achieved less than
// scaling.effectiveness.threshold of the processing rate increase it expected. It warns either
// way and blocks the new scale-up only when detection is enabled.
func (d *decider) ineffective(id VertexID, m vertexMetrics, last ScalingRecord) bool {
	lastRate := metricOf(last.Metrics, MetricTrueProcessingRate).Average
	lastExpected := metricOf(last.Metrics, MetricExpectedProcessingRate).Current
	expectedIncrease := lastExpected - lastRate
	actualIncrease := m.get(MetricTrueProcessingRate).Average - lastRate
	if actualIncrease/expectedIncrease >= d.c.EffectivenessThreshold {
		return false
	}
	state := "disabled"
	if d.c.EffectivenessDetection {
		state = "enabled"
	}
	d.warnings = append(d.warnings, Warning{Type: EventNormal, Reason: ReasonIneffectiveScaling, Message: fmt.Sprintf(
		"Ineffective scaling detected for %s (expected increase: %s, actual increase %s). Blocking of ineffective scaling decisions is %s",
		id, javaDouble(expectedIncrease), javaDouble(actualIncrease), state)})
	return d.c.EffectivenessDetection
}

func metricOf(m map[string]EvaluatedMetric, name string) EvaluatedMetric {
	return vertexMetrics(m).get(name)
}

// delayScaleDown holds a scale-down back until it has been wanted for scale-down.interval, then
// applies the highest parallelism recommended within that interval, so that a dip in load does
// not cost a restart and several scale-downs merge into one.
func (d *decider) delayScaleDown(id VertexID, ch change) change {
	if d.c.ScaleDownInterval <= 0 {
		return ch
	}
	info, ok := d.delayed[id]
	if !ok {
		info = DelayedScaleDown{FirstTriggered: d.now}
	}
	rec := append([]RecommendedParallelism(nil), info.Recommended...)
	for len(rec) > 0 && rec[len(rec)-1].Parallelism <= ch.next {
		rec = rec[:len(rec)-1]
	}
	info.Recommended = append(rec, RecommendedParallelism{Time: d.now, Parallelism: ch.next, OutsideBound: ch.outside})
	d.delayed[id] = info

	windowStart := d.now.Add(-d.c.ScaleDownInterval)
	if windowStart.Before(info.FirstTriggered) {
		return ch.held(BoundScaleDownInterval)
	}
	for len(info.Recommended) > 1 && info.Recommended[0].Time.Before(windowStart) {
		info.Recommended = info.Recommended[1:]
	}
	d.delayed[id] = info
	best := info.Recommended[0]
	if best.Parallelism == ch.current {
		return ch.held(BoundScaleDownInterval)
	}
	if best.Parallelism == ch.next {
		return ch
	}
	// An earlier, higher recommendation within the interval wins: that is what bounds the
	// result now, not the limits of this evaluation's.
	return change{current: ch.current, next: best.Parallelism, wanted: best.Parallelism, outside: best.OutsideBound,
		bounds: []Bound{BoundScaleDownInterval}}
}
