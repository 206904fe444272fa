package autoscaler

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestLimitParallelism: the bound named is the one without which the parallelism would differ,
// decided where the factor and the parallelism limits are applied.
func TestLimitParallelism(t *testing.T) {
	vertex := func(p, maxP int) Vertex { return Vertex{ID: mid, Parallelism: p, MaxParallelism: maxP} }
	for _, c := range []struct {
		name   string
		v      Vertex
		factor float64
		cfg    func(*Config)
		want   int
		bounds []Bound
	}{
		{name: "within every limit", v: vertex(2, 128), factor: 1.95, want: 4},
		{name: "scale-up.max-factor", v: vertex(2, 128), factor: 1.95, cfg: func(c *Config) { c.ScaleUpMaxFactor = 0.5 }, want: 3, bounds: []Bound{BoundMaxFactor}},
		{name: "scale-down.max-factor", v: vertex(10, 128), factor: 0.1, want: 4, bounds: []Bound{BoundMaxFactor}},
		{name: "a factor clamped to no effect is no bound", v: vertex(1, 128), factor: 0.1, cfg: func(c *Config) { c.ScaleDownMaxFactor = 0.5 }, want: 1},
		{name: "vertex.min-parallelism", v: vertex(4, 128), factor: 0.1, cfg: func(c *Config) { c.ScaleDownMaxFactor = 1; c.VertexMinParallel = 3 }, want: 3, bounds: []Bound{BoundMinParallelism}},
		{name: "vertex.min-parallelism hides the max factor", v: vertex(10, 128), factor: 0.1, cfg: func(c *Config) { c.VertexMinParallel = 5 }, want: 5, bounds: []Bound{BoundMinParallelism}},
		{name: "vertex.max-parallelism", v: vertex(2, 128), factor: 1.95, cfg: func(c *Config) { c.VertexMaxParallel = 3 }, want: 3, bounds: []Bound{BoundMaxParallelism}},
		{name: "vertex.max-parallelism hides the max factor", v: vertex(2, 128), factor: 10, cfg: func(c *Config) { c.VertexMaxParallel = 3; c.ScaleUpMaxFactor = 2 }, want: 3, bounds: []Bound{BoundMaxParallelism}},
		{name: "the vertex's max parallelism is its key groups", v: vertex(2, 3), factor: 1.95, want: 3, bounds: []Bound{BoundKeyGroups}},
		{name: "key groups and vertex.max-parallelism alike", v: vertex(2, 3), factor: 1.95, cfg: func(c *Config) { c.VertexMaxParallel = 3 }, want: 3, bounds: []Bound{BoundKeyGroups, BoundMaxParallelism}},
		{name: "at the key groups already: held at the current parallelism", v: vertex(128, 128), factor: 2, want: 128, bounds: []Bound{BoundKeyGroups}},
		{name: "an infinite factor is capped, not overflowed", v: vertex(2, 0), factor: math.Inf(1), want: 200, bounds: []Bound{BoundMaxParallelism}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			got, bounds := limitParallelism(cfg, c.v, c.factor)
			if got != c.want || !slices.Equal(bounds, c.bounds) {
				t.Fatalf("limitParallelism = %d %v, want %d %v", got, bounds, c.want, c.bounds)
			}
		})
	}
}

