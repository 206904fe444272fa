package autoscaler

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Keys of the autoscaler-<name> ConfigMap, as upstream's KubernetesAutoScalerStateStore writes
// them. collectedMetrics, scalingHistory and scalingTracking hold gzip-compressed, base64-encoded
// YAML (upstream also reads them uncompressed, from before it compressed); delayedScaleDown holds
// plain YAML; parallelismOverrides holds Flink's map syntax (vid:p,vid:p).
const (
	KeyCollectedMetrics     = "collectedMetrics"
	KeyScalingHistory       = "scalingHistory"
	KeyScalingTracking      = "scalingTracking"
	KeyParallelismOverrides = "parallelismOverrides"
	KeyDelayedScaleDown     = "delayedScaleDown"
)

// maxStateBytes is upstream's budget for the compressed metric, history and tracking entries;
// beyond it the oldest samples are dropped (a ConfigMap holds at most 1 MiB).
const maxStateBytes = 1000000

// Names of the per-sample metrics upstream collects (ScalingMetric).
const (
	sampleNumRecordsIn          = "NUM_RECORDS_IN"
	sampleNumRecordsOut         = "NUM_RECORDS_OUT"
	sampleAccumulatedBusyTime   = "ACCUMULATED_BUSY_TIME"
	sampleNumRecordsInPerSecond = "NUM_RECORDS_IN_PER_SECOND"
	sampleObservedTPR           = "OBSERVED_TPR"
)

// jfloat is a double as Jackson writes it into YAML: a plain number, or NaN / Infinity spelled
// as Java does (YAML's own .nan / .inf are accepted too).
type jfloat float64

func (f *jfloat) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseJavaDouble(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*f = jfloat(v)
	return nil
}

