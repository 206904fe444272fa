package autoscaler

import (
	"maps"
	"math"
	"strings"
	"testing"
	"time"
)

// TestEvaluateRules checks each rule of the algorithm with a steady window on
// source → keyed map → sink. With the test band (target 0.5, [0.3, 0.8]), restart.time 5 min and
// catch-up.duration 30 min, a vertex with input rate R needs capacity R·300/1800 + R/0.5.
func TestEvaluateRules(t *testing.T) {
	busyMid := func(p int, busy float64) (Topology, map[VertexID]load) {
		return pipeline(1, p, 1), map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: busy}, sink: {rate: 1000, busy: 100}}
	}
	unkeyed := func(top Topology) Topology {
		top.Vertices = append([]Vertex(nil), top.Vertices...)
		top.Vertices[1].HashInput = false
		return top
	}
	type tc struct {
		name  string
		top   Topology
		loads map[VertexID]load
		cfg   func(*Config)
		want  map[VertexID]int // nil: no scaling
	}
	cases := []tc{}
	add := func(c tc) { cases = append(cases, c) }

	top, l := busyMid(1, 900)
	// TPR 1111 < scale-up threshold 1250; capacity 2167 → factor 1.95 → 2.
	add(tc{name: "utilization above the band scales up", top: top, loads: l, want: map[VertexID]int{src: 1, mid: 2, sink: 1}})
	top, l = busyMid(1, 500)
	// TPR 2000 within [1250, 3500]: the ideal parallelism (2) differs, but not worth a restart.
	add(tc{name: "utilization within the band keeps the parallelism", top: top, loads: l})
	top, l = busyMid(4, 100)
	// TPR 10000 > 3500; factor 0.22 clamped to 1-0.6 → ceil(1.6) = 2.
	add(tc{name: "utilization below the band scales down, clamped by scale-down.max-factor", top: top, loads: l, want: map[VertexID]int{src: 1, mid: 2, sink: 1}})
	add(tc{name: "scale-down.max-factor 1 lets the factor through", top: top, loads: l,
		cfg: func(c *Config) { c.ScaleDownMaxFactor = 1 }, want: map[VertexID]int{src: 1, mid: 1, sink: 1}})
	add(tc{name: "vertex.min-parallelism bounds a scale-down", top: unkeyed(top), loads: l,
		cfg: func(c *Config) { c.VertexMinParallel = 3 }, want: map[VertexID]int{src: 1, mid: 3, sink: 1}})
	add(tc{name: "vertex.min-parallelism above the current parallelism does not force a change", top: unkeyed(top), loads: l,
		cfg: func(c *Config) { c.VertexMinParallel = 4 }})

	top, l = busyMid(2, 900)
	// factor 1.95 → ceil(3.9) = 4.
	add(tc{name: "scale-up follows the factor", top: top, loads: l, want: map[VertexID]int{src: 1, mid: 4, sink: 1}})
	add(tc{name: "scale-up.max-factor clamps the factor", top: unkeyed(top), loads: l,
		cfg: func(c *Config) { c.ScaleUpMaxFactor = 0.5 }, want: map[VertexID]int{src: 1, mid: 3, sink: 1}})
	add(tc{name: "keyed vertex is aligned to a divisor of the key groups", top: top, loads: l,
		cfg: func(c *Config) { c.ScaleUpMaxFactor = 0.5 }, want: map[VertexID]int{src: 1, mid: 4, sink: 1}})
	add(tc{name: "alignment mode OFF keeps the computed parallelism", top: top, loads: l,
		cfg: func(c *Config) { c.ScaleUpMaxFactor = 0.5; c.AlignmentMode = AlignOff }, want: map[VertexID]int{src: 1, mid: 3, sink: 1}})
	add(tc{name: "vertex.max-parallelism caps a scale-up", top: top, loads: l,
		cfg: func(c *Config) { c.VertexMaxParallel = 3 }, want: map[VertexID]int{src: 1, mid: 3, sink: 1}})
	capped := pipeline(1, 2, 1)
	capped.Vertices[1].MaxParallelism = 3
	add(tc{name: "the vertex's max parallelism (key groups) caps a scale-up", top: capped, loads: l, want: map[VertexID]int{src: 1, mid: 3, sink: 1}})
	add(tc{name: "vertex.exclude.ids leaves the vertex alone", top: top, loads: l,
		cfg: func(c *Config) { c.ExcludedVertices = []VertexID{mid} }})

	// A busy source with 10 partitions: factor 2.17 → 3; 3 does not divide 10.
	parts := Topology{Vertices: []Vertex{{ID: src, Parallelism: 1, MaxParallelism: 128, Source: true, SourcePartitions: 10}}}
	pl := map[VertexID]load{src: {rate: 1000, busy: 1000}}
	add(tc{name: "BALANCED aligns a source to the first parallelism that lowers the partitions per subtask", top: parts, loads: pl, want: map[VertexID]int{src: 4}})
	add(tc{name: "EVENLY_SPREAD aligns a source to a divisor of its partitions", top: parts, loads: pl,
		cfg: func(c *Config) { c.AlignmentMode = AlignEvenlySpread }, want: map[VertexID]int{src: 5}})
	add(tc{name: "OFF does not align a source", top: parts, loads: pl,
		cfg: func(c *Config) { c.AlignmentMode = AlignOff }, want: map[VertexID]int{src: 3}})

	// TPR 1667 is within [1250, 3500] without lag.
	top, l = busyMid(1, 600)
	add(tc{name: "no lag: within the band", top: top, loads: l})
	lagged := maps.Clone(l)
	lagged[src] = load{rate: 1000, busy: 100, lag: 1.8e6}
	// 1.8M pending records = 30 min of input: catch-up adds 1000/s and the backlog widens the
	// band to [0, 1]; the threshold 2000 is above TPR 1667 and the capacity 3167 gives 2.
	add(tc{name: "lag is caught up within catch-up.duration", top: top, loads: lagged, want: map[VertexID]int{src: 1, mid: 2, sink: 1}})
	add(tc{name: "catch-up.duration 0 ignores the lag", top: top, loads: lagged,
		cfg: func(c *Config) { c.CatchUpDuration = 0 }})

	top, l = busyMid(4, 100)
	backlog := maps.Clone(l)
	backlog[src] = load{rate: 1000, busy: 100, lag: 400000}
	add(tc{name: "a backlog above backlog-processing.lag-threshold blocks a scale-down", top: top, loads: backlog})
	small := maps.Clone(l)
	small[src] = load{rate: 1000, busy: 100, lag: 200000}
	add(tc{name: "a backlog below backlog-processing.lag-threshold does not", top: top, loads: small, want: map[VertexID]int{src: 1, mid: 2, sink: 1}})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			r := evalAt(c.top, fullState(samples(16, c.loads)), cfg)
			if c.want == nil {
				if r.Scaled || len(r.Overrides) > 0 || r.Reason != "" {
					t.Fatalf("want no scaling, got %+v (%s)", r.Overrides, r.Message)
				}
				return
			}
			if !r.Scaled || !maps.Equal(r.Overrides, c.want) {
				t.Fatalf("overrides = %v (scaled %v), want %v; vertices %+v", r.Overrides, r.Scaled, c.want, r.Vertices)
			}
			if !maps.Equal(r.State.Overrides, c.want) {
				t.Errorf("state overrides = %v, want %v", r.State.Overrides, c.want)
			}
			if r.Reason != ReasonScalingReport || !strings.HasPrefix(r.Message, "Scaling execution enabled, begin scaling vertices:{ Vertex ID ") {
				t.Errorf("event %s %q", r.Reason, r.Message)
			}
		})
	}
}

