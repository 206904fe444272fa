package autoscaler

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"math"
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

// maxNumberLen bounds a number's text: Java's Double.toString is at most 24 characters and an
// epoch instant in decimal seconds with nanoseconds about 22; anything longer is not upstream's.
const maxNumberLen = 32

func parseJavaDouble(s string) (float64, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "NaN", ".nan", ".NaN", ".NAN":
		return math.NaN(), nil
	case "Infinity", "+Infinity", ".inf", ".Inf", ".INF", "+.inf":
		return math.Inf(1), nil
	case "-Infinity", "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1), nil
	}
	if len(s) > maxNumberLen || !isJavaDouble(s) {
		return 0, fmt.Errorf("%q is not a number (want Java's Double.toString form, at most %d characters)", truncate(s), maxNumberLen)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", truncate(s))
	}
	return v, nil
}

// isJavaDouble: optional sign, digits, optional fraction, optional exponent of at most three
// digits (Double.toString writes 5.36870912E8 and 1.0E-5; Java's doubles end at E308).
func isJavaDouble(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	mant := digits(s, &i)
	if i < len(s) && s[i] == '.' {
		i++
		mant += digits(s, &i)
	}
	if mant == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'E' || s[i] == 'e') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if e := digits(s, &i); e == 0 || e > 3 {
			return false
		}
	}
	return i == len(s)
}

func digits(s string, i *int) int {
	start := *i
	for *i < len(s) && s[*i] >= '0' && s[*i] <= '9' {
		*i++
	}
	return *i - start
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func parseInstant(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if len(s) > 64 {
		return time.Time{}, fmt.Errorf("%q is not an instant: want ISO-8601 or epoch seconds", truncate(s))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		d, err := parseDecimalSeconds(s)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is not an instant: want ISO-8601 or epoch seconds", s)
		}
		t = time.Unix(0, 0).Add(d)
	}
	// Instants are stored as durations since the epoch: keep them where that is exact.
	if t.Before(minInstant) || t.After(maxInstant) {
		return time.Time{}, fmt.Errorf("instant %q is out of range: want one between %d and %d", s, minInstant.Year(), maxInstant.Year())
	}
	return t.UTC(), nil
}

// The instants a state can hold: within time.Duration of the epoch (1678 to 2262), with margin.
var (
	minInstant = time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC)
	maxInstant = time.Date(2250, 1, 1, 0, 0, 0, 0, time.UTC)
)

// maxSecondsDigits bounds the integer part of decimal seconds: time.Duration ends at about
// 9.2e9 seconds (the year 2262 as an instant).
const maxSecondsDigits = 10

// parseDecimalSeconds reads seconds as JavaTimeModule writes Instants and Durations
// ("1700000000.123456789", "42.500000000"): an optional sign, digits, and at most nine fraction
// digits; read exactly, with no float rounding of the nanoseconds. No exponent: Jackson writes
// these as BigDecimal.toPlainString.
func parseDecimalSeconds(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	bad := func() (time.Duration, error) {
		return 0, fmt.Errorf("%q is not a number of seconds (want digits with at most 9 decimals, no exponent)", truncate(s))
	}
	neg := false
	rest := s
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		neg, rest = rest[0] == '-', rest[1:]
	}
	whole, frac, hasFrac := strings.Cut(rest, ".")
	if whole == "" || len(whole) > maxSecondsDigits || len(frac) > 9 || (hasFrac && frac == "") {
		return bad()
	}
	i := 0
	if digits(whole, &i) != len(whole) {
		return bad()
	}
	i = 0
	if digits(frac, &i) != len(frac) {
		return bad()
	}
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || sec > math.MaxInt64/int64(time.Second)-1 {
		return 0, fmt.Errorf("%q seconds is out of range", s)
	}
	ns := int64(0)
	if frac != "" {
		ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	d := time.Duration(sec)*time.Second + time.Duration(ns)
	if neg {
		d = -d
	}
	return d, nil
}

// DecodeState reads the autoscaler-<name> ConfigMap data written by this operator or by the
// Apache operator, within the default budget. See DecodeStateWithin.
func DecodeState(data map[string]string) (State, error) {
	return DecodeStateWithin(context.Background(), data, DefaultLimits())
}

