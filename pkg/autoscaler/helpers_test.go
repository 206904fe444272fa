package autoscaler

import (
	"math"
	"testing"
	"time"
)

// Vertex ids of the test jobs.
const (
	src  VertexID = "bc764cd8ddf7a0cff126f51c16239658"
	mid  VertexID = "0a448493b4782967b150582570326227"
	sink VertexID = "ea632d67b7d595e5b851708ae9ad79d6"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// testConfig is upstream's defaults, enabled, with a band narrow enough to leave: scale up above
// 0.8 utilization, down below 0.3.
func testConfig() Config {
	c := DefaultConfig()
	c.Enabled = true
	c.TargetUtil, c.UtilMin, c.UtilMax = 0.5, 0.3, 0.8
	c.ScaleDownInterval = 0
	return c
}

// pipeline is source → mid (keyed) → sink, each at the given parallelism, max parallelism 128.
func pipeline(ps, pm, pk int) Topology {
	return Topology{Vertices: []Vertex{
		{ID: src, Name: "Source", Parallelism: ps, MaxParallelism: 128, Source: true},
		{ID: mid, Name: "Busy map", Parallelism: pm, MaxParallelism: 128, Inputs: []VertexID{src}, HashInput: true},
		{ID: sink, Name: "Sink", Parallelism: pk, MaxParallelism: 128, Inputs: []VertexID{mid}},
	}}
}

// load is one vertex's steady behaviour: input rate, busy and back-pressured ms per second
// (0: not reported), lag.
type load struct {
	rate, busy, lag, bp float64
}

// samples returns n samples a minute apart from t0 with steady per-vertex load; records out
// equal records in.
func samples(n int, loads map[VertexID]load) []Sample {
	out := make([]Sample, n)
	for i := range out {
		s := Sample{Time: t0.Add(time.Duration(i) * time.Minute), Vertices: map[VertexID]VertexSample{}, HeapUsedRatio: math.NaN(), GCTimeMsPerSecond: math.NaN()}
		for id, l := range loads {
			bp := l.bp
			if bp == 0 {
				bp = math.NaN()
			}
			s.Vertices[id] = VertexSample{BusyTimeMsPerSecond: l.busy, BackPressuredTimeMsPerSecond: bp, RecordsInPerSecond: l.rate, RecordsOutPerSecond: l.rate, PendingRecords: l.lag, HasPendingRecords: l.lag > 0}
		}
		out[i] = s
	}
	return out
}

// fullState is a state with the given samples (16 a minute apart fill the default window).
func fullState(s []Sample) State {
	return State{Samples: s, JobStart: t0.Add(-time.Hour)}
}

// evalAt evaluates right after the last sample.
func evalAt(t Topology, s State, c Config) Result {
	return Evaluate(s.Samples[len(s.Samples)-1].Time, t, s, c)
}

func newParallelism(t *testing.T, r Result, id VertexID) int {
	t.Helper()
	for _, v := range r.Vertices {
		if v.ID == id {
			return v.New
		}
	}
	t.Fatalf("vertex %s not in result %+v", id, r.Vertices)
	return 0
}

func metric(t *testing.T, r Result, id VertexID, name string) float64 {
	t.Helper()
	for _, v := range r.Vertices {
		if v.ID == id {
			return v.Metrics[name]
		}
	}
	t.Fatalf("vertex %s not in result", id)
	return 0
}
