package flinkmetrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/autoscaler/flinkmetrics"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/test/flinkcluster"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// recordEnv, when "1", makes TestRealFlinkLoadGen run a longer low → high → low schedule and
// write what it collected to ../testdata/recorded-<version>.json for the autoscaler's replay test.
const recordEnv = "RECORD_AUTOSCALER_SERIES"

// recording is the autoscaler's replay format (pkg/autoscaler/replay_test.go): the job graph,
// then one observation per sample. Gauges Flink did not report are null, as JSON has no NaN.
// The expected decisions are left to whoever moves a recording into testdata/replay/.
type recording struct {
	Description  string                `json:"description"`
	FlinkConf    map[string]string     `json:"flinkConf"`
	Vertices     []recordedVertex      `json:"vertices"`
	Observations []recordedObservation `json:"observations"`
}

type recordedVertex struct {
	ID               autoscaler.VertexID   `json:"id"`
	Name             string                `json:"name,omitempty"`
	MaxParallelism   int                   `json:"maxParallelism"`
	Inputs           []autoscaler.VertexID `json:"inputs,omitempty"`
	Source           bool                  `json:"source,omitempty"`
	SourcePartitions int                   `json:"sourcePartitions,omitempty"`
	HashInput        bool                  `json:"hashInput,omitempty"`
}

type recordedObservation struct {
	Time              time.Time                                  `json:"time"`
	JobStart          time.Time                                  `json:"jobStart"`
	Parallelism       map[autoscaler.VertexID]int                `json:"parallelism"`
	Vertices          map[autoscaler.VertexID]recordedVertexData `json:"vertices"`
	HeapUsedRatio     *float64                                   `json:"heapUsedRatio,omitempty"`
	GCTimeMsPerSecond *float64                                   `json:"gcTimeMsPerSecond,omitempty"`
}

type recordedVertexData struct {
	Busy            *float64 `json:"busyTimeMsPerSecond"`
	BackPressured   *float64 `json:"backPressuredTimeMsPerSecond,omitempty"`
	In              *float64 `json:"recordsInPerSecond"`
	Out             *float64 `json:"recordsOutPerSecond"`
	Pending         *float64 `json:"pendingRecords,omitempty"`
	NumRecordsIn    *float64 `json:"numRecordsIn,omitempty"`
	NumRecordsOut   *float64 `json:"numRecordsOut,omitempty"`
	AccumulatedBusy *float64 `json:"accumulatedBusyTimeMs,omitempty"`
}

func orNull(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func newRecording(version string, args []string, topo autoscaler.Topology, jobStart time.Time, samples []autoscaler.Sample) recording {
	r := recording{
		Description: fmt.Sprintf("Recorded on Flink %s by TestRealFlinkLoadGen (%s=1): the load generator with %s, "+
			"every vertex at parallelism 1 throughout (nothing rescaled it).", version, recordEnv, strings.Join(args, " ")),
		// Windows short enough for the recording's few minutes.
		FlinkConf: map[string]string{"job.autoscaler.enabled": "true", "job.autoscaler.stabilization.interval": "15 s",
			"job.autoscaler.metrics.window": "30 s", "job.autoscaler.restart.time": "10 s", "job.autoscaler.catch-up.duration": "30 s"},
	}
	par := map[autoscaler.VertexID]int{}
	for _, v := range topo.Vertices {
		r.Vertices = append(r.Vertices, recordedVertex{ID: v.ID, Name: v.Name, MaxParallelism: v.MaxParallelism, Inputs: v.Inputs,
			Source: v.Source, SourcePartitions: v.SourcePartitions, HashInput: v.HashInput})
		par[v.ID] = v.Parallelism
	}
	for _, s := range samples {
		o := recordedObservation{Time: s.Time.UTC().Round(time.Millisecond), JobStart: jobStart.UTC(), Parallelism: par,
			Vertices: map[autoscaler.VertexID]recordedVertexData{}, HeapUsedRatio: orNull(s.HeapUsedRatio), GCTimeMsPerSecond: orNull(s.GCTimeMsPerSecond)}
		for id, v := range s.Vertices {
			d := recordedVertexData{Busy: orNull(v.BusyTimeMsPerSecond), BackPressured: orNull(v.BackPressuredTimeMsPerSecond),
				In: orNull(v.RecordsInPerSecond), Out: orNull(v.RecordsOutPerSecond)}
			if v.HasPendingRecords {
				d.Pending = orNull(v.PendingRecords)
			}
			if v.HasAccumulated {
				d.NumRecordsIn, d.NumRecordsOut, d.AccumulatedBusy = orNull(v.NumRecordsIn), orNull(v.NumRecordsOut), orNull(v.AccumulatedBusyTimeMs)
			}
			o.Vertices[id] = d
		}
		r.Observations = append(r.Observations, o)
	}
	return r
}

// TestRealFlinkLoadGen runs the load generator (test/loadgen, `make loadgen`) on real Flink
// of every version in FLINK_VERSIONS and collects its metrics with the Source, as the
// autoscaler does: the topology is the job's three vertices with their inputs, the source
// reports its input rate and lag, and the busy vertex's busy time follows the scheduled rate
// up when it rises fifteenfold.
func TestRealFlinkLoadGen(t *testing.T) {
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	jar := filepath.Join(root, "bin", "loadgen", "loadgen.jar")
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("the load generator is not built (run `make loadgen`): %v", err)
	}
	record := os.Getenv(recordEnv) == "1"
	for _, version := range flinkcluster.Versions(t) {
		t.Run(version, func(t *testing.T) {
			dist := flinkcluster.DistFor(t, version)
			cluster := flinkcluster.StartSession(t, dist, flinkcluster.Options{})
			testLoadGen(t, cluster, jar, record)
		})
	}
}