// DecodeStateWithin reads the autoscaler-<name> ConfigMap data within the budget l (zero bounds
// are the defaults), checking ctx as it goes. Entries it does not interpret are kept in
// State.Extra. An entry that is malformed or over the budget is an error naming the key, and the
// returned state holds everything else: the caller may go on with it, which is what upstream
// does (it discards an entry it cannot read). When ctx ends, its error is returned with an empty
// state.
func DecodeStateWithin(ctx context.Context, data map[string]string, l Limits) (State, error) {
	l = l.orDefault()
	s := State{History: map[VertexID][]ScalingRecord{}, Overrides: map[VertexID]int{}, DelayedScaleDown: map[VertexID]DelayedScaleDown{}}
	var errs []string
	for _, key := range slices.Sorted(maps.Keys(data)) {
		if err := ctx.Err(); err != nil {
			return State{}, fmt.Errorf("autoscaler state: %w", err)
		}
		if err := s.decodeEntry(ctx, key, data[key], l); err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return State{}, fmt.Errorf("autoscaler state: %w", ctxErr)
			}
			errs = append(errs, fmt.Sprintf("%s: %v", key, err))
		}
	}
	// The last rescale decision restarts stabilization (Evaluate sets JobStart to it); the
	// ConfigMap does not hold JobStart itself, so take it from the rescale record.
	if n := len(s.RestartTimes); n > 0 {
		s.JobStart = s.RestartTimes[n-1].Time
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("autoscaler state: %s", strings.Join(errs, "; "))
	}
	return s, nil
}

// decodeEntry reads one ConfigMap entry into s. A known key that is malformed or over the
// budget leaves its field of s as it was; an unknown key is kept in s.Extra.
func (s *State) decodeEntry(ctx context.Context, key, value string, l Limits) error {
	var err error
	switch key {
	case KeyCollectedMetrics:
		var v []Sample
		if v, err = decodeSamples(ctx, value, l); err == nil {
			s.Samples = v
		}
	case KeyScalingHistory:
		var v map[VertexID][]ScalingRecord
		if v, err = decodeHistory(ctx, value, l); err == nil {
			s.History = v
		}
	case KeyScalingTracking:
		var v []RestartRecord
		if v, err = decodeTracking(ctx, value, l); err == nil {
			s.RestartTimes = v
		}
	case KeyParallelismOverrides:
		var v map[VertexID]int
		if _, err = checkSize(value, l); err == nil {
			v, err = ParseOverrides(value)
		}
		if err == nil {
			s.Overrides = v
		}
	case KeyDelayedScaleDown:
		var v map[VertexID]DelayedScaleDown
		if v, err = decodeDelayed(ctx, value, l); err == nil {
			s.DelayedScaleDown = v
		}
	default:
		if s.Extra == nil {
			s.Extra = map[string]string{}
		}
		s.Extra[key] = value
	}
	return err
}

func compress(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s)) // writes to memory cannot fail
	_ = zw.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// decodeSamples reads collectedMetrics: Instant -> {vertexMetrics: vertex -> metric -> double,
// globalMetrics: metric -> double} (upstream's CollectedMetrics).
func decodeSamples(ctx context.Context, value string, l Limits) ([]Sample, error) {
	text, err := decompressBounded(value, l)
	if err != nil {
		return nil, err
	}
	doc, err := parseBounded(ctx, text, l)
	if err != nil {
		return nil, err
	}
	byTime, err := mapping(root(doc), "collected metrics")
	if err != nil {
		return nil, err
	}
	samples := make([]Sample, 0, len(byTime))
	tk := tick{ctx: ctx}
	for _, e := range byTime {
		s, err := decodeSample(e, &tk)
		if err != nil {
			return nil, err
		}
		samples = append(samples, s)
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i].Time.Before(samples[j].Time) })
	deriveGauges(samples)
	return samples, nil
}