func TestEvaluateScalingReportMessage(t *testing.T) {
	loads := map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 900}, sink: {rate: 1000, busy: 100}}
	r := evalAt(pipeline(1, 1, 1), fullState(samples(16, loads)), testConfig())
	want := "Scaling execution enabled, begin scaling vertices:" +
		"{ Vertex ID 0a448493b4782967b150582570326227 | Parallelism 1 -> 2 | Processing capacity 1111.11 -> 2222.22 | Target data rate 1000.00}"
	if r.Message != want {
		t.Fatalf("message\n%s\nwant\n%s", r.Message, want)
	}
	if got := metric(t, r, mid, MetricLoad); got != 0.9 {
		t.Errorf("LOAD = %v", got)
	}
	if got := metric(t, r, mid, MetricTrueProcessingRate); got != 1111.111 {
		t.Errorf("TRUE_PROCESSING_RATE = %v", got)
	}
	if got := metric(t, r, mid, MetricRecommendedParallelism); got != 2 {
		t.Errorf("RECOMMENDED_PARALLELISM = %v", got)
	}
	// A decision restarts stabilization and records the decision.
	if len(r.State.Samples) != 0 || !r.State.JobStart.Equal(t0.Add(15*time.Minute)) {
		t.Errorf("state after scaling: %d samples, start %v", len(r.State.Samples), r.State.JobStart)
	}
	if h := r.State.History[mid]; len(h) != 1 || h[0].CurrentParallelism != 1 || h[0].NewParallelism != 2 || h[0].Metrics[MetricExpectedProcessingRate].Current != 2222.222 {
		t.Errorf("history %+v", r.State.History)
	}
	if len(r.State.RestartTimes) != 1 || r.State.RestartTimes[0].Duration != 0 {
		t.Errorf("restart records %+v", r.State.RestartTimes)
	}
}