// The schedule: low, then fifteen times as much. At 4 ms per record the busy vertex is busy
// about 40 ms/s while low and 600 ms/s while high at parallelism 1. The time is parked rather than
// spun (--work park), and records are few: on a loaded 2-core machine a spinning task and the
// per-record overhead, stretched by the load, would saturate the vertex in both phases.
const (
	lowRate, highRate = 10, 150
	cpuMicros         = 4000
)

func testLoadGen(t *testing.T, cluster *flinkcluster.Cluster, jar string, record bool) {
	ctx := context.Background()
	c, err := flink.New(flink.Options{URL: cluster.RESTURL, Timeout: 30 * time.Second})
	require.NoError(t, err)
	defer c.Close()

	low, high, tail := 20*time.Second, 40*time.Second, time.Duration(0)
	if record {
		low, high, tail = 40*time.Second, 90*time.Second, 60*time.Second
	}
	schedule := []string{rate(lowRate, low), rate(highRate, high)}
	if tail > 0 {
		schedule = append(schedule, rate(lowRate, tail))
	}
	args := []string{"--schedule", strings.Join(schedule, ","), "--cpu-micros-per-record", fmt.Sprint(cpuMicros), "--work", "park"}

	f, err := os.Open(jar)
	require.NoError(t, err)
	defer f.Close()
	jarID, err := c.WithTimeout(2*time.Minute).UploadJar(ctx, "loadgen.jar", f)
	require.NoError(t, err)
	jobID := flink.NewTriggerID()
	_, err = c.RunJar(ctx, jarID, flink.RunJarRequest{JobID: jobID, Parallelism: 1, Args: args})
	require.NoError(t, err)
	wait.For(t, 60*time.Second, "the load generator's tasks never all ran", func() bool {
		d, err := c.JobDetails(ctx, jobID)
		return err == nil && d.State == flink.JobRunning && d.AllTasksRunning()
	})
	// The schedule starts when the source's reader starts; this is close enough to tell the
	// phases apart, as samples near a phase change are not judged.
	started := time.Now()

	src := flinkmetrics.New(c)
	topo, err := src.Topology(ctx, jobID)
	require.NoError(t, err)
	source, busy, sink := vertexNamed(t, topo, "loadgen-source"), vertexNamed(t, topo, "busy-map"), vertexNamed(t, topo, "discard-sink")
	require.Len(t, topo.Vertices, 3)
	assert.True(t, source.Source)
	assert.Empty(t, source.Inputs)
	assert.Equal(t, []autoscaler.VertexID{source.ID}, busy.Inputs)
	assert.True(t, busy.HashInput, "the busy vertex is keyed")
	assert.Equal(t, []autoscaler.VertexID{busy.ID}, sink.Inputs)
	assert.False(t, sink.HashInput, "the sink's input is rebalanced")
	for _, v := range topo.Vertices {
		assert.Equal(t, 1, v.Parallelism, v.Name)
		assert.Equal(t, 128, v.MaxParallelism, v.Name)
	}

	// Flink's busyTimeMsPerSecond and rate gauges average over a minute (and busy time starts
	// at 1000 ms/s on a new task), so they lag a change of load by that much; the vertex's
	// accumulated busy time, Flink's same measurement summed, tells each interval's busy time
	// per second at once.
	var samples []autoscaler.Sample
	var lowBusy, highBusy []float64
	end := started.Add(low + high + tail)
	for time.Now().Before(end) {
		time.Sleep(1500 * time.Millisecond)
		s, err := src.Sample(ctx, jobID, topo)
		require.NoError(t, err)
		b := s.Vertices[busy.ID]
		elapsed := s.Time.Sub(started)
		busyRate := math.NaN()
		if n := len(samples); n > 0 {
			prev := samples[n-1]
			busyRate = (b.AccumulatedBusyTimeMs - prev.Vertices[busy.ID].AccumulatedBusyTimeMs) / s.Time.Sub(prev.Time).Seconds()
		}
		samples = append(samples, s)
		t.Logf("%5.1fs busy %6.1f ms/s (accumulated: %6.1f ms/s), in %7.1f/s (source %7.1f/s, pending %6.0f), heap %.2f, gc %.1f ms/s",
			elapsed.Seconds(), b.BusyTimeMsPerSecond, busyRate, b.RecordsInPerSecond, s.Vertices[source.ID].RecordsInPerSecond,
			s.Vertices[source.ID].PendingRecords, s.HeapUsedRatio, s.GCTimeMsPerSecond)
		switch {
		case elapsed > 5*time.Second && elapsed < low:
			lowBusy = append(lowBusy, busyRate)
		case elapsed > low+4*time.Second && elapsed < low+high:
			highBusy = append(highBusy, busyRate)
			// Enough seen: stop early unless recording the whole schedule.
			if !record && len(highBusy) >= 3 && risen(lowBusy, highBusy) {
				end = time.Now()
			}
		}
	}
	require.NotEmpty(t, lowBusy, "no sample while the load was low")
	require.NotEmpty(t, highBusy, "no sample while the load was high")
	assert.True(t, risen(lowBusy, highBusy),
		"the busy vertex's busy time per second rose with the rate (low %v, high %v)", lowBusy, highBusy)

	last := samples[len(samples)-1]
	srcSample := last.Vertices[source.ID]
	assert.True(t, srcSample.HasPendingRecords, "the source reports pendingRecords")
	assert.GreaterOrEqual(t, srcSample.PendingRecords, 0.0)
	assert.Greater(t, srcSample.RecordsInPerSecond, 0.0, "the source's input rate")
	assert.True(t, srcSample.HasAccumulated, "the source's counters")
	assert.Positive(t, srcSample.NumRecordsIn, "the source's numRecordsIn")
	busySample := last.Vertices[busy.ID]
	assert.True(t, busySample.HasAccumulated, "the busy vertex's counters")
	assert.Positive(t, busySample.NumRecordsIn)
	assert.Positive(t, busySample.AccumulatedBusyTimeMs)
	assert.Greater(t, last.HeapUsedRatio, 0.0)
	assert.Less(t, last.HeapUsedRatio, 1.0)

	if record {
		d, err := c.JobDetails(ctx, jobID)
		require.NoError(t, err)
		jobStart := time.UnixMilli(d.Timestamps[flink.JobRunning])
		writeRecording(t, cluster.Version, newRecording(cluster.Version, args, topo, jobStart, samples))
	}
	require.NoError(t, c.CancelJob(ctx, jobID))
}