// decodeSample reads one Instant -> {vertexMetrics, globalMetrics} entry of collectedMetrics,
// counting each vertex on tk.
func decodeSample(e entry, tk *tick) (Sample, error) {
	t, err := instantKey(e, e.val)
	if err != nil {
		return Sample{}, err
	}
	f, err := fields(e.val, "collected metrics of "+e.key)
	if err != nil {
		return Sample{}, err
	}
	s := Sample{Time: t, Vertices: map[VertexID]VertexSample{}, HeapUsedRatio: math.NaN(), GCTimeMsPerSecond: math.NaN()}
	if err := s.decodeGlobalMetrics(f["globalMetrics"]); err != nil {
		return Sample{}, err
	}
	vertices, err := mapping(f["vertexMetrics"], "vertexMetrics")
	if err != nil {
		return Sample{}, err
	}
	for _, ve := range vertices {
		if err := tk.err(); err != nil {
			return Sample{}, err
		}
		vs, err := decodeVertexSample(ve)
		if err != nil {
			return Sample{}, err
		}
		s.Vertices[VertexID(ve.key)] = vs
	}
	return s, nil
}

// decodeGlobalMetrics reads globalMetrics (metric -> double) into s: the heap usage ratio and
// the GC pressure, the only global metrics the evaluation uses.
func (s *Sample) decodeGlobalMetrics(n *yaml.Node) error {
	global, err := mapping(n, "globalMetrics")
	if err != nil {
		return err
	}
	for _, g := range global {
		v, err := doubleNode(g.val, g.key)
		if err != nil {
			return err
		}
		switch g.key {
		case MetricHeapMaxUsageRatio:
			s.HeapUsedRatio = v
		case MetricGCPressure:
			s.GCTimeMsPerSecond = v * 1000
		}
	}
	return nil
}

