// Package autoscaler decides per-vertex parallelism for a Flink job from collected metrics, the way
// the Apache Flink Kubernetes Operator's job autoscaler (FLIP-271) does. It is pure: metrics come in
// through MetricsSource implementations elsewhere, state goes out as ConfigMap data the caller
// stores, and decisions are functions of (time, topology, state, config) so they are table-testable.
package autoscaler

import (
	"context"
	"time"
)

// VertexID is a Flink job vertex id (32 hex characters).
type VertexID string

// Vertex is one job vertex as the JobManager reports it.
type Vertex struct {
	ID             VertexID
	Name           string
	Parallelism    int
	MaxParallelism int
	// Inputs are the upstream vertices feeding this one.
	Inputs []VertexID
	// Source is true for vertices without inputs that read from an external system.
	Source bool
	// SourcePartitions is the number of partitions (splits) the source reads; 0 when unknown.
	SourcePartitions int
	// HashInput is true when at least one input edge is keyed (HASH ship strategy); such vertices
	// are aligned to key groups.
	HashInput bool
}

// Topology is a job graph.
type Topology struct {
	Vertices []Vertex
}

// VertexSample is one observation of a vertex's metrics, aggregated over its subtasks. A gauge
// that could not be read is NaN; it is then left out of the window's averages.
type VertexSample struct {
	// BusyTimeMsPerSecond is busyTimeMsPerSecond aggregated over subtasks with
	// metrics.busy-time.aggregator (Config.BusyTimeAggregator; MAX by default, which makes a
	// skewed vertex count by its busiest subtask).
	BusyTimeMsPerSecond float64
	// BackPressuredTimeMsPerSecond is backPressuredTimeMsPerSecond, averaged over subtasks; a
	// source's rate divided by its unthrottled time is its observed true processing rate.
	BackPressuredTimeMsPerSecond float64
	// RecordsInPerSecond is numRecordsInPerSecond summed over subtasks; for a source, the records
	// it reads from outside the job (its Source__*.numRecordsInPerSecond, or
	// numRecordsOutPerSecond where the source reports no input).
	RecordsInPerSecond float64
	// RecordsOutPerSecond is numRecordsOutPerSecond summed over subtasks.
	RecordsOutPerSecond float64
	// PendingRecords is the source lag (pendingRecords summed over subtasks); HasPendingRecords
	// is false when the source does not report it (then it counts as no lag, as upstream).
	PendingRecords    float64
	HasPendingRecords bool
	// NumRecordsIn, NumRecordsOut and AccumulatedBusyTimeMs are counters accumulated since the
	// job started (the job details' read-records, or the source's numRecordsIn for sources,
	// write-records and accumulated-busy-time). When all the window's samples of a vertex carry
	// them (HasAccumulated), its rates are computed from them as upstream does; otherwise from
	// the per-second gauges, each weighted by the time since the previous sample.
	NumRecordsIn          float64
	NumRecordsOut         float64
	AccumulatedBusyTimeMs float64
	HasAccumulated        bool

	// observedTPR is a source's observed true processing rate (upstream's OBSERVED_TPR),
	// derived by Evaluate from the sample and the ones before it, and stored with the state.
	observedTPR    float64
	hasObservedTPR bool
}

// Sample is one observation of the whole job.
type Sample struct {
	Time     time.Time
	Vertices map[VertexID]VertexSample
	// HeapUsedRatio and GCTimeMsPerSecond are the TaskManagers' max heap usage and GC time; NaN
	// when unknown.
	HeapUsedRatio     float64
	GCTimeMsPerSecond float64
}

// MetricsSource reads a running job's topology and metrics (implemented over the Flink REST API).
// Each autoscaler cycle: state = state.WithJobStart(job's RUNNING time); state = Observe(now,
// sample, state, cfg); result = Evaluate(now, topology, state, cfg); store result.State.
type MetricsSource interface {
	Topology(ctx context.Context, jobID string) (Topology, error)
	Sample(ctx context.Context, jobID string, t Topology) (Sample, error)
}

