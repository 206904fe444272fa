package autoscaler

import (
	"math"
	"slices"
	"time"
)

// WithJobStart records the job's last switch to RUNNING: a later start than the state knows
// drops the collected samples, so the stabilization interval and the window start over (a
// restart or rescale changes what the metrics mean). An earlier start is ignored, so a decision
// that already moved JobStart forward is not undone by a stale timestamp.
func (s State) WithJobStart(runningSince time.Time) State {
	if runningSince.After(s.JobStart) {
		s.JobStart = runningSince
	}
	if len(s.Samples) > 0 && s.JobStart.After(s.Samples[0].Time) {
		s.Samples = nil
	}
	return s
}

// Observe appends a sample to the state. Samples taken within the stabilization interval after
// JobStart are dropped (the job is still warming up), as are samples not newer than the last
// one. Samples older than metrics.window are trimmed (see State.Samples). The input state is
// not modified.
func Observe(now time.Time, sample Sample, s State, c Config) State {
	s = s.WithJobStart(s.JobStart)
	if sample.Time.IsZero() {
		sample.Time = now
	}
	if sample.Time.Before(s.JobStart.Add(c.Stabilization)) {
		return s
	}
	if n := len(s.Samples); n > 0 && !sample.Time.After(s.Samples[n-1].Time) {
		return s
	}
	s.Samples = append(slices.Clip(s.Samples), sample)
	// Drop what is older than the window, but keep the newest sample at or before its start:
	// it anchors the window's span (see State.Samples).
	cut := now.Add(-c.MetricsWindow)
	i := 0
	for i+1 < len(s.Samples) && !s.Samples[i+1].Time.After(cut) {
		i++
	}
	if i > 0 {
		s.Samples = slices.Clone(s.Samples[i:])
	}
	return s
}

// windowFull reports whether the samples cover metrics.window: only then does a decision rest
// on a full window of metrics taken after the stabilization interval.
func windowFull(now time.Time, samples []Sample, c Config) bool {
	return len(samples) >= 2 && !now.Before(samples[0].Time.Add(c.MetricsWindow))
}

// window computes per-vertex aggregates over the collected samples the way upstream's
// ScalingMetricEvaluator does.
type window []Sample

// rate is the per-second growth of an accumulated value between the first and the last sample
// that have it; NaN with fewer than two.
func (w window) rate(id VertexID, pick func(VertexSample) (float64, bool)) float64 {
	var first, last float64
	var firstT, lastT time.Time
	n := 0
	for _, s := range w {
		vs, ok := s.Vertices[id]
		if !ok {
			continue
		}
		v, ok := pick(vs)
		if !ok || math.IsNaN(v) {
			continue
		}
		if n == 0 {
			first, firstT = v, s.Time
		} else {
			last, lastT = v, s.Time
		}
		n++
	}
	if n < 2 {
		return math.NaN()
	}
	ms := lastT.Sub(firstT).Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return 1000 * (last - first) / float64(ms)
}

// avg is the mean of the finite values; +Inf when all present values are infinite, NaN when
// none is present.
func (w window) avg(id VertexID, pick func(VertexSample) (float64, bool)) float64 {
	sum, n, inf := 0.0, 0, false
	for _, s := range w {
		vs, ok := s.Vertices[id]
		if !ok {
			continue
		}
		v, ok := pick(vs)
		switch {
		case !ok || math.IsNaN(v):
		case math.IsInf(v, 0):
			inf = true
		default:
			sum += v
			n++
		}
	}
	if n == 0 {
		if inf {
			return math.Inf(1)
		}
		return math.NaN()
	}
	return sum / float64(n)
}

// globalAvg averages a job-wide value over the samples, skipping unknown (NaN) ones.
func (w window) globalAvg(pick func(Sample) float64) float64 {
	sum, n := 0.0, 0
	for _, s := range w {
		if v := pick(s); !math.IsNaN(v) && !math.IsInf(v, 0) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func (w window) last() Sample { return w[len(w)-1] }

// observedTPR averages the vertex's observed true processing rates: +Inf when only infinite
// ones (no input) exist, NaN when fewer than minObservations finite ones.
func (w window) observedTPR(id VertexID, minObservations int) float64 {
	a := w.avg(id, func(v VertexSample) (float64, bool) { return v.observedTPR, v.hasObservedTPR })
	if math.IsNaN(a) || math.IsInf(a, 0) {
		return a
	}
	n := 0
	for _, s := range w {
		if v, ok := s.Vertices[id]; ok && v.hasObservedTPR && !math.IsNaN(v.observedTPR) && !math.IsInf(v.observedTPR, 0) {
			n++
		}
	}
	if n < minObservations {
		return math.NaN()
	}
	return a
}

func busy(v VertexSample) (float64, bool)           { return v.BusyTimeMsPerSecond, true }
func recordsInRate(v VertexSample) (float64, bool)  { return v.RecordsInPerSecond, true }
func recordsOutRate(v VertexSample) (float64, bool) { return v.RecordsOutPerSecond, true }
func numRecordsIn(v VertexSample) (float64, bool)   { return v.NumRecordsIn, v.HasAccumulated }
func numRecordsOut(v VertexSample) (float64, bool)  { return v.NumRecordsOut, v.HasAccumulated }
func accBusy(v VertexSample) (float64, bool)        { return v.AccumulatedBusyTimeMs, v.HasAccumulated }

// lag is a source's pending records; a source without the metric has none (as upstream).
func lag(v VertexSample) (float64, bool) {
	if !v.HasPendingRecords {
		return 0, true
	}
	return v.PendingRecords, true
}

// accumulated reports whether every sample of the vertex carries the accumulated counters;
// rates are computed from them only then, as mixing counters with gauges would skew the window.
func (w window) accumulated(id VertexID) bool {
	n := 0
	for _, s := range w {
		if vs, ok := s.Vertices[id]; ok {
			if !vs.HasAccumulated {
				return false
			}
			n++
		}
	}
	return n >= 2
}

// gaugeRate is the time-weighted mean of a per-second gauge, each sample standing for the
// interval since the previous one; it equals the rate of the counter one would accumulate from
// the gauge, so state written as counters and read back evaluates the same.
func (w window) gaugeRate(id VertexID, pick func(VertexSample) (float64, bool)) float64 {
	sum, total := 0.0, 0.0
	var prev time.Time
	for _, s := range w {
		vs, ok := s.Vertices[id]
		if !ok {
			continue
		}
		v, ok := pick(vs)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if !prev.IsZero() {
			dt := float64(s.Time.Sub(prev).Milliseconds())
			sum += v * dt
			total += dt
		}
		prev = s.Time
	}
	if total <= 0 {
		return w.avg(id, pick)
	}
	return sum / total
}

// inputRate is the vertex's records-in rate over the window: from the accumulated counter when
// collected, else from the per-second gauge.
func (w window) inputRate(id VertexID) float64 {
	if w.accumulated(id) {
		return w.rate(id, numRecordsIn)
	}
	return w.gaugeRate(id, recordsInRate)
}

// outputRate is the vertex's records-out rate over the window.
func (w window) outputRate(id VertexID) float64 {
	if w.accumulated(id) {
		return w.rate(id, numRecordsOut)
	}
	return w.gaugeRate(id, recordsOutRate)
}