func parseJavaDouble(s string) (float64, error) {
	switch strings.TrimSpace(s) {
	case "NaN", ".nan", ".NaN", ".NAN":
		return math.NaN(), nil
	case "Infinity", "+Infinity", ".inf", ".Inf", ".INF", "+.inf":
		return math.Inf(1), nil
	case "-Infinity", "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1), nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}

// jinstant is an Instant as Jackson's JavaTimeModule writes it: decimal epoch seconds
// (1700000000.123456789) by default, or ISO-8601 text.
type jinstant time.Time

func (t *jinstant) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseInstant(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*t = jinstant(v)
	return nil
}

func parseInstant(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	d, err := parseDecimalSeconds(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an instant: want ISO-8601 or epoch seconds", s)
	}
	return time.Unix(0, 0).Add(d).UTC(), nil
}

// parseDecimalSeconds reads "123.456789" seconds exactly (no float rounding of the nanoseconds).
func parseDecimalSeconds(s string) (time.Duration, error) {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
	if !ok {
		return 0, fmt.Errorf("%q is not a number of seconds", s)
	}
	ns := new(big.Rat).Mul(r, big.NewRat(int64(time.Second), 1))
	if !ns.IsInt() {
		ns.SetInt(new(big.Int).Quo(ns.Num(), ns.Denom()))
	}
	if !ns.Num().IsInt64() {
		return 0, fmt.Errorf("%q seconds is out of range", s)
	}
	return time.Duration(ns.Num().Int64()), nil
}

// jduration is a Duration as JavaTimeModule writes it: decimal seconds, or ISO-8601 (PT5M).
type jduration time.Duration

func (d *jduration) UnmarshalYAML(n *yaml.Node) error {
	s := strings.TrimSpace(n.Value)
	if strings.HasPrefix(strings.ToUpper(s), "PT") {
		v, err := time.ParseDuration(strings.ToLower(s[2:]))
		if err != nil {
			return fmt.Errorf("line %d: %q is not an ISO-8601 duration", n.Line, s)
		}
		*d = jduration(v)
		return nil
	}
	v, err := parseDecimalSeconds(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = jduration(v)
	return nil
}

// Upstream's serialized shapes (Jackson, field names as upstream's classes).
type (
	collectedMetricsYAML struct {
		VertexMetrics map[string]map[string]jfloat `yaml:"vertexMetrics"`
		GlobalMetrics map[string]jfloat            `yaml:"globalMetrics"`
	}
	evaluatedMetricYAML struct {
		Current jfloat `yaml:"current"`
		Average jfloat `yaml:"average"`
	}
	scalingSummaryYAML struct {
		CurrentParallelism int                            `yaml:"currentParallelism"`
		NewParallelism     int                            `yaml:"newParallelism"`
		Metrics            map[string]evaluatedMetricYAML `yaml:"metrics"`
	}
	scalingTrackingYAML struct {
		ScalingRecords map[string]struct {
			RestartDuration *jduration `yaml:"restartDuration"`
		} `yaml:"scalingRecords"`
	}
	delayedScaleDownYAML struct {
		DelayedVertices map[string]struct {
			FirstTriggerTime        jinstant `yaml:"firstTriggerTime"`
			RecommendedParallelisms []struct {
				TriggerTime             jinstant `yaml:"triggerTime"`
				Parallelism             int      `yaml:"parallelism"`
				OutsideUtilizationBound bool     `yaml:"outsideUtilizationBound"`
			} `yaml:"recommendedParallelisms"`
		} `yaml:"delayedVertices"`
	}
)

// DecodeState reads the autoscaler-<name> ConfigMap data written by this operator or by the
// Apache operator. Entries it does not interpret are kept in State.Extra. A malformed entry is
// an error naming the key, and the returned state holds everything else: the caller may go on
// with it, which is what upstream does (it discards an entry it cannot read).
func DecodeState(data map[string]string) (State, error) {
	s := State{History: map[VertexID][]ScalingRecord{}, Overrides: map[VertexID]int{}, DelayedScaleDown: map[VertexID]DelayedScaleDown{}}
	var errs []string
	for key, value := range data {
		var err error
		switch key {
		case KeyCollectedMetrics:
			s.Samples, err = decodeSamples(value)
		case KeyScalingHistory:
			s.History, err = decodeHistory(value)
		case KeyScalingTracking:
			s.RestartTimes, err = decodeTracking(value)
		case KeyParallelismOverrides:
			s.Overrides, err = ParseOverrides(value)
		case KeyDelayedScaleDown:
			s.DelayedScaleDown, err = decodeDelayed(value)
		default:
			if s.Extra == nil {
				s.Extra = map[string]string{}
			}
			s.Extra[key] = value
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", key, err))
		}
	}
	// The last rescale decision restarts stabilization (Evaluate sets JobStart to it); the
	// ConfigMap does not hold JobStart itself, so take it from the rescale record.
	if n := len(s.RestartTimes); n > 0 {
		s.JobStart = s.RestartTimes[n-1].Time
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return s, fmt.Errorf("autoscaler state: %s", strings.Join(errs, "; "))
	}
	return s, nil
}

// decompress undoes upstream's gzip+base64, falling back to the text itself for entries written
// before upstream compressed them.
func decompress(s string) string {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return s
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return s
	}
	out, err := io.ReadAll(io.LimitReader(zr, 20<<20)) // upstream's YAML size limit
	if err != nil {
		return s
	}
	return string(out)
}

func compress(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s)) // writes to memory cannot fail
	_ = zw.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func decodeSamples(value string) ([]Sample, error) {
	var raw map[string]collectedMetricsYAML
	if err := yaml.Unmarshal([]byte(decompress(value)), &raw); err != nil {
		return nil, err
	}
	samples := make([]Sample, 0, len(raw))
	for ts, cm := range raw {
		t, err := parseInstant(ts)
		if err != nil {
			return nil, err
		}
		s := Sample{Time: t, Vertices: map[VertexID]VertexSample{}, HeapUsedRatio: math.NaN(), GCTimeMsPerSecond: math.NaN()}
		if v, ok := cm.GlobalMetrics[MetricHeapMaxUsageRatio]; ok {
			s.HeapUsedRatio = float64(v)
		}
		if v, ok := cm.GlobalMetrics[MetricGCPressure]; ok {
			s.GCTimeMsPerSecond = float64(v) * 1000
		}
		for id, m := range cm.VertexMetrics {
			get := func(name string) (float64, bool) {
				v, ok := m[name]
				return float64(v), ok
			}
			vs := VertexSample{BusyTimeMsPerSecond: math.NaN(), BackPressuredTimeMsPerSecond: math.NaN(), RecordsInPerSecond: math.NaN(), RecordsOutPerSecond: math.NaN()}
			if v, ok := get(MetricLoad); ok {
				vs.BusyTimeMsPerSecond = v * 1000
			}
			if v, ok := get(sampleNumRecordsInPerSecond); ok {
				vs.RecordsInPerSecond = v
			}
			vs.PendingRecords, vs.HasPendingRecords = get(MetricLag)
			vs.observedTPR, vs.hasObservedTPR = get(sampleObservedTPR)
			if in, ok := get(sampleNumRecordsIn); ok {
				vs.HasAccumulated = true
				vs.NumRecordsIn = in
				vs.NumRecordsOut = math.NaN()
				vs.AccumulatedBusyTimeMs = math.NaN()
				if v, ok := get(sampleNumRecordsOut); ok {
					vs.NumRecordsOut = v
				}
				if v, ok := get(sampleAccumulatedBusyTime); ok {
					vs.AccumulatedBusyTimeMs = v
				}
			}
			s.Vertices[VertexID(id)] = vs
		}
		samples = append(samples, s)
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	// Upstream keeps counters, not gauges, for sources and for output: derive the gauges from
	// consecutive counters so that both views of a sample agree.
	for i := 1; i < len(samples); i++ {
		dt := float64(samples[i].Time.Sub(samples[i-1].Time).Milliseconds()) / 1000
		for id, vs := range samples[i].Vertices {
			prev, ok := samples[i-1].Vertices[id]
			if !ok || !vs.HasAccumulated || !prev.HasAccumulated || dt <= 0 {
				continue
			}
			if math.IsNaN(vs.RecordsInPerSecond) {
				vs.RecordsInPerSecond = (vs.NumRecordsIn - prev.NumRecordsIn) / dt
			}
			vs.RecordsOutPerSecond = (vs.NumRecordsOut - prev.NumRecordsOut) / dt
			samples[i].Vertices[id] = vs
		}
	}
	return samples, nil
}

func decodeHistory(value string) (map[VertexID][]ScalingRecord, error) {
	var raw map[string]map[string]scalingSummaryYAML
	if err := yaml.Unmarshal([]byte(decompress(value)), &raw); err != nil {
		return nil, err
	}
	out := map[VertexID][]ScalingRecord{}
	for id, byTime := range raw {
		for ts, sum := range byTime {
			t, err := parseInstant(ts)
			if err != nil {
				return nil, err
			}
			rec := ScalingRecord{Time: t, CurrentParallelism: sum.CurrentParallelism, NewParallelism: sum.NewParallelism, Metrics: map[string]EvaluatedMetric{}}
			for name, m := range sum.Metrics {
				rec.Metrics[name] = EvaluatedMetric{Current: float64(m.Current), Average: float64(m.Average)}
			}
			out[VertexID(id)] = append(out[VertexID(id)], rec)
		}
		recs := out[VertexID(id)]
		sort.Slice(recs, func(i, j int) bool { return recs[i].Time.Before(recs[j].Time) })
	}
	return out, nil
}

func decodeTracking(value string) ([]RestartRecord, error) {
	var raw scalingTrackingYAML
	if err := yaml.Unmarshal([]byte(decompress(value)), &raw); err != nil {
		return nil, err
	}
	var out []RestartRecord
	for ts, r := range raw.ScalingRecords {
		t, err := parseInstant(ts)
		if err != nil {
			return nil, err
		}
		rec := RestartRecord{Time: t}
		if r.RestartDuration != nil {
			rec.Duration = time.Duration(*r.RestartDuration)
		}
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

func decodeDelayed(value string) (map[VertexID]DelayedScaleDown, error) {
	var raw delayedScaleDownYAML
	if err := yaml.Unmarshal([]byte(value), &raw); err != nil {
		return nil, err
	}
	out := map[VertexID]DelayedScaleDown{}
	for id, v := range raw.DelayedVertices {
		d := DelayedScaleDown{FirstTriggered: time.Time(v.FirstTriggerTime)}
		for _, r := range v.RecommendedParallelisms {
			d.Recommended = append(d.Recommended, RecommendedParallelism{Time: time.Time(r.TriggerTime), Parallelism: r.Parallelism, OutsideBound: r.OutsideUtilizationBound})
		}
		out[VertexID(id)] = d
	}
	return out, nil
}

// Encode returns the ConfigMap data for the state, in upstream's keys and encodings, so that the
// Apache operator could continue from it too. Empty parts are left out (upstream removes their
// keys). When the compressed entries exceed upstream's budget, the oldest samples are dropped.
func (s State) Encode() (map[string]string, error) {
	return s.encode(maxStateBytes), nil
}

// encode encodes within a byte budget for the compressed entries.
func (s State) encode(limit int) map[string]string {
	out := map[string]string{}
	for k, v := range s.Extra {
		out[k] = v
	}
	if len(s.History) > 0 {
		out[KeyScalingHistory] = compress(encodeHistory(s.History))
	}
	if len(s.RestartTimes) > 0 {
		out[KeyScalingTracking] = compress(encodeTracking(s.RestartTimes))
	}
	if len(s.Overrides) > 0 {
		out[KeyParallelismOverrides] = FormatOverrides(s.Overrides)
	}
	if len(s.DelayedScaleDown) > 0 {
		out[KeyDelayedScaleDown] = encodeDelayed(s.DelayedScaleDown)
	}
	budget := limit - len(out[KeyScalingHistory]) - len(out[KeyScalingTracking])
	if enc := compress(encodeSamples(s.Samples)); len(enc) <= budget {
		if len(s.Samples) > 0 {
			out[KeyCollectedMetrics] = enc
		}
		return out
	}
	// Keep the longest run of newest samples that fits (binary search: each try compresses).
	lo, hi, best := 0, len(s.Samples)-1, ""
	for lo <= hi {
		keep := (lo + hi) / 2
		if keep == 0 {
			lo = 1
			continue
		}
		enc := compress(encodeSamples(s.Samples[len(s.Samples)-keep:]))
		if len(enc) <= budget {
			best, lo = enc, keep+1
		} else {
			hi = keep - 1
		}
	}
	if best != "" {
		out[KeyCollectedMetrics] = best
	}
	return out
}

// yamlWriter writes the few YAML shapes upstream's Jackson mapper produces.
type yamlWriter struct{ b strings.Builder }

func (w *yamlWriter) line(indent int, format string, args ...any) {
	w.b.WriteString(strings.Repeat("  ", indent))
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

// javaInstantKey renders an Instant as Java's Instant.toString (Jackson's map key form).
func javaInstantKey(t time.Time) string {
	t = t.UTC()
	s := t.Format("2006-01-02T15:04:05")
	switch ns := t.Nanosecond(); {
	case ns == 0:
	case ns%1e6 == 0:
		s += fmt.Sprintf(".%03d", ns/1e6)
	case ns%1e3 == 0:
		s += fmt.Sprintf(".%06d", ns/1e3)
	default:
		s += fmt.Sprintf(".%09d", ns)
	}
	return strconv.Quote(s + "Z")
}

// decimalSeconds renders a duration since the epoch (or a length) as Jackson's timestamps:
// seconds with nine decimals.
func decimalSeconds(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	return fmt.Sprintf("%s%d.%09d", sign, d/time.Second, d%time.Second)
}

func encodeSamples(samples []Sample) string {
	var w yamlWriter
	w.line(0, "---")
	// Counters upstream expects: the collected ones when every sample of the vertex has them
	// (as window.accumulated requires), else accumulated from the gauges for all its samples, so
	// that the rates read back are the rates evaluated now.
	realCounters := map[VertexID]bool{}
	for _, s := range samples {
		for id, vs := range s.Vertices {
			if prev, seen := realCounters[id]; !seen || prev {
				realCounters[id] = vs.HasAccumulated
			}
		}
	}
	acc := map[VertexID][3]float64{}
	for i, s := range samples {
		w.line(0, "%s:", javaInstantKey(s.Time))
		w.line(1, "vertexMetrics:")
		dt := 0.0
		if i > 0 {
			dt = float64(s.Time.Sub(samples[i-1].Time).Milliseconds()) / 1000
		}
		for _, id := range sortedIDs(s.Vertices) {
			vs := s.Vertices[id]
			w.line(2, "%s:", id)
			metric := func(name string, v float64) { w.line(3, "%s: %s", name, javaDouble(v)) }
			metric(MetricLoad, vs.BusyTimeMsPerSecond/1000)
			if vs.HasPendingRecords {
				metric(MetricLag, vs.PendingRecords)
			}
			c := acc[id]
			if realCounters[id] {
				c = [3]float64{vs.NumRecordsIn, vs.NumRecordsOut, vs.AccumulatedBusyTimeMs}
			} else {
				c[0] += finite(vs.RecordsInPerSecond) * dt
				c[1] += finite(vs.RecordsOutPerSecond) * dt
				c[2] += finite(vs.BusyTimeMsPerSecond) * dt
			}
			acc[id] = c
			metric(sampleNumRecordsIn, c[0])
			metric(sampleNumRecordsOut, c[1])
			metric(sampleAccumulatedBusyTime, c[2])
			if !math.IsNaN(vs.RecordsInPerSecond) {
				metric(sampleNumRecordsInPerSecond, vs.RecordsInPerSecond)
			}
			if vs.hasObservedTPR {
				metric(sampleObservedTPR, vs.observedTPR)
			}
		}
		global := map[string]float64{}
		if !math.IsNaN(s.HeapUsedRatio) {
			global[MetricHeapMaxUsageRatio] = s.HeapUsedRatio
		}
		if !math.IsNaN(s.GCTimeMsPerSecond) {
			global[MetricGCPressure] = s.GCTimeMsPerSecond / 1000
		}
		if len(global) == 0 {
			w.line(1, "globalMetrics: {}")
			continue
		}
		w.line(1, "globalMetrics:")
		for _, name := range slices.Sorted(maps.Keys(global)) {
			w.line(2, "%s: %s", name, javaDouble(global[name]))
		}
	}
	return w.b.String()
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func encodeHistory(h map[VertexID][]ScalingRecord) string {
	var w yamlWriter
	w.line(0, "---")
	for _, id := range sortedIDs(h) {
		w.line(0, "%s:", id)
		for _, r := range h[id] {
			w.line(1, "%s:", javaInstantKey(r.Time))
			w.line(2, "currentParallelism: %d", r.CurrentParallelism)
			w.line(2, "newParallelism: %d", r.NewParallelism)
			if len(r.Metrics) == 0 {
				w.line(2, "metrics: {}")
				continue
			}
			w.line(2, "metrics:")
			for _, name := range slices.Sorted(maps.Keys(r.Metrics)) {
				m := r.Metrics[name]
				w.line(3, "%s:", name)
				w.line(4, "current: %s", javaDouble(m.Current))
				w.line(4, "average: %s", javaDouble(m.Average))
			}
		}
	}
	return w.b.String()
}

func encodeTracking(recs []RestartRecord) string {
	var w yamlWriter
	w.line(0, "---")
	w.line(0, "scalingRecords:")
	for _, r := range recs {
		if r.Duration == 0 {
			w.line(1, "%s: {}", javaInstantKey(r.Time))
			continue
		}
		w.line(1, "%s:", javaInstantKey(r.Time))
		w.line(2, "restartDuration: %s", decimalSeconds(r.Duration))
	}
	return w.b.String()
}

func encodeDelayed(d map[VertexID]DelayedScaleDown) string {
	var w yamlWriter
	w.line(0, "---")
	w.line(0, "delayedVertices:")
	for _, id := range sortedIDs(d) {
		v := d[id]
		w.line(1, "%s:", id)
		w.line(2, "firstTriggerTime: %s", decimalSeconds(v.FirstTriggered.Sub(time.Unix(0, 0))))
		if len(v.Recommended) == 0 {
			w.line(2, "recommendedParallelisms: []")
			continue
		}
		w.line(2, "recommendedParallelisms:")
		for _, r := range v.Recommended {
			w.line(2, "- triggerTime: %s", decimalSeconds(r.Time.Sub(time.Unix(0, 0))))
			w.line(3, "parallelism: %d", r.Parallelism)
			w.line(3, "outsideUtilizationBound: %t", r.OutsideBound)
		}
	}
	return w.b.String()
}