// ScalingRecord is one past scaling decision for a vertex (upstream's ScalingSummary).
type ScalingRecord struct {
	Time               time.Time
	CurrentParallelism int
	NewParallelism     int
	// Metrics are the evaluated metrics at the decision, by upstream's ScalingMetric name
	// (TRUE_PROCESSING_RATE, EXPECTED_PROCESSING_RATE, TARGET_DATA_RATE, ...).
	Metrics map[string]EvaluatedMetric
}

// EvaluatedMetric is a metric's latest value and its average over the window; either is NaN when
// not meaningful for that metric (upstream's EvaluatedScalingMetric).
type EvaluatedMetric struct {
	Current float64
	Average float64
}

// State is what the autoscaler keeps between observations, stored in the autoscaler-<name>
// ConfigMap.
type State struct {
	// Samples are the collected metrics, oldest first: those within the window plus the newest
	// one at or before its start, so that whether the window is full (the samples span
	// metrics.window) can be told from the samples alone, also after storing and loading them.
	Samples []Sample
	// History is the per-vertex scaling history, oldest first.
	History map[VertexID][]ScalingRecord
	// Overrides are the parallelism overrides currently in force.
	Overrides map[VertexID]int
	// JobStart is the last (re)start or rescale; stabilization and the window start here. Set
	// it with WithJobStart from the job's RUNNING timestamp on every observation.
	JobStart time.Time
	// DelayedScaleDown holds, per vertex, when a scale-down was first wanted (upstream's
	// delayedScaleDown), so it is applied only after scale-down.interval.
	DelayedScaleDown map[VertexID]DelayedScaleDown
	// RestartTimes are observed rescale restart durations (upstream's scalingTracking).
	RestartTimes []RestartRecord
	// Extra keeps ConfigMap entries this package does not interpret (such as upstream's
	// configOverrides from memory tuning) so that encoding does not drop them.
	Extra map[string]string
}

// DelayedScaleDown is a pending scale-down of one vertex (upstream's
// VertexDelayedScaleDownInfo).
type DelayedScaleDown struct {
	FirstTriggered time.Time
	// Recommended holds the recommendations within the scale-down interval with decreasing
	// parallelism, so the first is the highest one recommended in that interval.
	Recommended []RecommendedParallelism
}

// RecommendedParallelism is one scale-down recommendation.
type RecommendedParallelism struct {
	Time         time.Time
	Parallelism  int
	OutsideBound bool
}

// RestartRecord is one rescale with when it started and, once known, how long the job took to run
// again.
type RestartRecord struct {
	Time     time.Time
	Duration time.Duration // 0 while unknown
}

// VertexSummary is the evaluation of one vertex.
type VertexSummary struct {
	ID      VertexID
	Current int
	New     int
	// Metrics are the evaluated metrics with upstream's ScalingMetric names (LOAD,
	// TRUE_PROCESSING_RATE, TARGET_DATA_RATE, CATCH_UP_DATA_RATE, LAG, ...).
	Metrics map[string]float64
}

// Result is the outcome of one evaluation.
type Result struct {
	// State is the state to store: window trimmed, history appended when scaled.
	State State
	// Overrides is the full new set of parallelism overrides; empty means no change.
	Overrides map[VertexID]int
	// Scaled is true when Overrides should be applied.
	Scaled   bool
	Vertices []VertexSummary
	// Reason is the event reason ("ScalingReport") and Message its text in upstream's shape, both
	// empty when there is nothing to report. A recommendation in recommend-only mode
	// (scaling.enabled=false) is reported too, with Scaled false.
	Reason  string
	Message string
	// Warnings explain why a scaling was held back or limited, each with upstream's event
	// reason (IneffectiveScaling, MemoryPressure, ScalingLimited, ...).
	Warnings []Warning
	// Decision explains, per vertex, an evaluation that applied, recommended or held back a
	// change; nil when the evaluation decided nothing (window not full, every vertex within the
	// utilization band).
	Decision *Decision
}

