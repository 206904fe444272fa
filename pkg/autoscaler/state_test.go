package autoscaler

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

// upstreamConfigMap returns the data of an autoscaler-<name> ConfigMap as the Apache operator
// writes it. The YAML under testdata/upstream was written by hand following how upstream's
// KubernetesAutoScalerStateStore serializes its classes with Jackson (YAMLFactory, JavaTimeModule,
// AutoScalerSerDeModule, NON_NULL): document start marker; maps keyed by Instant.toString()
// (plain, as Jackson writes field names) and by vertex id hex strings; CollectedMetrics as
// vertexMetrics/globalMetrics maps of ScalingMetric names to doubles in Double.toString form
// (NaN and Infinity spelled out); ScalingSummary as currentParallelism/newParallelism/metrics
// of {current, average}; ScalingTracking as scalingRecords with restartDuration in decimal
// seconds; DelayedScaleDown as delayedVertices with Instants in decimal epoch seconds. As upstream's
// compress() does, collectedMetrics, scalingHistory and scalingTracking are gzipped and base64
// encoded here; delayedScaleDown stays plain; parallelismOverrides is Flink's map string;
// configOverrides (memory tuning, not interpreted here) must survive.
func upstreamConfigMap(t *testing.T, compressed bool) map[string]string {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "upstream", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	gz := func(s string) string {
		if !compressed {
			return s
		}
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b.Bytes())
	}
	return map[string]string{
		"collectedMetrics":     gz(read("collectedMetrics")),
		"scalingHistory":       gz(read("scalingHistory")),
		"scalingTracking":      gz(read("scalingTracking")),
		"delayedScaleDown":     read("delayedScaleDown"),
		"parallelismOverrides": "0a448493b4782967b150582570326227:1,bc764cd8ddf7a0cff126f51c16239658:1,ea632d67b7d595e5b851708ae9ad79d6:1",
		"configOverrides":      "---\nremoved: []\noverrides:\n  taskmanager.memory.process.size: 2 gb\n",
	}
}

func TestDecodeUpstreamConfigMap(t *testing.T) {
	for _, compressed := range []bool{true, false} {
		s, err := DecodeState(upstreamConfigMap(t, compressed))
		if err != nil {
			t.Fatalf("compressed=%v: %v", compressed, err)
		}
		if len(s.Samples) != 16 || !s.Samples[0].Time.Equal(time.Date(2026, 11, 25, 11, 45, 0, 0, time.UTC)) ||
			!s.Samples[15].Time.Equal(time.Date(2026, 11, 25, 12, 0, 0, 250e6, time.UTC)) {
			t.Fatalf("samples: %d, first %v", len(s.Samples), s.Samples[0].Time)
		}
		m := s.Samples[1].Vertices[mid]
		if m.BusyTimeMsPerSecond != 900 || m.RecordsInPerSecond != 1000 || !m.HasAccumulated || m.NumRecordsIn != 5060000 || m.AccumulatedBusyTimeMs != 54000 {
			t.Errorf("mid sample: %+v", m)
		}
		so := s.Samples[1].Vertices[src]
		if !so.HasPendingRecords || so.PendingRecords != 0 || so.RecordsInPerSecond != 1000 || so.RecordsOutPerSecond != 1000 {
			t.Errorf("source sample (rates derived from the counters): %+v", so)
		}
		if g := s.Samples[0]; g.HeapUsedRatio != 0.5 || g.GCTimeMsPerSecond != 10 {
			t.Errorf("global metrics: heap %v gc %v", g.HeapUsedRatio, g.GCTimeMsPerSecond)
		}
		h := s.History[mid]
		if len(h) != 1 || h[0].CurrentParallelism != 2 || h[0].NewParallelism != 1 || h[0].Metrics[MetricTrueProcessingRate].Average != 1500 ||
			!math.IsNaN(h[0].Metrics[MetricTrueProcessingRate].Current) || h[0].Metrics[MetricExpectedProcessingRate].Current != 750 {
			t.Errorf("history: %+v", s.History)
		}
		if len(s.RestartTimes) != 1 || s.RestartTimes[0].Duration != 42500*time.Millisecond {
			t.Errorf("tracking: %+v", s.RestartTimes)
		}
		d := s.DelayedScaleDown[src]
		first := time.Date(2026, 11, 25, 11, 50, 0, 0, time.UTC)
		if !d.FirstTriggered.Equal(first) || len(d.Recommended) != 2 || d.Recommended[1].Parallelism != 2 || !d.Recommended[1].OutsideBound ||
			!d.Recommended[1].Time.Equal(first.Add(5*time.Minute+123*time.Millisecond)) {
			t.Errorf("delayed scale-down: %+v", d)
		}
		if s.Overrides[mid] != 1 || len(s.Overrides) != 3 {
			t.Errorf("overrides: %v", s.Overrides)
		}
		if s.Extra["configOverrides"] == "" {
			t.Errorf("configOverrides not kept")
		}
	}
}

