package autoscaler

import (
	"math"
	"slices"
	"time"
)

// Bound names a limit that made a vertex's parallelism differ from what its load asks for. It is
// decided where the limit is applied (limitParallelism, align, the holds in decider.vertex), so
// that the explanation is the decision itself, not a reconstruction of it.
type Bound string

// Bounds, in the order the decision applies them.
const (
	// BoundMaxFactor: scale-up.max-factor or scale-down.max-factor kept the change smaller.
	BoundMaxFactor Bound = "MaxFactor"
	// BoundMinParallelism: vertex.min-parallelism raised a scale-down.
	BoundMinParallelism Bound = "MinParallelism"
	// BoundMaxParallelism: vertex.max-parallelism capped a scale-up.
	BoundMaxParallelism Bound = "MaxParallelism"
	// BoundKeyGroups: the vertex's max parallelism (its number of key groups) capped a scale-up,
	// or the parallelism was aligned to spread key groups or source partitions evenly.
	BoundKeyGroups Bound = "KeyGroups"
	// BoundScaleDownInterval: a scale-down waits for scale-down.interval, or took the highest
	// parallelism recommended within it.
	BoundScaleDownInterval Bound = "ScaleDownInterval"
	// BoundIneffectiveScaling: scaling.effectiveness.detection blocked a scale-up because the
	// last one achieved too little.
	BoundIneffectiveScaling Bound = "IneffectiveScaling"
	// BoundMemory: heap usage or GC time above memory.heap-usage.threshold or
	// memory.gc-pressure.threshold held every change back.
	BoundMemory Bound = "Memory"
	// BoundExcluded: vertex.exclude.ids leaves the vertex alone.
	BoundExcluded Bound = "Excluded"
)

// Outcome is what an evaluation did with the parallelism it decided.
type Outcome string

// Outcomes of a recorded decision.
const (
	// OutcomeApplied: the new parallelism is handed to the reconcile to apply.
	OutcomeApplied Outcome = "Applied"
	// OutcomeRecommended: scaling.enabled is false or the time is within excluded.periods; the
	// job keeps its parallelism, and the recommendation is all there is.
	OutcomeRecommended Outcome = "Recommended"
	// OutcomeHeld: a vertex's load is outside the utilization band and asks for a change, but a
	// hold (scale-down.interval, effectiveness detection, memory pressure) or the limits keep
	// the job at its parallelism.
	OutcomeHeld Outcome = "Held"
)

// HoldReason says why a decision is Recommended or Held rather than Applied.
type HoldReason string

// Reasons of a decision not applied.
const (
	HoldNone             HoldReason = ""
	HoldRecommendOnly    HoldReason = "RecommendOnly"  // scaling.enabled false
	HoldExcludedPeriod   HoldReason = "ExcludedPeriod" // within excluded.periods
	HoldScaleDownWait    HoldReason = "ScaleDownInterval"
	HoldIneffective      HoldReason = "IneffectiveScaling"
	HoldMemoryPressure   HoldReason = "MemoryPressure"
	HoldParallelismLimit HoldReason = "ParallelismLimits" // the limits keep the current parallelism
)

// Decision explains an evaluation that applied, recommended or held back a change, per vertex.
// Evaluations that decide nothing (window not full, every vertex within the utilization band)
// have none.
type Decision struct {
	Time    time.Time
	Outcome Outcome
	Hold    HoldReason
	// Vertices are all vertices of the job in topological order.
	Vertices []VertexDecision
}

// VertexDecision is one vertex's part of a decision. Rates are records per second, NaN when
// not known.
type VertexDecision struct {
	ID      VertexID
	Name    string
	Current int
	// New is the parallelism decided: applied, recommended, or (Held) wanted but held back.
	New                int
	BusyRatio          float64
	TrueProcessingRate float64
	TargetRate         float64
	// Lag is the source's pending records; NaN for vertices that are not sources.
	Lag float64
	// ExpectedCatchUp is how long the source would take to work off its lag at New (restart
	// included when New differs); +Inf when its processing rate would not exceed the target
	// rate, NaN when it is not a source.
	ExpectedCatchUp float64
	Bounds          []Bound
}

// Changed reports whether the decision changes any vertex's parallelism.
func (d Decision) Changed() bool {
	return slices.ContainsFunc(d.Vertices, func(v VertexDecision) bool { return v.New != v.Current })
}