// TestEvaluateExplainsTheDecision: each evaluation that applies, recommends or holds back a change
// says so per vertex, with the bounds that shaped it; evaluations that decide nothing do not.
// The loads are TestEvaluateRules' (target 0.5, band [0.3, 0.8]).
func TestEvaluateExplainsTheDecision(t *testing.T) {
	busyMid := func(p int, busy float64) (Topology, map[VertexID]load) {
		return pipeline(1, p, 1), map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: busy}, sink: {rate: 1000, busy: 100}}
	}
	unkeyed := func(top Topology) Topology {
		top.Vertices = slices.Clone(top.Vertices)
		top.Vertices[1].HashInput = false
		return top
	}
	type vertexWant struct {
		next   int
		bounds []Bound
	}
	type tc struct {
		name    string
		top     Topology
		loads   map[VertexID]load
		cfg     func(*Config)
		state   func(*State)
		outcome Outcome // "": no decision recorded
		hold    HoldReason
		want    map[VertexID]vertexWant // vertices not named: unchanged, unbound
	}
	var cases []tc
	add := func(c tc) { cases = append(cases, c) }

	top, l := busyMid(1, 900)
	add(tc{name: "applied: 1 -> 2, nothing bound it", top: top, loads: l, outcome: OutcomeApplied, want: map[VertexID]vertexWant{mid: {next: 2}}})
	add(tc{name: "recommend-only", top: top, loads: l, cfg: func(c *Config) { c.ScalingEnabled = false },
		outcome: OutcomeRecommended, hold: HoldRecommendOnly, want: map[VertexID]vertexWant{mid: {next: 2}}})
	add(tc{name: "an excluded period recommends", top: top, loads: l, cfg: func(c *Config) { c.ExcludedPeriods = []string{"11:00:00-13:00:00"} },
		outcome: OutcomeRecommended, hold: HoldExcludedPeriod, want: map[VertexID]vertexWant{mid: {next: 2}}})
	add(tc{name: "memory pressure holds it", top: top, loads: l, cfg: func(c *Config) { c.HeapUsageThreshold = 0.9 },
		state: func(s *State) {
			for i := range s.Samples {
				s.Samples[i].HeapUsedRatio = 0.95
			}
		},
		outcome: OutcomeHeld, hold: HoldMemoryPressure, want: map[VertexID]vertexWant{mid: {next: 2, bounds: []Bound{BoundMemory}}}})
	add(tc{name: "an excluded vertex says so", top: top, loads: l, cfg: func(c *Config) { c.ExcludedVertices = []VertexID{sink} },
		outcome: OutcomeApplied, want: map[VertexID]vertexWant{mid: {next: 2}, sink: {next: 1, bounds: []Bound{BoundExcluded}}}})
	top, l = busyMid(1, 500)
	add(tc{name: "within the band: nothing recorded", top: top, loads: l})

	top, l = busyMid(4, 100)
	add(tc{name: "scale-down.max-factor", top: top, loads: l, outcome: OutcomeApplied, want: map[VertexID]vertexWant{mid: {next: 2, bounds: []Bound{BoundMaxFactor}}}})
	add(tc{name: "held within scale-down.interval", top: top, loads: l, cfg: func(c *Config) { c.ScaleDownInterval = time.Hour },
		outcome: OutcomeHeld, hold: HoldScaleDownWait, want: map[VertexID]vertexWant{mid: {next: 2, bounds: []Bound{BoundMaxFactor, BoundScaleDownInterval}}}})
	add(tc{name: "vertex.min-parallelism", top: unkeyed(top), loads: l, cfg: func(c *Config) { c.VertexMinParallel = 3 },
		outcome: OutcomeApplied, want: map[VertexID]vertexWant{mid: {next: 3, bounds: []Bound{BoundMinParallelism}}}})

	top, l = busyMid(2, 900)
	add(tc{name: "scale-up.max-factor", top: unkeyed(top), loads: l, cfg: func(c *Config) { c.ScaleUpMaxFactor = 0.5 },
		outcome: OutcomeApplied, want: map[VertexID]vertexWant{mid: {next: 3, bounds: []Bound{BoundMaxFactor}}}})
	add(tc{name: "scale-up.max-factor, then aligned to the key groups", top: top, loads: l, cfg: func(c *Config) { c.ScaleUpMaxFactor = 0.5 },
		outcome: OutcomeApplied, want: map[VertexID]vertexWant{mid: {next: 4, bounds: []Bound{BoundMaxFactor, BoundKeyGroups}}}})
	add(tc{name: "vertex.max-parallelism", top: top, loads: l, cfg: func(c *Config) { c.VertexMaxParallel = 3 },
		outcome: OutcomeApplied, want: map[VertexID]vertexWant{mid: {next: 3, bounds: []Bound{BoundMaxParallelism}}}})
	capped := pipeline(1, 2, 1)
	capped.Vertices[1].MaxParallelism = 3
	add(tc{name: "the vertex's max parallelism", top: capped, loads: l, outcome: OutcomeApplied, want: map[VertexID]vertexWant{mid: {next: 3, bounds: []Bound{BoundKeyGroups}}}})
	atMax := pipeline(1, 128, 1)
	add(tc{name: "held at the key groups", top: atMax, loads: l, outcome: OutcomeHeld, hold: HoldParallelismLimit,
		want: map[VertexID]vertexWant{mid: {next: 128, bounds: []Bound{BoundKeyGroups}}}})

	atMaxSinkDown := pipeline(1, 128, 2)
	add(tc{name: "a vertex held at its key groups while another changes", top: atMaxSinkDown, loads: l, outcome: OutcomeApplied,
		want: map[VertexID]vertexWant{mid: {next: 128, bounds: []Bound{BoundKeyGroups}}, sink: {next: 1}}})

	parts := Topology{Vertices: []Vertex{{ID: src, Parallelism: 1, MaxParallelism: 128, Source: true, SourcePartitions: 10}}}
	add(tc{name: "a source aligned to its partitions", top: parts, loads: map[VertexID]load{src: {rate: 1000, busy: 1000}},
		outcome: OutcomeApplied, want: map[VertexID]vertexWant{src: {next: 4, bounds: []Bound{BoundKeyGroups}}}})

	// The last scale-up (1 → 2) expected 1000 → 2000; the rate only rose to 1050. The next one
	// would be factor 2.06 → 5, aligned to 6 (128 key groups: 21 per subtask instead of 25).
	ineffective := map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 952.381}, sink: {rate: 1000, busy: 100}}
	add(tc{name: "an ineffective scale-up is held", top: pipeline(1, 2, 1), loads: ineffective, cfg: func(c *Config) { c.EffectivenessDetection = true },
		state: func(s *State) {
			s.History = map[VertexID][]ScalingRecord{mid: {{Time: t0.Add(-30 * time.Minute), CurrentParallelism: 1, NewParallelism: 2, Metrics: map[string]EvaluatedMetric{
				MetricTrueProcessingRate:     {Current: math.NaN(), Average: 1000},
				MetricExpectedProcessingRate: {Current: 2000, Average: math.NaN()},
			}}}}
		},
		outcome: OutcomeHeld, hold: HoldIneffective, want: map[VertexID]vertexWant{mid: {next: 6, bounds: []Bound{BoundKeyGroups, BoundIneffectiveScaling}}}})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			s := fullState(samples(16, c.loads))
			if c.state != nil {
				c.state(&s)
			}
			r := evalAt(c.top, s, cfg)
			if c.outcome == "" {
				if r.Decision != nil {
					t.Fatalf("recorded a decision: %+v", *r.Decision)
				}
				return
			}
			if r.Decision == nil {
				t.Fatalf("no decision; vertices %+v", r.Vertices)
			}
			d := *r.Decision
			if d.Outcome != c.outcome || d.Hold != c.hold || !d.Time.Equal(s.Samples[15].Time) {
				t.Fatalf("outcome %s %q at %v, want %s %q", d.Outcome, d.Hold, d.Time, c.outcome, c.hold)
			}
			if len(d.Vertices) != len(c.top.Vertices) {
				t.Fatalf("vertices %+v", d.Vertices)
			}
			for i, v := range d.Vertices {
				if v.ID != c.top.Vertices[i].ID || v.Name != c.top.Vertices[i].Name || v.Current != c.top.Vertices[i].Parallelism {
					t.Errorf("vertex %d: %+v, want %+v in topological order", i, v, c.top.Vertices[i])
				}
				want, named := c.want[v.ID]
				if !named {
					want = vertexWant{next: v.Current}
				}
				if v.New != want.next || !slices.Equal(v.Bounds, want.bounds) {
					t.Errorf("%s: new %d bound by %v, want %d bound by %v", v.ID, v.New, v.Bounds, want.next, want.bounds)
				}
			}
			if c.outcome == OutcomeApplied && !r.Scaled || c.outcome != OutcomeApplied && r.Scaled {
				t.Errorf("outcome %s but scaled = %v", c.outcome, r.Scaled)
			}
		})
	}
}

