package autoscaler

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A recorded metric series (testdata/replay/*.json): the job graph, then one observation per
// autoscaler cycle as the operator saw it: the job's RUNNING time, each vertex's parallelism, and
// the collected sample. expectedDecisions are the rescales the series must produce, in order;
// expectReports asks for at least one ScalingReport (recommend-only series).
type replayFile struct {
	Description       string              `json:"description"`
	FlinkConf         map[string]string   `json:"flinkConf"`
	Vertices          []replayVertex      `json:"vertices"`
	Observations      []replayObservation `json:"observations,omitempty"`
	ExpectedDecisions []replayDecision    `json:"expectedDecisions"`
	ExpectReports     bool                `json:"expectReports,omitempty"`
}

type replayVertex struct {
	ID               VertexID   `json:"id"`
	Name             string     `json:"name,omitempty"`
	MaxParallelism   int        `json:"maxParallelism"`
	Inputs           []VertexID `json:"inputs,omitempty"`
	Source           bool       `json:"source,omitempty"`
	SourcePartitions int        `json:"sourcePartitions,omitempty"`
	HashInput        bool       `json:"hashInput,omitempty"`
}

type replayObservation struct {
	Time              time.Time                     `json:"time"`
	JobStart          time.Time                     `json:"jobStart"`
	Parallelism       map[VertexID]int              `json:"parallelism"`
	Vertices          map[VertexID]replayVertexData `json:"vertices"`
	HeapUsedRatio     *float64                      `json:"heapUsedRatio,omitempty"`
	GCTimeMsPerSecond *float64                      `json:"gcTimeMsPerSecond,omitempty"`
}

// replayVertexData is a VertexSample; absent gauges are null (JSON has no NaN).
type replayVertexData struct {
	Busy            *float64 `json:"busyTimeMsPerSecond"`
	BackPressured   *float64 `json:"backPressuredTimeMsPerSecond,omitempty"`
	In              *float64 `json:"recordsInPerSecond"`
	Out             *float64 `json:"recordsOutPerSecond"`
	Pending         *float64 `json:"pendingRecords,omitempty"`
	NumRecordsIn    *float64 `json:"numRecordsIn,omitempty"`
	NumRecordsOut   *float64 `json:"numRecordsOut,omitempty"`
	AccumulatedBusy *float64 `json:"accumulatedBusyTimeMs,omitempty"`
}

type replayDecision struct {
	Time      time.Time        `json:"time"`
	Overrides map[VertexID]int `json:"overrides"`
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func ptr(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

func (o replayObservation) sample() Sample {
	s := Sample{Time: o.Time, Vertices: map[VertexID]VertexSample{}, HeapUsedRatio: orNaN(o.HeapUsedRatio), GCTimeMsPerSecond: orNaN(o.GCTimeMsPerSecond)}
	for id, d := range o.Vertices {
		v := VertexSample{
			BusyTimeMsPerSecond: orNaN(d.Busy), BackPressuredTimeMsPerSecond: orNaN(d.BackPressured),
			RecordsInPerSecond: orNaN(d.In), RecordsOutPerSecond: orNaN(d.Out),
			PendingRecords: orNaN(d.Pending), HasPendingRecords: d.Pending != nil,
		}
		if d.NumRecordsIn != nil {
			v.HasAccumulated = true
			v.NumRecordsIn, v.NumRecordsOut, v.AccumulatedBusyTimeMs = *d.NumRecordsIn, orNaN(d.NumRecordsOut), orNaN(d.AccumulatedBusy)
		}
		s.Vertices[id] = v
	}
	return s
}

func (f replayFile) topology(parallelism map[VertexID]int) Topology {
	var t Topology
	for _, v := range f.Vertices {
		t.Vertices = append(t.Vertices, Vertex{ID: v.ID, Name: v.Name, Parallelism: parallelism[v.ID], MaxParallelism: v.MaxParallelism,
			Inputs: v.Inputs, Source: v.Source, SourcePartitions: v.SourcePartitions, HashInput: v.HashInput})
	}
	return t
}

// replay runs the series through Observe and Evaluate as the operator does each cycle, storing
// and loading the state in between like the ConfigMap does, and returns the decisions and
// whether any ScalingReport was produced.
func replay(t *testing.T, f replayFile) ([]replayDecision, bool) {
	t.Helper()
	cfg, err := ParseConfig(f.FlinkConf)
	if err != nil {
		t.Fatal(err)
	}
	var decisions []replayDecision
	reported := false
	state := State{}
	for _, o := range f.Observations {
		state = state.WithJobStart(o.JobStart)
		state = Observe(o.Time, o.sample(), state, cfg)
		r := Evaluate(o.Time, f.topology(o.Parallelism), state, cfg)
		if r.Scaled {
			decisions = append(decisions, replayDecision{Time: o.Time, Overrides: r.Overrides})
		}
		reported = reported || r.Reason == ReasonScalingReport
		data, err := r.State.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if state, err = DecodeState(data); err != nil {
			t.Fatalf("%v: reloading the state: %v", o.Time, err)
		}
	}
	return decisions, reported
}

func loadReplay(t *testing.T, path string) replayFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f replayFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

// TestReplay replays every recorded series and checks its decisions.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "replay", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no replay series: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f := loadReplay(t, path)
			got, reported := replay(t, f)
			if len(got) != len(f.ExpectedDecisions) {
				t.Fatalf("%d decisions %v, want %d %v", len(got), got, len(f.ExpectedDecisions), f.ExpectedDecisions)
			}
			for i, want := range f.ExpectedDecisions {
				if !got[i].Time.Equal(want.Time) || !maps.Equal(got[i].Overrides, want.Overrides) {
					t.Errorf("decision %d: %v %v, want %v %v", i, got[i].Time, got[i].Overrides, want.Time, want.Overrides)
				}
			}
			if f.ExpectReports && !reported {
				t.Errorf("no ScalingReport")
			}
			if filepath.Base(path) == "synthetic-low-high-low.json" {
				checkSyntheticLoadShape(t, got)
			}
		})
	}
}

// checkSyntheticLoadShape checks what the synthetic low → high → low series must show beyond
// its exact decisions: the busy vertex goes up while the load is high, comes down after it
// falls, and nothing else moves.
func checkSyntheticLoadShape(t *testing.T, got []replayDecision) {
	if len(got) < 2 {
		t.Fatalf("decisions %v", got)
	}
	peak := t0.Add(20 * time.Minute)
	if first := got[0]; first.Overrides[mid] <= 1 || first.Time.Before(peak) || first.Time.After(peak.Add(15*time.Minute)) {
		t.Errorf("first decision %v: want the map scaled up within 15 minutes of the load rising", first)
	}
	if last := got[len(got)-1]; last.Overrides[mid] >= got[0].Overrides[mid] || last.Time.Before(t0.Add(50*time.Minute)) {
		t.Errorf("last decision %v: want the map scaled down after the load fell", last)
	}
	for _, d := range got {
		if d.Overrides[src] != 1 || d.Overrides[sink] != 1 {
			t.Errorf("decision %v moved a vertex that is never busy", d)
		}
	}
}

// TestGenerateReplaySeries rewrites the synthetic series (UPDATE_REPLAY=1): a simulated job
// whose map costs 1.5 ms per record, under 300 → 1500 → 300 records/s, closed-loop with the
// autoscaler's own decisions (a rescale stops the job for 20 s, during which lag builds up).
// Review the decisions before committing a regenerated file.
func TestGenerateReplaySeries(t *testing.T) {
	if os.Getenv("UPDATE_REPLAY") == "" {
		t.Skip("set UPDATE_REPLAY=1 to regenerate testdata/replay/synthetic-*.json")
	}
	conf := map[string]string{
		"job.autoscaler.enabled": "true", "job.autoscaler.metrics.window": "5 min", "job.autoscaler.stabilization.interval": "1 min",
		"job.autoscaler.utilization.target": "0.6", "job.autoscaler.utilization.min": "0.3", "job.autoscaler.utilization.max": "0.85",
		"job.autoscaler.catch-up.duration": "5 min", "job.autoscaler.restart.time": "30 s", "job.autoscaler.scale-down.interval": "10 min",
	}
	write := func(name, desc string, conf map[string]string, reports bool) {
		f := simulate(t, conf)
		f.Description, f.ExpectReports = desc, reports
		b, err := marshalReplay(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "replay", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("synthetic-low-high-low.json", "Simulated source → keyed map (1.5 ms/record) → sink under 300 → 1500 → 300 records/s; the map is scaled up while the load is high and down after it falls.", conf, false)
	ro := maps.Clone(conf)
	ro["job.autoscaler.scaling.enabled"] = "false"
	write("synthetic-recommend-only.json", "The same load with scaling.enabled=false: reports, never rescales.", ro, true)
}

// simulate runs the closed loop and records it.
func simulate(t *testing.T, conf map[string]string) replayFile {
	cfg, err := ParseConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	f := replayFile{FlinkConf: conf, Vertices: []replayVertex{
		{ID: src, Name: "Source: rate schedule", MaxParallelism: 128, Source: true},
		{ID: mid, Name: "Busy map", MaxParallelism: 128, Inputs: []VertexID{src}, HashInput: true},
		{ID: sink, Name: "Sink", MaxParallelism: 128, Inputs: []VertexID{mid}},
	}}
	cost := map[VertexID]float64{src: 0.02, mid: 1.5, sink: 0.05} // ms per record
	par := map[VertexID]int{src: 1, mid: 1, sink: 1}
	rate := func(at time.Duration) float64 {
		if at >= 20*time.Minute && at < 50*time.Minute {
			return 1500
		}
		return 300
	}
	const dt = 30 * time.Second
	jobStart, lag := t0.Add(-time.Minute), 0.0
	counters := map[VertexID][3]float64{}
	state := State{}
	for at := time.Duration(0); at <= 140*time.Minute; at += dt {
		now := t0.Add(at)
		r := rate(at)
		capacity := math.Inf(1)
		for id, c := range cost {
			capacity = math.Min(capacity, float64(par[id])*1000/c)
		}
		processed := math.Min(r+lag/dt.Seconds(), capacity)
		lag = math.Max(0, lag+(r-processed)*dt.Seconds())
		o := replayObservation{Time: now, JobStart: jobStart, Parallelism: maps.Clone(par), Vertices: map[VertexID]replayVertexData{}}
		for _, id := range []VertexID{src, mid, sink} {
			busy := math.Min(1000, processed/float64(par[id])*cost[id])
			out := processed
			if id == sink {
				out = 0
			}
			c := counters[id]
			c[0] += processed * dt.Seconds()
			c[1] += out * dt.Seconds()
			c[2] += busy * float64(par[id]) * dt.Seconds()
			counters[id] = c
			d := replayVertexData{Busy: ptr(busy), In: ptr(processed), Out: ptr(out), NumRecordsIn: ptr(c[0]), NumRecordsOut: ptr(c[1]), AccumulatedBusy: ptr(c[2])}
			if id == src {
				d.Pending = ptr(math.Round(lag))
			}
			o.Vertices[id] = d
		}
		f.Observations = append(f.Observations, o)

		state = state.WithJobStart(o.JobStart)
		state = Observe(now, o.sample(), state, cfg)
		res := Evaluate(now, f.topology(par), state, cfg)
		state = res.State
		if res.Scaled {
			f.ExpectedDecisions = append(f.ExpectedDecisions, replayDecision{Time: now, Overrides: res.Overrides})
			par = maps.Clone(res.Overrides)
			// The rescale stops the job for 20 s; counters restart from zero.
			jobStart = now.Add(20 * time.Second)
			lag += r * 20
			counters = map[VertexID][3]float64{}
		}
	}
	ids := slices.Sorted(maps.Keys(par))
	t.Logf("final parallelism %v, decisions %s", par, fmt.Sprint(f.ExpectedDecisions, ids))
	return f
}

// marshalReplay writes a series with one observation per line, so diffs stay readable.
func marshalReplay(f replayFile) ([]byte, error) {
	obs := f.Observations
	f.Observations = nil
	head, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.Write(head[:len(head)-2]) // without the closing "\n}"
	b.WriteString(",\n \"observations\": [\n")
	for i, o := range obs {
		line, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		b.WriteString("  ")
		b.Write(line)
		if i < len(obs)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(" ]\n}\n")
	return []byte(b.String()), nil
}
