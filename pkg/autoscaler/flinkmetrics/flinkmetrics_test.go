package flinkmetrics_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/autoscaler/flinkmetrics"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/test/fakeflink"
)

const (
	job  = "0123456789abcdef0123456789abcdef"
	src  = "bc764cd8ddf7a0cff126f51c16239658"
	busy = "0a448493b4782967b150582570326227"
	sink = "ea632d67b7d595e5b851708ae9ad79d6"
)

// loadGenGraph is the load generator's graph: source → (hash) → busy map → (rebalance) → sink.
func loadGenGraph(busyParallelism int) []fakeflink.GraphVertex {
	return []fakeflink.GraphVertex{
		{ID: src, Name: "Source: loadgen-source", Parallelism: 1, MaxParallelism: 128},
		{ID: busy, Name: "busy-map", Parallelism: busyParallelism, MaxParallelism: 128, Inputs: []string{src}, Keyed: true},
		{ID: sink, Name: "discard-sink: Writer", Parallelism: 1, MaxParallelism: 128, Inputs: []string{busy}},
	}
}

func newSource(t *testing.T) (*fakeflink.Server, *flinkmetrics.Source, time.Time) {
	t.Helper()
	fake := fakeflink.New(t)
	fake.SetJob(job, "RUNNING")
	fake.SetJobGraph(job, loadGenGraph(2))
	c, err := flink.New(flink.Options{URL: fake.URL})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	return fake, flinkmetrics.New(c).WithClock(func() time.Time { return now }), now
}

func TestTopology(t *testing.T) {
	fake, s, _ := newSource(t)
	topo, err := s.Topology(context.Background(), job)
	require.NoError(t, err)
	assert.Equal(t, autoscaler.Topology{Vertices: []autoscaler.Vertex{
		{ID: src, Name: "Source: loadgen-source", Parallelism: 1, MaxParallelism: 128, Source: true},
		{ID: busy, Name: "busy-map", Parallelism: 2, MaxParallelism: 128, Inputs: []autoscaler.VertexID{src}, HashInput: true},
		{ID: sink, Name: "discard-sink: Writer", Parallelism: 1, MaxParallelism: 128, Inputs: []autoscaler.VertexID{busy}},
	}}, topo)

	// An in-place rescale through the adaptive scheduler shows in the next topology.
	fake.SetVertices(job, map[string]int{src: 1, busy: 4, sink: 1})
	topo, err = s.Topology(context.Background(), job)
	require.NoError(t, err)
	assert.Equal(t, 4, topo.Vertices[1].Parallelism)
}

func TestTopologyOfAnUnknownJobIsNotFound(t *testing.T) {
	_, s, _ := newSource(t)
	_, err := s.Topology(context.Background(), "ffffffffffffffffffffffffffffffff")
	require.Error(t, err)
	assert.True(t, flink.IsNotFound(err), "%v", err)
}

// A vertex the plan does not know would get no inputs and pass for a source.
func TestTopologyRefusesAVertexMissingFromThePlan(t *testing.T) {
	d := &flink.JobDetails{ID: job, Vertices: []flink.JobVertex{{ID: src, Name: "s", Parallelism: 1}},
		Plan: []byte(`{"nodes":[{"id":"` + busy + `","parallelism":1}]}`)}
	_, err := flinkmetrics.TopologyOf(d)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not in the job's plan")

	d.Plan = []byte(`{"nodes":[{"id":"` + src + `","parallelism":1}]}`)
	d.Vertices[0].Parallelism = 0
	_, err = flinkmetrics.TopologyOf(d)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "parallelism 0")
}