// outcomeOf classifies an evaluation from its per-vertex changes: whether any vertex outside the
// utilization band changes (then the job is rescaled, or recommended to be), else whether one
// outside the band was held back by a hold or its limits. The boolean is false when there is
// nothing to record.
func outcomeOf(changes map[VertexID]change, scalingEnabled, excludedPeriod bool) (Outcome, HoldReason, bool) {
	anyOutside, held := false, HoldNone
	for _, ch := range changes {
		switch {
		case !ch.none() && ch.outside:
			anyOutside = true
		case ch.none() && ch.outside && len(ch.bounds) > 0:
			if h := holdOf(ch); h.rank() > held.rank() {
				held = h
			}
		}
	}
	switch {
	case anyOutside && !scalingEnabled:
		return OutcomeRecommended, HoldRecommendOnly, true
	case anyOutside && excludedPeriod:
		return OutcomeRecommended, HoldExcludedPeriod, true
	case anyOutside:
		return OutcomeApplied, HoldNone, true
	case held != HoldNone:
		return OutcomeHeld, held, true
	}
	return "", HoldNone, false
}

// rank orders the holds of a Held decision, the highest named: memory pressure holds every
// vertex back, then the holds that end by themselves, then the limits, which only a change of
// configuration or topology lifts.
func (h HoldReason) rank() int {
	switch h {
	case HoldMemoryPressure:
		return 4
	case HoldIneffective:
		return 3
	case HoldScaleDownWait:
		return 2
	case HoldParallelismLimit:
		return 1
	}
	return 0
}

// holdOf is the hold that kept a vertex at its parallelism, from the bound that did.
func holdOf(ch change) HoldReason {
	switch {
	case slices.Contains(ch.bounds, BoundMemory):
		return HoldMemoryPressure
	case slices.Contains(ch.bounds, BoundIneffectiveScaling):
		return HoldIneffective
	case slices.Contains(ch.bounds, BoundScaleDownInterval):
		return HoldScaleDownWait
	}
	return HoldParallelismLimit
}

// explain builds the decision's per-vertex view: New is the applied or recommended parallelism,
// or for a Held outcome the one wanted; metrics come from the evaluation.
func explain(now time.Time, outcome Outcome, hold HoldReason, order []Vertex, changes map[VertexID]change, metrics map[VertexID]vertexMetrics, excluded func(VertexID) bool, restart time.Duration) *Decision {
	d := &Decision{Time: now, Outcome: outcome, Hold: hold, Vertices: make([]VertexDecision, 0, len(order))}
	for _, v := range order {
		m := metrics[v.ID]
		vd := VertexDecision{ID: v.ID, Name: v.Name, Current: v.Parallelism, New: v.Parallelism,
			BusyRatio:          m.get(MetricLoad).Average,
			TrueProcessingRate: m.get(MetricTrueProcessingRate).Average,
			TargetRate:         m.get(MetricTargetDataRate).Average,
			Lag:                math.NaN(), ExpectedCatchUp: math.NaN()}
		if ch, ok := changes[v.ID]; ok {
			vd.New, vd.Bounds = ch.next, slices.Clone(ch.bounds)
			switch {
			case outcome == OutcomeHeld && hold == HoldParallelismLimit && !ch.none():
				// Only the limits hold the job: without a hold to lift, this change within the
				// band would not be applied either, nor would what bounded it matter.
				vd.New, vd.Bounds = ch.current, nil
			case outcome == OutcomeHeld && hold == HoldParallelismLimit:
				vd.New = ch.current
			case outcome == OutcomeHeld:
				// What would be applied once the hold lifts.
				vd.New = ch.wanted
			}
		} else if excluded(v.ID) {
			vd.Bounds = []Bound{BoundExcluded}
		}
		if v.isSource() {
			vd.Lag = m.get(MetricLag).Current
			vd.ExpectedCatchUp = catchUpSeconds(vd.Lag, vd.TrueProcessingRate, vd.TargetRate, vd.Current, vd.New, restart)
		}
		d.Vertices = append(d.Vertices, vd)
	}
	return d
}

// catchUpSeconds is how long a source takes to work off lag at parallelism next, given its true
// processing rate at cur and the rate data arrives at: a rescale first stops it for the restart
// time, during which the lag grows at the target rate. +Inf when it would not catch up; NaN when
// a rate is unknown.
func catchUpSeconds(lag, tpr, target float64, cur, next int, restart time.Duration) float64 {
	if math.IsNaN(lag) || math.IsNaN(tpr) || math.IsNaN(target) || cur <= 0 {
		return math.NaN()
	}
	down := 0.0
	if next != cur {
		down = seconds(restart)
	}
	backlog := lag + target*down
	if backlog <= 0 {
		return down
	}
	capacity := tpr / float64(cur) * float64(next)
	if math.IsInf(capacity, 1) {
		return down
	}
	if capacity <= target {
		return math.Inf(1)
	}
	return down + backlog/(capacity-target)
}