// risen reports whether the busy vertex's busy time per second rose with the rate: the
// last three intervals' at least three times the low phase's, and at least half of what the
// high rate costs.
func risen(low, high []float64) bool {
	recent := mean(high[max(0, len(high)-3):])
	return recent > 3*math.Max(mean(low), 10) && recent > highRate*cpuMicros/1000/2
}

func rate(perSecond int, d time.Duration) string {
	return fmt.Sprintf("%dx%ds", perSecond, int(d.Seconds()))
}

func vertexNamed(t *testing.T, topo autoscaler.Topology, name string) autoscaler.Vertex {
	t.Helper()
	for _, v := range topo.Vertices {
		if strings.Contains(v.Name, name) {
			return v
		}
	}
	t.Fatalf("no vertex named %q in %+v", name, topo.Vertices)
	return autoscaler.Vertex{}
}

// mean is the mean of the numbers of xs (NaN when there are none).
func mean(xs []float64) float64 {
	s, n := 0.0, 0
	for _, x := range xs {
		if !math.IsNaN(x) {
			s, n = s+x, n+1
		}
	}
	return s / float64(n)
}

func writeRecording(t *testing.T, version string, r recording) {
	t.Helper()
	data, err := json.MarshalIndent(r, "", " ")
	require.NoError(t, err)
	path := filepath.Join("..", "testdata", "recorded-"+version+".json")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, append(data, '\n'), 0o644))
	t.Logf("recorded %d samples to %s", len(r.Observations), path)
}
