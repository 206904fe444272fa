// Package flinkmetrics collects what the autoscaler decides on from a JobManager's REST API: the
// job graph (vertices, parallelism, max parallelism, inputs) and, per observation, each vertex's
// busy and back-pressured time, record rates and counters, the sources' pending records, and the
// TaskManagers' heap usage and GC time. It implements autoscaler.MetricsSource on pkg/flink and
// knows Flink's metric names; it knows nothing of Kubernetes.
package flinkmetrics

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/flink"
)

// Client is the part of *flink.Client the collection calls.
type Client interface {
	JobDetails(ctx context.Context, jobID string) (*flink.JobDetails, error)
	SubtaskMetrics(ctx context.Context, jobID, vertexID string, names, aggs []string) ([]flink.AggregatedMetric, error)
	TaskManagersMetrics(ctx context.Context, names, aggs []string) ([]flink.AggregatedMetric, error)
}

// Flink's metric names (task level unless said otherwise), as the JobManager reports them.
const (
	MetricBusyTime          = "busyTimeMsPerSecond"
	MetricBackPressuredTime = "backPressuredTimeMsPerSecond"
	MetricRecordsInRate     = "numRecordsInPerSecond"
	MetricRecordsOutRate    = "numRecordsOutPerSecond"
	// Operator-level metrics of a source are prefixed with its operator's name,
	// "Source__<name>." (Flink replaces characters metric names cannot carry).
	sourceOperatorPrefix = "Source__"
	suffixPendingRecords = ".pendingRecords"
	suffixRecordsIn      = ".numRecordsIn"
	suffixRecordsOut     = ".numRecordsOut"
	suffixRecordsInRate  = ".numRecordsInPerSecond"
	suffixRecordsOutRate = ".numRecordsOutPerSecond"

	MetricHeapUsed = "Status.JVM.Memory.Heap.Used"
	MetricHeapMax  = "Status.JVM.Memory.Heap.Max"
	// MetricGCTime is the TaskManagers' GC time per second over all collectors (Flink 1.19+;
	// older versions have no such metric and the sample's GC time is NaN).
	MetricGCTime = "Status.JVM.GarbageCollector.All.TimeMsPerSecond"
)

// Source reads a job's topology and metrics. It keeps no state between calls.
type Source struct {
	client Client
	now    func() time.Time
}

var _ autoscaler.MetricsSource = (*Source)(nil)

// New returns a Source over a JobManager client.
func New(c Client) *Source { return &Source{client: c, now: time.Now} }

// WithClock returns a copy that stamps samples with now (for tests).
func (s *Source) WithClock(now func() time.Time) *Source { return &Source{client: s.client, now: now} }

// Topology reads the job graph from the job details: the vertices with their parallelism
// and max parallelism, and from the plan their inputs and whether an input is keyed.
func (s *Source) Topology(ctx context.Context, jobID string) (autoscaler.Topology, error) {
	d, err := s.client.JobDetails(ctx, jobID)
	if err != nil {
		return autoscaler.Topology{}, fmt.Errorf("read the topology of job %s: %w", jobID, err)
	}
	return TopologyOf(d)
}

