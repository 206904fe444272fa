package autoscaler

import (
	"maps"
	"math"
	"testing"
	"time"
)

func sampleAt(at time.Time) Sample {
	return Sample{Time: at, Vertices: map[VertexID]VertexSample{src: {BusyTimeMsPerSecond: 100, RecordsInPerSecond: 10}}, HeapUsedRatio: math.NaN(), GCTimeMsPerSecond: math.NaN()}
}

func TestObserveStabilizationAndWindow(t *testing.T) {
	c := testConfig()
	c.Stabilization, c.MetricsWindow = 5*time.Minute, 10*time.Minute
	start := t0
	s := State{JobStart: start}
	observe := func(after time.Duration) {
		at := start.Add(after)
		s = Observe(at, sampleAt(at), s, c)
	}
	for m := 0; m < 5; m++ {
		observe(time.Duration(m) * time.Minute)
	}
	if len(s.Samples) != 0 {
		t.Fatalf("stabilization.interval: kept %d samples taken while stabilizing", len(s.Samples))
	}
	for m := 5; m < 15; m++ {
		observe(time.Duration(m) * time.Minute)
	}
	if windowFull(start.Add(14*time.Minute), s.Samples, c) || len(s.Samples) != 10 {
		t.Fatalf("metrics.window: full after 9 minutes of samples (%d)", len(s.Samples))
	}
	if r := Evaluate(start.Add(14*time.Minute), pipeline(1, 1, 1), s, c); r.Reason != "" {
		t.Fatalf("decided before the window was full")
	}
	observe(15 * time.Minute)
	if !windowFull(start.Add(15*time.Minute), s.Samples, c) || len(s.Samples) != 11 || !s.Samples[0].Time.Equal(start.Add(5*time.Minute)) {
		t.Fatalf("window not full at 10 minutes: %d samples from %v", len(s.Samples), s.Samples[0].Time)
	}
	observe(16 * time.Minute)
	if len(s.Samples) != 11 || !s.Samples[0].Time.Equal(start.Add(6*time.Minute)) {
		t.Fatalf("window not trimmed: %d samples from %v", len(s.Samples), s.Samples[0].Time)
	}

	// An out-of-order or repeated sample is ignored.
	before := len(s.Samples)
	s = Observe(start.Add(16*time.Minute), sampleAt(start.Add(16*time.Minute)), s, c)
	if len(s.Samples) != before {
		t.Errorf("repeated sample appended")
	}

	// A restart (new RUNNING time) starts over.
	s = s.WithJobStart(start.Add(20 * time.Minute))
	if len(s.Samples) != 0 {
		t.Fatalf("restart kept %d samples", len(s.Samples))
	}
	// A stale RUNNING time does not move the start back.
	s = s.WithJobStart(start)
	if !s.JobStart.Equal(start.Add(20 * time.Minute)) {
		t.Errorf("job start moved back to %v", s.JobStart)
	}
}

func TestObserveDoesNotModifyItsInput(t *testing.T) {
	c := testConfig()
	c.Stabilization, c.MetricsWindow = 0, time.Minute
	in := State{JobStart: t0, Samples: make([]Sample, 0, 10)}
	in.Samples = append(in.Samples, sampleAt(t0))
	a := Observe(t0.Add(time.Second), sampleAt(t0.Add(time.Second)), in, c)
	b := Observe(t0.Add(2*time.Second), sampleAt(t0.Add(2*time.Second)), in, c)
	if len(in.Samples) != 1 || !a.Samples[1].Time.Equal(t0.Add(time.Second)) || !b.Samples[1].Time.Equal(t0.Add(2*time.Second)) {
		t.Errorf("Observe shares its input's samples")
	}
}

func TestEvaluateDoesNotModifyItsInput(t *testing.T) {
	loads := map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 900}, sink: {rate: 1000, busy: 100}}
	c := testConfig()
	c.ScaleDownInterval = time.Hour
	in := fullState(samples(16, loads))
	in.History = map[VertexID][]ScalingRecord{mid: {{Time: t0, CurrentParallelism: 2, NewParallelism: 1}}}
	in.Overrides = map[VertexID]int{mid: 1}
	in.DelayedScaleDown = map[VertexID]DelayedScaleDown{src: {FirstTriggered: t0, Recommended: []RecommendedParallelism{{Time: t0, Parallelism: 1}}}}
	hist, over := len(in.History[mid]), maps.Clone(in.Overrides)
	r := evalAt(pipeline(1, 1, 1), in, c)
	if !r.Scaled {
		t.Fatal("expected a scale-up")
	}
	if len(in.History[mid]) != hist || !maps.Equal(in.Overrides, over) || len(in.Samples) != 16 || len(in.DelayedScaleDown) != 1 {
		t.Errorf("Evaluate modified its input state")
	}
}

func TestWindowRates(t *testing.T) {
	s := samples(3, map[VertexID]load{src: {rate: 100, busy: 10}})
	// Counters: 0, 6000, 18000 over two minutes → 150/s; gauges say 100.
	for i, n := range []float64{0, 6000, 18000} {
		v := s[i].Vertices[src]
		v.NumRecordsIn, v.HasAccumulated = n, true
		s[i].Vertices[src] = v
	}
	if got := window(s).inputRate(src); got != 150 {
		t.Errorf("rate from counters = %v", got)
	}
	v := s[1].Vertices[src]
	v.HasAccumulated = false
	s[1].Vertices[src] = v
	if got := window(s).inputRate(src); got != 100 {
		t.Errorf("with a sample lacking counters the gauges count: %v", got)
	}
}

// TestWindowFullSurvivesStorage: with samples further apart than the window's edge, the sample
// anchoring the window's start is kept, so a stored and reloaded state still knows its window is
// full (upstream decides on the first observation after a restart of the operator too).
func TestWindowFullSurvivesStorage(t *testing.T) {
	c := testConfig()
	c.Stabilization, c.MetricsWindow = 0, 10*time.Minute
	s := State{JobStart: t0}
	for _, m := range []int{0, 4, 8, 12, 16} {
		at := t0.Add(time.Duration(m) * time.Minute)
		s = Observe(at, sampleAt(at), s, c)
	}
	now := t0.Add(16 * time.Minute)
	if !s.Samples[0].Time.Equal(t0.Add(4*time.Minute)) || !windowFull(now, s.Samples, c) {
		t.Fatalf("window from %v, full %v", s.Samples[0].Time, windowFull(now, s.Samples, c))
	}
	data, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeState(data)
	if err != nil {
		t.Fatal(err)
	}
	if !windowFull(now, back.Samples, c) {
		t.Errorf("reloaded window is not full")
	}
}