// decodeVertexSample reads one vertex -> metric -> double entry of vertexMetrics. A metric
// that is absent is NaN (or not Has...), as upstream's map lookup returns null.
func decodeVertexSample(ve entry) (VertexSample, error) {
	metrics, err := mapping(ve.val, "metrics of vertex "+ve.key)
	if err != nil {
		return VertexSample{}, err
	}
	m := make(map[string]float64, len(metrics))
	for _, me := range metrics {
		v, err := doubleNode(me.val, me.key)
		if err != nil {
			return VertexSample{}, err
		}
		m[me.key] = v
	}
	get := func(name string) (float64, bool) {
		v, ok := m[name]
		return v, ok
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
	return vs, nil
}

// deriveGauges fills the rates of samples (sorted oldest first) from consecutive counters:
// upstream keeps counters, not gauges, for sources and for output, so both views of a sample
// must agree.
func deriveGauges(samples []Sample) {
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
}

// decodeHistory reads scalingHistory: vertex -> Instant -> {currentParallelism, newParallelism,
// metrics: name -> {current, average}} (upstream's ScalingSummary).
func decodeHistory(ctx context.Context, value string, l Limits) (map[VertexID][]ScalingRecord, error) {
	text, err := decompressBounded(value, l)
	if err != nil {
		return nil, err
	}
	doc, err := parseBounded(ctx, text, l)
	if err != nil {
		return nil, err
	}
	vertices, err := mapping(root(doc), "scaling history")
	if err != nil {
		return nil, err
	}
	out := map[VertexID][]ScalingRecord{}
	tk := tick{ctx: ctx}
	for _, ve := range vertices {
		byTime, err := mapping(ve.val, "scaling history of vertex "+ve.key)
		if err != nil {
			return nil, err
		}
		recs := make([]ScalingRecord, 0, len(byTime))
		for _, te := range byTime {
			if err := tk.err(); err != nil {
				return nil, err
			}
			rec, err := decodeScalingRecord(te)
			if err != nil {
				return nil, err
			}
			recs = append(recs, rec)
		}
		sort.Slice(recs, func(i, j int) bool { return recs[i].Time.Before(recs[j].Time) })
		out[VertexID(ve.key)] = recs
	}
	return out, nil
}

// decodeScalingRecord reads one Instant -> {currentParallelism, newParallelism, metrics} entry
// of a vertex's scaling history.
func decodeScalingRecord(te entry) (ScalingRecord, error) {
	t, err := instantKey(te, te.val)
	if err != nil {
		return ScalingRecord{}, err
	}
	f, err := fields(te.val, "scaling summary")
	if err != nil {
		return ScalingRecord{}, err
	}
	rec := ScalingRecord{Time: t, Metrics: map[string]EvaluatedMetric{}}
	if rec.CurrentParallelism, err = intNode(f["currentParallelism"], "currentParallelism"); err != nil {
		return ScalingRecord{}, err
	}
	if rec.NewParallelism, err = intNode(f["newParallelism"], "newParallelism"); err != nil {
		return ScalingRecord{}, err
	}
	metrics, err := mapping(f["metrics"], "metrics")
	if err != nil {
		return ScalingRecord{}, err
	}
	for _, me := range metrics {
		m, err := decodeEvaluatedMetric(me)
		if err != nil {
			return ScalingRecord{}, err
		}
		rec.Metrics[me.key] = m
	}
	return rec, nil
}

// decodeEvaluatedMetric reads one name -> {current, average} entry of a scaling summary's
// metrics; either value may be null.
func decodeEvaluatedMetric(me entry) (EvaluatedMetric, error) {
	mf, err := fields(me.val, "metric "+me.key)
	if err != nil {
		return EvaluatedMetric{}, err
	}
	var m EvaluatedMetric
	if m.Current, err = optionalDouble(mf["current"], me.key+".current"); err != nil {
		return EvaluatedMetric{}, err
	}
	if m.Average, err = optionalDouble(mf["average"], me.key+".average"); err != nil {
		return EvaluatedMetric{}, err
	}
	return m, nil
}

// decodeTracking reads scalingTracking: {scalingRecords: Instant -> {restartDuration}}
// (upstream's ScalingTracking).
func decodeTracking(ctx context.Context, value string, l Limits) ([]RestartRecord, error) {
	text, err := decompressBounded(value, l)
	if err != nil {
		return nil, err
	}
	doc, err := parseBounded(ctx, text, l)
	if err != nil {
		return nil, err
	}
	f, err := fields(root(doc), "scaling tracking")
	if err != nil {
		return nil, err
	}
	records, err := mapping(f["scalingRecords"], "scalingRecords")
	if err != nil {
		return nil, err
	}
	var out []RestartRecord
	tk := tick{ctx: ctx}
	for _, e := range records {
		if err := tk.err(); err != nil {
			return nil, err
		}
		t, err := instantKey(e, e.val)
		if err != nil {
			return nil, err
		}
		rf, err := fields(e.val, "scaling record "+e.key)
		if err != nil {
			return nil, err
		}
		rec := RestartRecord{Time: t}
		if n := rf["restartDuration"]; !isNull(n) {
			if rec.Duration, err = durationNode(n, "restartDuration"); err != nil {
				return nil, err
			}
		}
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// decodeDelayed reads delayedScaleDown (plain YAML): {delayedVertices: vertex ->
// {firstTriggerTime, recommendedParallelisms: [{triggerTime, parallelism,
// outsideUtilizationBound}]}} (upstream's DelayedScaleDown).
func decodeDelayed(ctx context.Context, value string, l Limits) (map[VertexID]DelayedScaleDown, error) {
	text, err := checkSize(value, l)
	if err != nil {
		return nil, err
	}
	doc, err := parseBounded(ctx, text, l)
	if err != nil {
		return nil, err
	}
	f, err := fields(root(doc), "delayed scale-down")
	if err != nil {
		return nil, err
	}
	vertices, err := mapping(f["delayedVertices"], "delayedVertices")
	if err != nil {
		return nil, err
	}
	out := map[VertexID]DelayedScaleDown{}
	tk := tick{ctx: ctx}
	for _, ve := range vertices {
		vf, err := fields(ve.val, "delayed scale-down of vertex "+ve.key)
		if err != nil {
			return nil, err
		}
		var d DelayedScaleDown
		if d.FirstTriggered, err = instantNode(vf["firstTriggerTime"], "firstTriggerTime"); err != nil {
			return nil, err
		}
		recs, err := sequence(vf["recommendedParallelisms"], "recommendedParallelisms")
		if err != nil {
			return nil, err
		}
		for _, rn := range recs {
			if err := tk.err(); err != nil {
				return nil, err
			}
			rf, err := fields(rn, "recommended parallelism")
			if err != nil {
				return nil, err
			}
			var r RecommendedParallelism
			if r.Time, err = instantNode(rf["triggerTime"], "triggerTime"); err != nil {
				return nil, err
			}
			if r.Parallelism, err = intNode(rf["parallelism"], "parallelism"); err != nil {
				return nil, err
			}
			if r.OutsideBound, err = boolNode(rf["outsideUtilizationBound"], "outsideUtilizationBound"); err != nil {
				return nil, err
			}
			d.Recommended = append(d.Recommended, r)
		}
		out[VertexID(ve.key)] = d
	}
	return out, nil
}

// Encode returns the ConfigMap data for the state, in upstream's keys and encodings, so that the
// Apache operator could continue from it too. Empty parts are left out (upstream removes their
// keys). When the compressed entries exceed upstream's budget, or the samples the default
// decoding budget (DefaultLimits), the oldest samples are dropped.
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
	// What is stored must also be readable within the default decoding budget.
	fits := func(samples []Sample) (string, bool) {
		text := encodeSamples(samples)
		if n, err := scanYAML(text); err != nil || n > DefaultMaxEntryNodes || len(text) > DefaultMaxEntryBytes {
			return "", false
		}
		enc := compress(text)
		return enc, len(enc) <= budget
	}
	if enc, ok := fits(s.Samples); ok {
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
		if enc, ok := fits(s.Samples[len(s.Samples)-keep:]); ok {
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
	realCounters := collectedCounters(samples)
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
			c := acc[id]
			if realCounters[id] {
				c = [3]float64{vs.NumRecordsIn, vs.NumRecordsOut, vs.AccumulatedBusyTimeMs}
			} else {
				c[0] += finite(vs.RecordsInPerSecond) * dt
				c[1] += finite(vs.RecordsOutPerSecond) * dt
				c[2] += finite(vs.BusyTimeMsPerSecond) * dt
			}
			acc[id] = c
			w.vertexSample(id, vs, c)
		}
		w.globalMetrics(s)
	}
	return w.b.String()
}

// collectedCounters tells, per vertex, which counters upstream is to be given: the collected
// ones when every sample of the vertex has them (as window.accumulated requires), else (false)
// ones accumulated from the gauges for all its samples, so that the rates read back are the
// rates evaluated now.
func collectedCounters(samples []Sample) map[VertexID]bool {
	realCounters := map[VertexID]bool{}
	for _, s := range samples {
		for id, vs := range s.Vertices {
			if prev, seen := realCounters[id]; !seen || prev {
				realCounters[id] = vs.HasAccumulated
			}
		}
	}
	return realCounters
}

// vertexSample writes one vertex's metrics of a sample, with the counters c (records in, records
// out, accumulated busy time).
func (w *yamlWriter) vertexSample(id VertexID, vs VertexSample, c [3]float64) {
	w.line(2, "%s:", id)
	metric := func(name string, v float64) { w.line(3, "%s: %s", name, javaDouble(v)) }
	metric(MetricLoad, vs.BusyTimeMsPerSecond/1000)
	if vs.HasPendingRecords {
		metric(MetricLag, vs.PendingRecords)
	}
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

// globalMetrics writes a sample's globalMetrics: the heap usage ratio and GC pressure it has,
// or an empty map.
func (w *yamlWriter) globalMetrics(s Sample) {
	global := map[string]float64{}
	if !math.IsNaN(s.HeapUsedRatio) {
		global[MetricHeapMaxUsageRatio] = s.HeapUsedRatio
	}
	if !math.IsNaN(s.GCTimeMsPerSecond) {
		global[MetricGCPressure] = s.GCTimeMsPerSecond / 1000
	}
	if len(global) == 0 {
		w.line(1, "globalMetrics: {}")
		return
	}
	w.line(1, "globalMetrics:")
	for _, name := range slices.Sorted(maps.Keys(global)) {
		w.line(2, "%s: %s", name, javaDouble(global[name]))
	}
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