// TopologyOf builds the topology from job details already read.
func TopologyOf(d *flink.JobDetails) (autoscaler.Topology, error) {
	plan, err := d.JobPlan()
	if err != nil {
		return autoscaler.Topology{}, fmt.Errorf("read the topology of job %s: %w", d.ID, err)
	}
	inputs := make(map[string][]flink.JobPlanInput, len(plan.Nodes))
	for _, n := range plan.Nodes {
		inputs[n.ID] = n.Inputs
	}
	t := autoscaler.Topology{Vertices: make([]autoscaler.Vertex, 0, len(d.Vertices))}
	for _, v := range d.Vertices {
		if !flink.IsValidID(v.ID) {
			return autoscaler.Topology{}, fmt.Errorf("read the topology of job %s: vertex id %q is not 32 hex characters",
				d.ID, flink.TruncateMessage(v.ID))
		}
		in, planned := inputs[v.ID]
		if !planned {
			return autoscaler.Topology{}, fmt.Errorf("read the topology of job %s: vertex %s (%s) is not in the job's plan",
				d.ID, v.ID, flink.TruncateMessage(v.Name))
		}
		if v.Parallelism < 1 {
			return autoscaler.Topology{}, fmt.Errorf("read the topology of job %s: vertex %s has parallelism %d, want >= 1",
				d.ID, v.ID, v.Parallelism)
		}
		vertex := autoscaler.Vertex{ID: autoscaler.VertexID(v.ID), Name: v.Name, Parallelism: v.Parallelism,
			MaxParallelism: v.MaxParallelism, Source: len(in) == 0}
		for _, e := range in {
			vertex.Inputs = append(vertex.Inputs, autoscaler.VertexID(e.ID))
			if e.ShipStrategy == flink.ShipHash {
				vertex.HashInput = true
			}
		}
		t.Vertices = append(t.Vertices, vertex)
	}
	return t, nil
}

// Sample reads one observation of every vertex of t: from the job details the vertices'
// counters, and per vertex one aggregated subtask-metrics call (sources one more, to find
// their operator's metric names), and one TaskManager-metrics call.
func (s *Source) Sample(ctx context.Context, jobID string, t autoscaler.Topology) (autoscaler.Sample, error) {
	d, err := s.client.JobDetails(ctx, jobID)
	if err != nil {
		return autoscaler.Sample{}, fmt.Errorf("sample job %s: %w", jobID, err)
	}
	io := make(map[string]*flink.VertexIOMetrics, len(d.Vertices))
	for _, v := range d.Vertices {
		io[v.ID] = v.Metrics
	}
	out := autoscaler.Sample{Time: s.now(), Vertices: make(map[autoscaler.VertexID]autoscaler.VertexSample, len(t.Vertices))}
	for _, v := range t.Vertices {
		vs, err := s.sampleVertex(ctx, jobID, v, io[string(v.ID)])
		if err != nil {
			return autoscaler.Sample{}, fmt.Errorf("sample job %s: %w", jobID, err)
		}
		out.Vertices[v.ID] = vs
	}
	out.HeapUsedRatio, out.GCTimeMsPerSecond, err = s.taskManagers(ctx)
	if err != nil {
		return autoscaler.Sample{}, fmt.Errorf("sample job %s: %w", jobID, err)
	}
	return out, nil
}

// sourceMetrics are the operator-level metric ids of a source vertex, "" when absent.
type sourceMetrics struct {
	pending, in, out, inRate, outRate []string
}

func (s *Source) sampleVertex(ctx context.Context, jobID string, v autoscaler.Vertex, io *flink.VertexIOMetrics) (autoscaler.VertexSample, error) {
	names := []string{MetricBusyTime, MetricBackPressuredTime, MetricRecordsInRate, MetricRecordsOutRate}
	var src sourceMetrics
	if v.Source {
		// A source's lag and input are operator metrics under its operator's name: list the
		// vertex's metric ids to find them.
		ids, err := s.client.SubtaskMetrics(ctx, jobID, string(v.ID), nil, nil)
		if err != nil {
			return autoscaler.VertexSample{}, fmt.Errorf("list the metrics of vertex %s: %w", v.ID, err)
		}
		src = findSourceMetrics(ids)
		for _, group := range [][]string{src.pending, src.in, src.out, src.inRate, src.outRate} {
			names = append(names, group...)
		}
	}
	aggs, err := s.client.SubtaskMetrics(ctx, jobID, string(v.ID), names, []string{flink.AggMax, flink.AggSum})
	if err != nil {
		return autoscaler.VertexSample{}, fmt.Errorf("read the metrics of vertex %s: %w", v.ID, err)
	}
	byID := make(map[string]flink.AggregatedMetric, len(aggs))
	for _, a := range aggs {
		byID[a.ID] = a
	}
	vs := autoscaler.VertexSample{
		BusyTimeMsPerSecond:          value(byID, flink.AggMax, MetricBusyTime),
		BackPressuredTimeMsPerSecond: value(byID, flink.AggMax, MetricBackPressuredTime),
		RecordsInPerSecond:           value(byID, flink.AggSum, MetricRecordsInRate),
		RecordsOutPerSecond:          value(byID, flink.AggSum, MetricRecordsOutRate),
	}
	if io != nil {
		vs.NumRecordsIn, vs.NumRecordsOut = float64(io.ReadRecords), float64(io.WriteRecords)
		vs.AccumulatedBusyTimeMs = float64(io.AccumulatedBusyTimeMs)
		vs.HasAccumulated = !math.IsNaN(vs.AccumulatedBusyTimeMs) && io.ReadRecordsComplete && io.WriteRecordsComplete
	}
	if v.Source {
		if len(src.pending) > 0 {
			vs.PendingRecords = value(byID, flink.AggSum, src.pending...)
			vs.HasPendingRecords = !math.IsNaN(vs.PendingRecords)
		}
		// A source's task has no network input: what it reads is its operator's numRecordsIn.
		// Readers that do not count their input leave that at zero; their output is then the
		// best measure of what they read.
		vs.RecordsInPerSecond = firstPositive(value(byID, flink.AggSum, src.inRate...), value(byID, flink.AggSum, src.outRate...))
		if vs.HasAccumulated {
			in := firstPositive(value(byID, flink.AggSum, src.in...), value(byID, flink.AggSum, src.out...))
			vs.NumRecordsIn = in
			vs.HasAccumulated = !math.IsNaN(in)
		}
	}
	return vs, nil
}