// TestContinueFromUpstreamState: a ConfigMap the Apache operator left behind (window full,
// the map vertex at 90 % busy) is continued: one more observation decides the scale-up the
// upstream operator was about to make.
func TestContinueFromUpstreamState(t *testing.T) {
	s, err := DecodeState(upstreamConfigMap(t, true))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.MetricsWindow = 15 * time.Minute
	now := time.Date(2026, 11, 25, 12, 1, 0, 0, time.UTC)
	s = s.WithJobStart(time.Date(2026, 11, 25, 11, 30, 0, 0, time.UTC))
	last := s.Samples[len(s.Samples)-1].Vertices
	next := Sample{Time: now, Vertices: map[VertexID]VertexSample{}, HeapUsedRatio: 0.5, GCTimeMsPerSecond: 10}
	for id, v := range last {
		v.NumRecordsIn += 60000
		v.NumRecordsOut += 60000
		v.AccumulatedBusyTimeMs += 60 * v.BusyTimeMsPerSecond
		next.Vertices[id] = v
	}
	s = Observe(now, next, s, cfg)
	if !windowFull(now, s.Samples, cfg) || len(s.Samples) != 16 {
		t.Fatalf("window after one more sample: full %v, %d samples", windowFull(now, s.Samples, cfg), len(s.Samples))
	}
	r := Evaluate(now, pipeline(1, 1, 1), s, cfg)
	if !r.Scaled || r.Overrides[mid] != 2 || r.Overrides[src] != 1 {
		t.Fatalf("continuation did not scale the map vertex: %v %s %+v", r.Overrides, r.Message, r.Warnings)
	}
	if len(r.State.History[mid]) != 2 {
		t.Errorf("upstream history not continued: %+v", r.State.History[mid])
	}
	if _, ok := r.State.DelayedScaleDown[src]; ok {
		t.Errorf("a rescale must clear upstream's pending scale-downs")
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	s, err := DecodeState(upstreamConfigMap(t, true))
	if err != nil {
		t.Fatal(err)
	}
	data, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{KeyCollectedMetrics, KeyScalingHistory, KeyScalingTracking, KeyDelayedScaleDown, KeyParallelismOverrides, "configOverrides"} {
		if data[k] == "" {
			t.Errorf("key %s missing", k)
		}
	}
	if data[KeyParallelismOverrides] != "0a448493b4782967b150582570326227:1,bc764cd8ddf7a0cff126f51c16239658:1,ea632d67b7d595e5b851708ae9ad79d6:1" {
		t.Errorf("overrides %q", data[KeyParallelismOverrides])
	}
	back, err := DecodeState(data)
	if err != nil {
		t.Fatalf("decoding our own encoding: %v\n%s", err, decompress(data[KeyCollectedMetrics]))
	}
	if !sameState(s, back) {
		t.Errorf("round trip differs:\n%+v\n%+v", s, back)
	}
	// Gauge-only samples (no counters) come back as counters that give the same rates.
	g := fullState(samples(4, map[VertexID]load{src: {rate: 1000, busy: 100, lag: 5}, mid: {rate: 400, busy: 800}}))
	data, _ = g.Encode()
	back, err = DecodeState(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []VertexID{src, mid} {
		before, after := window(g.Samples).inputRate(id), window(back.Samples).inputRate(id)
		if math.Abs(before-after) > 1e-9 {
			t.Errorf("input rate of %s: %v before, %v after the round trip", id, before, after)
		}
	}
	// Samples with counters followed by samples without (upstream's state continued by a
	// collector without counters): the gauges decide before and after storing.
	mixed := fullState(samples(6, map[VertexID]load{src: {rate: 1000, busy: 100}}))
	for i := range 3 {
		v := mixed.Samples[i].Vertices[src]
		v.NumRecordsIn, v.NumRecordsOut, v.AccumulatedBusyTimeMs, v.HasAccumulated = 7e9+float64(i)*1e3, 1, 1, true
		mixed.Samples[i].Vertices[src] = v
	}
	data, _ = mixed.Encode()
	if back, err = DecodeState(data); err != nil {
		t.Fatal(err)
	}
	if before, after := window(mixed.Samples).inputRate(src), window(back.Samples).inputRate(src); before != 1000 || math.Abs(after-1000) > 1e-9 {
		t.Errorf("mixed counters: input rate %v before, %v after the round trip", before, after)
	}
}

// sameState compares states treating NaN as equal to NaN.
func sameState(a, b State) bool {
	norm := func(s State) State {
		for i := range s.Samples {
			for id, v := range s.Samples[i].Vertices {
				v.BusyTimeMsPerSecond = math.Round(v.BusyTimeMsPerSecond*1e9) / 1e9
				s.Samples[i].Vertices[id] = nanTo(v)
			}
		}
		return s
	}
	return reflect.DeepEqual(fmtState(norm(a)), fmtState(norm(b)))
}

func nanTo(v VertexSample) VertexSample {
	for _, f := range []*float64{&v.BusyTimeMsPerSecond, &v.BackPressuredTimeMsPerSecond, &v.RecordsInPerSecond, &v.RecordsOutPerSecond, &v.PendingRecords, &v.NumRecordsIn, &v.NumRecordsOut, &v.AccumulatedBusyTimeMs} {
		if math.IsNaN(*f) {
			*f = -1
		}
	}
	return v
}

// fmtState renders a state as text, where NaN prints the same every time.
func fmtState(s State) string {
	b, _ := s.Encode()
	out := ""
	for _, k := range slices.Sorted(maps.Keys(b)) {
		v := b[k]
		if k == KeyCollectedMetrics || k == KeyScalingHistory || k == KeyScalingTracking {
			v = decompress(v)
		}
		out += k + "=" + v + "\n"
	}
	return out
}

func TestDecodeStateErrorsNameTheKey(t *testing.T) {
	_, err := DecodeState(map[string]string{KeyScalingHistory: "---\nabc: [not, a, map]\n", KeyParallelismOverrides: "x:0"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{KeyScalingHistory, KeyParallelismOverrides} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestEncodeTrimsToConfigMapBudget(t *testing.T) {
	// Hardly compressible samples: distinct vertex ids and values.
	s := State{}
	for i := 0; i < 60; i++ {
		smp := Sample{Time: t0.Add(time.Duration(i) * time.Second), Vertices: map[VertexID]VertexSample{}, HeapUsedRatio: math.NaN(), GCTimeMsPerSecond: math.NaN()}
		for v := 0; v < 5; v++ {
			smp.Vertices[VertexID(randomHex(i*1000+v))] = VertexSample{BusyTimeMsPerSecond: float64(i*v%997) + 0.123456789, RecordsInPerSecond: float64(i*v) * 1.0000001}
		}
		s.Samples = append(s.Samples, smp)
	}
	const budget = 8000
	data := s.encode(budget)
	if n := len(data[KeyCollectedMetrics]); n > budget || n == 0 {
		t.Fatalf("collectedMetrics is %d bytes, budget %d", n, budget)
	}
	back, err := DecodeState(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Samples) >= 60 || len(back.Samples) < 2 || !back.Samples[len(back.Samples)-1].Time.Equal(s.Samples[59].Time) {
		t.Errorf("kept %d samples; the newest must stay", len(back.Samples))
	}
	if full, _ := s.Encode(); len(full[KeyCollectedMetrics]) <= budget {
		t.Errorf("test data fits the budget untrimmed; it proves nothing")
	}
}

func randomHex(seed int) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 32)
	x := uint64(seed)*6364136223846793005 + 1442695040888963407
	for i := range b {
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		b[i] = hex[x%16]
	}
	return string(b)
}

func TestDecodeStateKeepsWhatItCanRead(t *testing.T) {
	data := upstreamConfigMap(t, true)
	data[KeyScalingHistory] = "---\nabc: [not, a, map]\n"
	s, err := DecodeState(data)
	if err == nil {
		t.Fatal("no error")
	}
	if len(s.Samples) != 16 || len(s.History) != 0 || s.Overrides[mid] != 1 {
		t.Errorf("readable entries lost: %d samples, %d history, overrides %v", len(s.Samples), len(s.History), s.Overrides)
	}
	if r := Evaluate(t0, pipeline(1, 1, 1), s, testConfig()); len(r.Warnings) != 0 && r.Warnings[0].Reason == ReasonNotEvaluable {
		t.Errorf("the partial state does not evaluate: %+v", r.Warnings)
	}
}