// TestDecisionCarriesTheEvaluatedMetrics: the numbers of a decision are the evaluation's, and a
// lagging source's expected catch-up follows from its lag and rates.
func TestDecisionCarriesTheEvaluatedMetrics(t *testing.T) {
	// TestEvaluateRules' "lag is caught up within catch-up.duration": the map scales 1 → 2.
	loads := map[VertexID]load{src: {rate: 1000, busy: 100, lag: 1.8e6}, mid: {rate: 1000, busy: 600}, sink: {rate: 1000, busy: 100}}
	r := evalAt(pipeline(1, 1, 1), fullState(samples(16, loads)), testConfig())
	if r.Decision == nil || r.Decision.Outcome != OutcomeApplied {
		t.Fatalf("decision %+v", r.Decision)
	}
	byID := map[VertexID]VertexDecision{}
	for _, v := range r.Decision.Vertices {
		byID[v.ID] = v
	}
	m := byID[mid]
	if m.New != 2 || m.BusyRatio != 0.6 || m.TrueProcessingRate != 1666.667 || m.TargetRate != 1000 || !math.IsNaN(m.Lag) || !math.IsNaN(m.ExpectedCatchUp) {
		t.Errorf("map %+v", m)
	}
	s := byID[src]
	// The source keeps parallelism 1 at 10000 records/s against 1000 arriving: 1.8M records in 200 s.
	if s.New != 1 || s.Lag != 1.8e6 || s.TrueProcessingRate != 10000 || s.ExpectedCatchUp != 200 {
		t.Errorf("source %+v", s)
	}
}

func TestCatchUpSeconds(t *testing.T) {
	for _, c := range []struct {
		name             string
		lag, tpr, target float64
		cur, next        int
		restart          time.Duration
		want             float64
	}{
		{name: "no lag, no rescale", lag: 0, tpr: 2000, target: 1000, cur: 1, next: 1, want: 0},
		{name: "lag at the current parallelism", lag: 60000, tpr: 2000, target: 1000, cur: 1, next: 1, want: 60},
		{name: "a rescale adds the restart and what arrives meanwhile", lag: 60000, tpr: 2000, target: 1000, cur: 1, next: 2, restart: time.Minute,
			want: 60 + (60000+60000)/3000.0},
		{name: "never when the rate does not exceed the target", lag: 1, tpr: 1000, target: 1000, cur: 1, next: 1, want: math.Inf(1)},
		{name: "an idle source catches up at once", lag: 5, tpr: math.Inf(1), target: 0, cur: 1, next: 1, want: 0},
		{name: "unknown rate", lag: 5, tpr: math.NaN(), target: 0, cur: 1, next: 1, want: math.NaN()},
	} {
		got := catchUpSeconds(c.lag, c.tpr, c.target, c.cur, c.next, c.restart)
		if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