func TestEvaluateRecommendOnly(t *testing.T) {
	loads := map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 900}, sink: {rate: 1000, busy: 100}}
	cfg := testConfig()
	cfg.ScalingEnabled = false
	in := fullState(samples(16, loads))
	r := evalAt(pipeline(1, 1, 1), in, cfg)
	if r.Scaled || len(r.Overrides) != 0 || len(r.State.Overrides) != 0 || len(r.State.History) != 0 {
		t.Fatalf("recommend-only changed something: %+v", r)
	}
	if newParallelism(t, r, mid) != 2 {
		t.Errorf("recommended %d", newParallelism(t, r, mid))
	}
	want := "Scaling execution disabled by config job.autoscaler.scaling.enabled:false, recommended parallelism change:{ Vertex ID " + string(mid) + " | Parallelism 1 -> 2"
	if r.Reason != ReasonScalingReport || !strings.HasPrefix(r.Message, want) {
		t.Errorf("event %s %q", r.Reason, r.Message)
	}
	if len(r.State.Samples) != 16 {
		t.Errorf("recommend-only dropped the window")
	}
}

func TestEvaluateNoDecisionUntilWindowFull(t *testing.T) {
	loads := map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 900}, sink: {rate: 1000, busy: 100}}
	s := fullState(samples(16, loads))
	cfg := testConfig()
	cfg.MetricsWindow = 16 * time.Minute // the samples span 15
	r := evalAt(pipeline(1, 1, 1), s, cfg)
	if r.Scaled || r.Reason != "" {
		t.Fatalf("decided before the window was full: %s", r.Message)
	}
	if len(r.Vertices) != 3 || metric(t, r, mid, MetricLoad) != 0.9 {
		t.Errorf("metrics are reported before the window is full: %+v", r.Vertices)
	}
	one := fullState(samples(1, loads))
	if r := evalAt(pipeline(1, 1, 1), one, testConfig()); r.Scaled || len(r.Vertices) != 0 {
		t.Errorf("evaluated a single sample: %+v", r)
	}
}

func TestEvaluateDisabledClearsState(t *testing.T) {
	loads := map[VertexID]load{src: {rate: 1000, busy: 100}}
	cfg := testConfig()
	cfg.Enabled = false
	s := fullState(samples(16, loads))
	s.Overrides = map[VertexID]int{src: 3}
	r := evalAt(pipeline(1, 1, 1), s, cfg)
	if r.Scaled || len(r.State.Samples) != 0 || len(r.State.Overrides) != 0 {
		t.Fatalf("disabled autoscaler kept state: %+v", r.State)
	}
}

func TestEvaluateMemoryPressure(t *testing.T) {
	loads := map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 900}, sink: {rate: 1000, busy: 100}}
	for _, c := range []struct {
		name     string
		gc, heap float64
		cfg      func(*Config)
		blocked  bool
	}{
		{name: "GC pressure above memory.gc-pressure.threshold holds scaling", gc: 500, heap: 0.5, cfg: func(c *Config) { c.GCPressureThreshold = 0.3 }, blocked: true},
		{name: "heap usage above memory.heap-usage.threshold holds scaling", gc: 10, heap: 0.95, cfg: func(c *Config) { c.HeapUsageThreshold = 0.9 }, blocked: true},
		{name: "defaults (1.0) never hold", gc: 500, heap: 0.95, cfg: func(*Config) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := samples(16, loads)
			for i := range s {
				s[i].GCTimeMsPerSecond, s[i].HeapUsedRatio = c.gc, c.heap
			}
			cfg := testConfig()
			c.cfg(&cfg)
			r := evalAt(pipeline(1, 1, 1), fullState(s), cfg)
			if r.Scaled == c.blocked {
				t.Fatalf("scaled = %v", r.Scaled)
			}
			if c.blocked && (len(r.Warnings) != 1 || r.Warnings[0].Reason != ReasonMemoryPressure || r.Warnings[0].Type != EventNormal) {
				t.Errorf("warnings %+v", r.Warnings)
			}
		})
	}
}