func findSourceMetrics(ids []flink.AggregatedMetric) sourceMetrics {
	var m sourceMetrics
	for _, a := range ids {
		id := a.ID
		switch {
		case strings.HasSuffix(id, suffixPendingRecords):
			// Any operator of the vertex may report lag; only sources do.
			m.pending = append(m.pending, id)
		case !strings.HasPrefix(id, sourceOperatorPrefix):
		case strings.HasSuffix(id, suffixRecordsIn):
			m.in = append(m.in, id)
		case strings.HasSuffix(id, suffixRecordsOut):
			m.out = append(m.out, id)
		case strings.HasSuffix(id, suffixRecordsInRate):
			m.inRate = append(m.inRate, id)
		case strings.HasSuffix(id, suffixRecordsOutRate):
			m.outRate = append(m.outRate, id)
		}
	}
	return m
}

// value sums one aggregate of the named metrics; NaN when none of them was reported.
func value(byID map[string]flink.AggregatedMetric, agg string, names ...string) float64 {
	sum, found := 0.0, false
	for _, n := range names {
		a, ok := byID[n]
		if !ok {
			continue
		}
		var p *float64
		switch agg {
		case flink.AggMax:
			p = a.Max
		case flink.AggSum:
			p = a.Sum
		}
		if p == nil {
			continue
		}
		sum, found = sum+*p, true
	}
	if !found {
		return math.NaN()
	}
	return sum
}

// firstPositive returns a when it is a positive number, else b.
func firstPositive(a, b float64) float64 {
	if a > 0 {
		return a
	}
	return b
}

// taskManagers reads the TaskManagers' highest heap usage ratio and GC time per second; NaN
// for what the cluster does not report.
func (s *Source) taskManagers(ctx context.Context) (heapRatio, gcMsPerSecond float64, err error) {
	aggs, err := s.client.TaskManagersMetrics(ctx, []string{MetricHeapUsed, MetricHeapMax, MetricGCTime}, []string{flink.AggMax})
	if err != nil {
		return 0, 0, fmt.Errorf("read the TaskManagers' metrics: %w", err)
	}
	byID := make(map[string]flink.AggregatedMetric, len(aggs))
	for _, a := range aggs {
		byID[a.ID] = a
	}
	used, heapMax := value(byID, flink.AggMax, MetricHeapUsed), value(byID, flink.AggMax, MetricHeapMax)
	heapRatio = math.NaN()
	if heapMax > 0 {
		heapRatio = used / heapMax
	}
	return heapRatio, value(byID, flink.AggMax, MetricGCTime), nil
}