// Warning is a condition worth an event, with upstream's event type for it.
type Warning struct {
	// Type is the event type: EventNormal or EventWarning.
	Type    string
	Reason  string
	Message string
}

// Event types of warnings, as Kubernetes spells them.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// Reason of the event that reports a scaling decision, as upstream.
const ReasonScalingReport = "ScalingReport"

// Config holds the job.autoscaler.* options the autoscaler honours, with upstream's defaults.
type Config struct {
	Enabled         bool          // job.autoscaler.enabled (false)
	ScalingEnabled  bool          // job.autoscaler.scaling.enabled (true); false = recommend only
	MetricsWindow   time.Duration // job.autoscaler.metrics.window (15 min)
	Stabilization   time.Duration // job.autoscaler.stabilization.interval (5 min)
	TargetUtil      float64       // job.autoscaler.utilization.target (0.7)
	UtilMin         float64       // job.autoscaler.utilization.min (target - boundary)
	UtilMax         float64       // job.autoscaler.utilization.max (target + boundary)
	CatchUpDuration time.Duration // job.autoscaler.catch-up.duration (30 min); 0 disables lag catch-up
	RestartTime     time.Duration // job.autoscaler.restart.time (5 min)
	// RestartTimeTracking uses observed restart times (capped by RestartTimeLimit) instead of
	// RestartTime: job.autoscaler.restart.time-tracking.enabled (false) / .limit (15 min).
	RestartTimeTracking bool
	RestartTimeLimit    time.Duration
	ScaleUpMaxFactor    float64       // job.autoscaler.scale-up.max-factor (100000)
	ScaleDownMaxFactor  float64       // job.autoscaler.scale-down.max-factor (0.6)
	ScaleDownInterval   time.Duration // job.autoscaler.scale-down.interval (1 h)
	VertexMinParallel   int           // job.autoscaler.vertex.min-parallelism (1)
	VertexMaxParallel   int           // job.autoscaler.vertex.max-parallelism (200)
	HistoryMaxCount     int           // job.autoscaler.history.max.count (3)
	HistoryMaxAge       time.Duration // job.autoscaler.history.max.age (1 d)
	// EffectivenessDetection blocks further scale-ups of a vertex whose last scale-up achieved
	// less than EffectivenessThreshold of the expected increase:
	// job.autoscaler.scaling.effectiveness.detection.enabled (false) / .threshold (0.1).
	EffectivenessDetection bool
	EffectivenessThreshold float64
	BacklogLagThreshold    time.Duration // job.autoscaler.backlog-processing.lag-threshold (5 min)
	HeapUsageThreshold     float64       // job.autoscaler.memory.heap-usage.threshold (1.0)
	GCPressureThreshold    float64       // job.autoscaler.memory.gc-pressure.threshold (1.0)
	ExcludedVertices       []VertexID    // job.autoscaler.vertex.exclude.ids
	// A source's observed true processing rate (records per unthrottled second, measured while
	// its lag exceeds ObservedTPRLagThreshold of input) replaces the busy-time one when that is
	// more than ObservedTPRSwitchThreshold above it, given ObservedTPRMinObservations:
	// job.autoscaler.observed-true-processing-rate.lag-threshold (30 s), .switch-threshold
	// (0.15), .min-observations (2).
	ObservedTPRLagThreshold    time.Duration
	ObservedTPRSwitchThreshold float64
	ObservedTPRMinObservations int
	// ExcludedPeriods are job.autoscaler.excluded.periods: daily ranges (HH:mm:ss-HH:mm:ss)
	// and/or Quartz cron expressions, in UTC, during which scaling is only recommended.
	ExcludedPeriods    []string
	BusyTimeAggregator string // job.autoscaler.metrics.busy-time.aggregator (MAX)
	// AlignmentMode is job.autoscaler.scaling.parallelism-alignment.mode (BALANCED), or the
	// legacy job.autoscaler.scaling.key-group.partitions.adjust.mode when only that is set.
	AlignmentMode string
}