func TestEvaluateScaleDownInterval(t *testing.T) {
	loads := map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 100}, sink: {rate: 1000, busy: 100}}
	cfg := testConfig()
	cfg.ScaleDownInterval = time.Hour
	top := pipeline(1, 4, 1)
	s := fullState(samples(16, loads))
	start := s.Samples[15].Time

	at := func(d time.Duration, s State) Result { return Evaluate(start.Add(d), top, s, cfg) }
	r := at(0, s)
	if r.Scaled {
		t.Fatalf("scale-down.interval: scaled down at once")
	}
	if d := r.State.DelayedScaleDown[mid]; !d.FirstTriggered.Equal(start) || len(d.Recommended) != 1 || d.Recommended[0].Parallelism != 2 {
		t.Fatalf("delayed scale-down not recorded: %+v", r.State.DelayedScaleDown)
	}
	r = at(30*time.Minute, r.State)
	if r.Scaled {
		t.Fatalf("scale-down.interval: scaled down within the interval")
	}
	r = at(61*time.Minute, r.State)
	if !r.Scaled || r.Overrides[mid] != 2 {
		t.Fatalf("scale-down.interval: not scaled down after the interval: %v", r.Overrides)
	}
	if len(r.State.DelayedScaleDown) != 0 {
		t.Errorf("a rescale must clear the pending scale-downs: %+v", r.State.DelayedScaleDown)
	}

	// A scale-up wish in between clears the pending scale-down.
	r = at(0, s)
	busy := samples(16, map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 990}, sink: {rate: 1000, busy: 100}})
	st := r.State
	st.Samples = busy
	r = Evaluate(busy[15].Time.Add(30*time.Minute), top, st, cfg)
	if _, pending := r.State.DelayedScaleDown[mid]; pending {
		t.Errorf("scale-up did not clear the pending scale-down")
	}
}

// TestDelayedScaleDownTakesTheHighestRecommendation: after the interval, the highest
// parallelism recommended within it wins, so a scale-down does not undershoot a recent peak.
func TestDelayedScaleDownTakesTheHighestRecommendation(t *testing.T) {
	c := testConfig()
	c.ScaleDownInterval = time.Hour
	start := t0
	d := &decider{c: c, delayed: map[VertexID]DelayedScaleDown{}}
	step := func(after time.Duration, next int) change {
		d.now = start.Add(after)
		return d.delayScaleDown(mid, change{current: 4, next: next, wanted: next, outside: true})
	}
	if ch := step(0, 3); !ch.none() {
		t.Fatalf("scaled at first trigger")
	}
	if ch := step(30*time.Minute, 2); !ch.none() {
		t.Fatalf("scaled within the interval")
	}
	if ch := step(60*time.Minute, 2); ch.next != 3 {
		t.Fatalf("at the interval's end: %d, want the highest recommendation 3", ch.next)
	}
	if ch := step(61*time.Minute, 2); ch.next != 2 {
		t.Fatalf("after the peak left the interval: %d, want 2", ch.next)
	}
}

func TestEvaluateIneffectiveScaleUp(t *testing.T) {
	// The last scale-up (1 → 2) expected 1000 → 2000; the rate only rose to 1050.
	loads := map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 952.381}, sink: {rate: 1000, busy: 100}}
	hist := map[VertexID][]ScalingRecord{mid: {{Time: t0.Add(-30 * time.Minute), CurrentParallelism: 1, NewParallelism: 2, Metrics: map[string]EvaluatedMetric{
		MetricTrueProcessingRate:     {Current: math.NaN(), Average: 1000},
		MetricExpectedProcessingRate: {Current: 2000, Average: math.NaN()},
	}}}}
	for _, enabled := range []bool{true, false} {
		cfg := testConfig()
		cfg.EffectivenessDetection = enabled
		s := fullState(samples(16, loads))
		s.History = hist
		r := evalAt(pipeline(1, 2, 1), s, cfg)
		if r.Scaled == enabled {
			t.Errorf("detection enabled=%v: scaled = %v", enabled, r.Scaled)
		}
		if len(r.Warnings) != 1 || r.Warnings[0].Reason != ReasonIneffectiveScaling ||
			!strings.HasPrefix(r.Warnings[0].Message, "Ineffective scaling detected for "+string(mid)+" (expected increase: 1000.0, actual increase 50.0") {
			t.Errorf("detection enabled=%v: warnings %+v", enabled, r.Warnings)
		}
	}
	// An effective last scale-up does not block.
	cfg := testConfig()
	cfg.EffectivenessDetection = true
	s := fullState(samples(16, map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 900}, sink: {rate: 1000, busy: 100}}))
	s.History = map[VertexID][]ScalingRecord{mid: {{Time: t0, CurrentParallelism: 1, NewParallelism: 2, Metrics: map[string]EvaluatedMetric{
		MetricTrueProcessingRate: {Average: 600}, MetricExpectedProcessingRate: {Current: 1200},
	}}}}
	if r := evalAt(pipeline(1, 2, 1), s, cfg); !r.Scaled || len(r.Warnings) != 0 {
		t.Errorf("effective scale-up blocked: %+v", r.Warnings)
	}
}