func TestSample(t *testing.T) {
	fake, s, now := newSource(t)
	fake.SetVertexMetrics(job, src, map[string]fakeflink.Aggregate{
		"busyTimeMsPerSecond":                          fakeflink.Uniform(20, 1),
		"backPressuredTimeMsPerSecond":                 fakeflink.Uniform(300, 1),
		"numRecordsInPerSecond":                        fakeflink.Uniform(0, 1),
		"numRecordsOutPerSecond":                       fakeflink.Uniform(1000, 1),
		"Source__loadgen-source.numRecordsInPerSecond": fakeflink.Uniform(990, 1),
		"Source__loadgen-source.numRecordsIn":          fakeflink.Uniform(50000, 1),
		"Source__loadgen-source.pendingRecords":        fakeflink.Uniform(1234, 1),
	})
	fake.SetVertexCounters(job, src, 0, 49000, 800)
	fake.SetVertexMetrics(job, busy, map[string]fakeflink.Aggregate{
		"busyTimeMsPerSecond":          {Min: 400, Max: 700, Avg: 550, Sum: 1100},
		"backPressuredTimeMsPerSecond": fakeflink.Uniform(0, 2),
		"numRecordsInPerSecond":        fakeflink.Uniform(500, 2),
		"numRecordsOutPerSecond":       fakeflink.Uniform(500, 2),
	})
	fake.SetVertexCounters(job, busy, 48000, 48000, 52000)
	fake.SetVertexMetrics(job, sink, map[string]fakeflink.Aggregate{
		"busyTimeMsPerSecond":   fakeflink.Uniform(math.NaN(), 1),
		"numRecordsInPerSecond": fakeflink.Uniform(1000, 1),
	})
	fake.SetVertexCounters(job, sink, 47000, 0, math.NaN())
	fake.SetTaskManagerMetrics(map[string]fakeflink.Aggregate{
		"Status.JVM.Memory.Heap.Used": fakeflink.Uniform(100, 2), "Status.JVM.Memory.Heap.Max": fakeflink.Uniform(400, 2),
	})

	topo, err := s.Topology(context.Background(), job)
	require.NoError(t, err)
	got, err := s.Sample(context.Background(), job, topo)
	require.NoError(t, err)

	assert.Equal(t, now, got.Time)
	assert.Equal(t, autoscaler.VertexSample{BusyTimeMsPerSecond: 20, BackPressuredTimeMsPerSecond: 300,
		RecordsInPerSecond: 990, RecordsOutPerSecond: 1000, PendingRecords: 1234, HasPendingRecords: true,
		NumRecordsIn: 50000, NumRecordsOut: 49000, AccumulatedBusyTimeMs: 800, HasAccumulated: true}, got.Vertices[src],
		"a source's input is its operator's numRecordsIn")
	assert.Equal(t, autoscaler.VertexSample{BusyTimeMsPerSecond: 700, BackPressuredTimeMsPerSecond: 0,
		RecordsInPerSecond: 1000, RecordsOutPerSecond: 1000,
		NumRecordsIn: 48000, NumRecordsOut: 48000, AccumulatedBusyTimeMs: 52000, HasAccumulated: true}, got.Vertices[busy],
		"busy time is the busiest subtask's, rates the sum")

	sinkSample := got.Vertices[sink]
	assert.True(t, math.IsNaN(sinkSample.BusyTimeMsPerSecond), "NaN busy time stays NaN")
	assert.True(t, math.IsNaN(sinkSample.BackPressuredTimeMsPerSecond), "an unreported metric is NaN")
	assert.False(t, sinkSample.HasAccumulated, "a NaN accumulated busy time makes the counters unusable")
	assert.False(t, sinkSample.HasPendingRecords)

	assert.Equal(t, 0.25, got.HeapUsedRatio)
	assert.True(t, math.IsNaN(got.GCTimeMsPerSecond), "Flink before 1.19 has no GC time metric")
}

// A source whose reader does not count its input (numRecordsIn stays 0) is measured by its
// output, and one without pendingRecords reports no lag.
func TestSampleOfASourceThatDoesNotCountItsInput(t *testing.T) {
	fake, s, _ := newSource(t)
	fake.SetVertexMetrics(job, src, map[string]fakeflink.Aggregate{
		"busyTimeMsPerSecond":                           fakeflink.Uniform(20, 1),
		"Source__loadgen-source.numRecordsInPerSecond":  fakeflink.Uniform(0, 1),
		"Source__loadgen-source.numRecordsOutPerSecond": fakeflink.Uniform(750, 1),
		"Source__loadgen-source.numRecordsIn":           fakeflink.Uniform(0, 1),
		"Source__loadgen-source.numRecordsOut":          fakeflink.Uniform(9000, 1),
	})
	fake.SetVertexCounters(job, src, 0, 9000, 100)
	topo, err := s.Topology(context.Background(), job)
	require.NoError(t, err)
	got, err := s.Sample(context.Background(), job, topo)
	require.NoError(t, err)
	v := got.Vertices[src]
	assert.Equal(t, 750.0, v.RecordsInPerSecond)
	assert.Equal(t, 9000.0, v.NumRecordsIn)
	assert.True(t, v.HasAccumulated)
	assert.False(t, v.HasPendingRecords)
}

func TestSampleOfAVanishedVertexFails(t *testing.T) {
	fake, s, _ := newSource(t)
	topo, err := s.Topology(context.Background(), job)
	require.NoError(t, err)
	fake.SetJob(job, "")
	_, err = s.Sample(context.Background(), job, topo)
	require.Error(t, err)
	assert.True(t, flink.IsNotFound(err), "%v", err)
}