func TestEvaluateTargetRatePropagation(t *testing.T) {
	// The map emits two records per input; the source's lag grows by 100 records a second.
	s := samples(16, map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 500}, sink: {rate: 2000, busy: 100}})
	for i := range s {
		m := s[i].Vertices[mid]
		m.RecordsOutPerSecond = 2000
		s[i].Vertices[mid] = m
		so := s[i].Vertices[src]
		so.PendingRecords, so.HasPendingRecords = float64(1000+100*60*i), true
		s[i].Vertices[src] = so
	}
	r := evalAt(pipeline(1, 1, 1), fullState(s), testConfig())
	for id, want := range map[VertexID]float64{src: 1100, mid: 1100, sink: 2200} {
		if got := metric(t, r, id, MetricTargetDataRate); math.Abs(got-want) > 1e-6 {
			t.Errorf("TARGET_DATA_RATE of %s = %v, want %v", id, got, want)
		}
	}
	if got := metric(t, r, src, MetricLag); got != 91000 {
		t.Errorf("LAG = %v", got)
	}
	// 91000 pending over 1800 s of catch-up, doubled on the way to the sink.
	if got := metric(t, r, sink, MetricCatchUpDataRate); math.Abs(got-2*91000.0/1800) > 0.01 {
		t.Errorf("CATCH_UP_DATA_RATE of the sink = %v", got)
	}
}

func TestEvaluateRestartTime(t *testing.T) {
	loads := map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 500}, sink: {rate: 1000, busy: 100}}
	for _, c := range []struct {
		name string
		cfg  func(*Config)
		want float64
	}{
		// round(1000·restart/1800 + 1000/0.3)
		{name: "restart.time is caught up within catch-up.duration", cfg: func(*Config) {}, want: 3500},
		{name: "restart.time 0", cfg: func(c *Config) { c.RestartTime = 0 }, want: 3333},
		{name: "restart.time-tracking uses the observed restart", cfg: func(c *Config) { c.RestartTimeTracking = true }, want: 3367},
		{name: "restart.time-tracking.limit caps it", cfg: func(c *Config) { c.RestartTimeTracking = true; c.RestartTimeLimit = 30 * time.Second }, want: 3350},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			c.cfg(&cfg)
			s := fullState(samples(16, loads))
			s.RestartTimes = []RestartRecord{{Time: t0.Add(-2 * time.Hour), Duration: time.Minute}, {Time: t0.Add(-90 * time.Minute), Duration: 45 * time.Second}}
			r := evalAt(pipeline(1, 1, 1), s, cfg)
			if got := metric(t, r, mid, MetricScaleDownRateThreshold); got != c.want {
				t.Errorf("SCALE_DOWN_RATE_THRESHOLD = %v, want %v", got, c.want)
			}
		})
	}
}

func TestEvaluateRecordsRestartDuration(t *testing.T) {
	decided := t0.Add(-10 * time.Minute)
	base := State{
		JobStart:     decided.Add(90 * time.Second),
		History:      map[VertexID][]ScalingRecord{mid: {{Time: decided, CurrentParallelism: 1, NewParallelism: 2}}},
		RestartTimes: []RestartRecord{{Time: decided}},
	}
	r := Evaluate(t0, pipeline(1, 2, 1), base, testConfig())
	if got := r.State.RestartTimes[0].Duration; got != 90*time.Second {
		t.Errorf("restart duration = %v, want 90s", got)
	}
	if base.RestartTimes[0].Duration != 0 {
		t.Errorf("Evaluate modified its input")
	}
	// Not yet running with the decided parallelism: unknown.
	r = Evaluate(t0, pipeline(1, 1, 1), base, testConfig())
	if got := r.State.RestartTimes[0].Duration; got != 0 {
		t.Errorf("restart duration recorded before the rescale took effect: %v", got)
	}
}

func TestEvaluateTrimsHistory(t *testing.T) {
	cfg := testConfig()
	cfg.HistoryMaxCount = 2
	cfg.HistoryMaxAge = 2 * time.Hour
	s := fullState(samples(16, map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 900}, sink: {rate: 1000, busy: 100}}))
	s.History = map[VertexID][]ScalingRecord{
		mid:          {{Time: t0.Add(-3 * time.Hour), CurrentParallelism: 2, NewParallelism: 1}, {Time: t0.Add(-time.Hour), CurrentParallelism: 2, NewParallelism: 1}},
		"gone000000": {{Time: t0, CurrentParallelism: 1, NewParallelism: 2}},
	}
	r := evalAt(pipeline(1, 1, 1), s, cfg)
	h := r.State.History
	if _, ok := h["gone000000"]; ok {
		t.Errorf("history of a vertex no longer in the job kept")
	}
	if len(h[mid]) != 2 || !h[mid][0].Time.Equal(t0.Add(-time.Hour)) {
		t.Errorf("history of mid: %+v", h[mid])
	}
}

// TestEvaluateObservedTrueProcessingRate: a source catching up a lag while back-pressured 80 %
// of the time reads 666 records/s, so it could read 3333/s unthrottled; its busy time (13 ms/s)
// would claim 51000/s. The observed rate wins, and it outlives the catch-up.
func TestEvaluateObservedTrueProcessingRate(t *testing.T) {
	top := Topology{Vertices: []Vertex{{ID: src, Parallelism: 1, MaxParallelism: 128, Source: true}}}
	catchingUp := load{rate: 666, busy: 13, lag: 1e6, bp: 800}
	for _, c := range []struct {
		name string
		l    load
		cfg  func(*Config)
		want float64
	}{
		{name: "observed rate replaces an overstated busy-time rate", l: catchingUp, cfg: func(*Config) {}, want: 3330},
		{name: "no lag: no observation, busy-time rate", l: load{rate: 666, busy: 13, lag: 100, bp: 800}, cfg: func(*Config) {}, want: 51230.769},
		{name: "observed-true-processing-rate.lag-threshold above the lag", l: catchingUp, cfg: func(c *Config) { c.ObservedTPRLagThreshold = time.Hour }, want: 51230.769},
		{name: "observed-true-processing-rate.switch-threshold not exceeded", l: catchingUp, cfg: func(c *Config) { c.ObservedTPRSwitchThreshold = 100 }, want: 51230.769},
		{name: "observed-true-processing-rate.min-observations not met", l: catchingUp, cfg: func(c *Config) { c.ObservedTPRMinObservations = 17 }, want: 51230.769},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			c.cfg(&cfg)
			r := evalAt(top, fullState(samples(16, map[VertexID]load{src: c.l})), cfg)
			if got := metric(t, r, src, MetricTrueProcessingRate); math.Abs(got-c.want) > 0.01 {
				t.Errorf("TRUE_PROCESSING_RATE = %v, want %v", got, c.want)
			}
		})
	}

	// Measured during a catch-up, carried into later samples (as their average) and stored.
	s := samples(16, map[VertexID]load{src: catchingUp})
	later := samples(16, map[VertexID]load{src: {rate: 666, busy: 13}})
	for i := range later {
		later[i].Time = later[i].Time.Add(16 * time.Minute)
	}
	st := fullState(append(s, later...))
	in := st.Samples[20].Vertices[src]
	r := evalAt(top, st, testConfig())
	if in.hasObservedTPR || st.Samples[20].Vertices[src].hasObservedTPR {
		t.Fatalf("Evaluate modified its input samples")
	}
	last := r.State.Samples[31].Vertices[src]
	if !last.hasObservedTPR || math.Abs(last.observedTPR-3330) > 0.01 {
		t.Errorf("observed rate after the catch-up: %v (set %v)", last.observedTPR, last.hasObservedTPR)
	}
	data, err := r.State.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeState(data)
	if err != nil {
		t.Fatal(err)
	}
	if v := back.Samples[31].Vertices[src]; !v.hasObservedTPR || math.Abs(v.observedTPR-3330) > 0.01 {
		t.Errorf("observed rate not stored as OBSERVED_TPR: %+v", v)
	}
}
