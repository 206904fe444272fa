package fakeflink

import (
	"math"
	"net/http"
	"sort"
	"strings"
)

// This file scripts what the autoscaler reads: a job's graph (GET /jobs/:id and its plan), the
// vertices' aggregated subtask metrics and counters, and the TaskManagers' metrics.

// GraphVertex is one vertex of a scripted job graph.
type GraphVertex struct {
	ID, Name                    string
	Parallelism, MaxParallelism int
	// Inputs are the ids of the vertices feeding this one; Keyed makes them HASH edges
	// (otherwise REBALANCE).
	Inputs []string
	Keyed  bool
}

// Aggregate is a metric's aggregates over a vertex's subtasks (or over TaskManagers). NaN is
// sent as Flink sends it, the string "NaN".
type Aggregate struct {
	Min, Max, Avg, Sum float64
}

// Uniform is the aggregate of parallelism subtasks that all report v.
func Uniform(v float64, parallelism int) Aggregate {
	return Aggregate{Min: v, Max: v, Avg: v, Sum: v * float64(parallelism)}
}

// counters are a vertex's accumulated counters (the job details' "metrics").
type counters struct {
	readRecords, writeRecords int64
	busyMs                    float64
}

// graphs are the scripted job graphs and metrics, by job id.
type graphs struct {
	vertices map[string][]GraphVertex
	// metrics by job, vertex and metric id; counters by job and vertex.
	metrics  map[string]map[string]map[string]Aggregate
	counters map[string]map[string]counters
	tm       map[string]Aggregate
	// held are the parallelisms reported by job and vertex while a rescale is held (HoldRescale).
	held map[string]map[string]int
}

func (s *Server) graphsLocked() *graphs {
	if s.graphs == nil {
		s.graphs = &graphs{vertices: map[string][]GraphVertex{}, metrics: map[string]map[string]map[string]Aggregate{},
			counters: map[string]map[string]counters{}, tm: map[string]Aggregate{}}
	}
	return s.graphs
}

// SetJobGraph gives a job its vertices: GET /jobs/:id reports them with a plan, and their
// metrics are served. A vertex's parallelism follows the adaptive scheduler's upper bound
// once resource requirements are set (an in-place rescale).
func (s *Server) SetJobGraph(jobID string, vertices []GraphVertex) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.graphsLocked().vertices[jobID] = append([]GraphVertex(nil), vertices...)
}

// SetVertexMetrics sets (adds to) a vertex's aggregated subtask metrics by metric id, e.g.
// "busyTimeMsPerSecond" or "Source__src.pendingRecords".
func (s *Server) SetVertexMetrics(jobID, vertexID string, metrics map[string]Aggregate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.graphsLocked()
	if g.metrics[jobID] == nil {
		g.metrics[jobID] = map[string]map[string]Aggregate{}
	}
	if g.metrics[jobID][vertexID] == nil {
		g.metrics[jobID][vertexID] = map[string]Aggregate{}
	}
	for id, a := range metrics {
		g.metrics[jobID][vertexID][id] = a
	}
}

// SetVertexCounters sets a vertex's accumulated counters: records read and written and busy
// milliseconds since the job started.
func (s *Server) SetVertexCounters(jobID, vertexID string, readRecords, writeRecords int64, busyMs float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.graphsLocked()
	if g.counters[jobID] == nil {
		g.counters[jobID] = map[string]counters{}
	}
	g.counters[jobID][vertexID] = counters{readRecords: readRecords, writeRecords: writeRecords, busyMs: busyMs}
}

// SetTaskManagerMetrics sets (adds to) the aggregates GET /taskmanagers/metrics reports.
func (s *Server) SetTaskManagerMetrics(metrics map[string]Aggregate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, a := range metrics {
		s.graphsLocked().tm[id] = a
	}
}

// serveGraph answers the requests of a scripted graph; false leaves the request to serve.
func (s *Server) serveGraph(w http.ResponseWriter, r *http.Request, parts []string) bool {
	if r.Method != http.MethodGet {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.graphsLocked()
	switch {
	case r.URL.Path == "/taskmanagers/metrics":
		writeJSON(w, 200, aggregates(g.tm, r))
		return true
	case len(parts) < 2 || parts[0] != "jobs" || g.vertices[parts[1]] == nil:
		return false
	}
	jobID := parts[1]
	switch {
	case len(parts) == 2:
		state, ok := s.jobs[jobID]
		if !ok {
			return false
		}
		writeJSON(w, 200, map[string]any{"jid": jobID, "name": "fake", "state": state, "start-time": 1,
			"timestamps": map[string]int64{"RUNNING": s.runningSinceLocked(jobID)}, "vertices": s.graphVerticesLocked(jobID), "plan": s.planLocked(jobID)})
	case len(parts) == 3 && parts[2] == "plan":
		writeJSON(w, 200, map[string]any{"plan": s.planLocked(jobID)})
	case len(parts) == 6 && parts[2] == "vertices" && parts[4] == "subtasks" && parts[5] == "metrics":
		writeJSON(w, 200, aggregates(g.metrics[jobID][parts[3]], r))
	default:
		return false
	}
	return true
}

// HoldRescale makes a job's details report each vertex's parallelism as it is now, whatever
// resource requirements are set meanwhile (real Flink's adaptive scheduler waiting for slots);
// ReleaseRescale lets them follow the requirements again.
func (s *Server) HoldRescale(jobID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.graphsLocked()
	if g.held == nil {
		g.held = map[string]map[string]int{}
	}
	now := map[string]int{}
	for _, v := range g.vertices[jobID] {
		now[v.ID] = s.parallelismLocked(jobID, v)
	}
	g.held[jobID] = now
}

// ReleaseRescale ends HoldRescale: the job's vertices report the parallelism asked for.
func (s *Server) ReleaseRescale(jobID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.graphsLocked().held, jobID)
}

func (s *Server) parallelismLocked(jobID string, v GraphVertex) int {
	if p, ok := s.graphs.held[jobID][v.ID]; ok {
		return p
	}
	if req, ok := s.requirements[jobID][v.ID]; ok {
		return req["parallelism"]["upperBound"]
	}
	return v.Parallelism
}

func (s *Server) graphVerticesLocked(jobID string) []map[string]any {
	var out []map[string]any
	for _, v := range s.graphs.vertices[jobID] {
		c := s.graphs.counters[jobID][v.ID]
		out = append(out, map[string]any{"id": v.ID, "name": v.Name, "parallelism": s.parallelismLocked(jobID, v),
			"maxParallelism": v.MaxParallelism, "status": "RUNNING", "metrics": map[string]any{
				"read-records": c.readRecords, "write-records": c.writeRecords, "read-records-complete": true,
				"write-records-complete": true, "accumulated-busy-time": number(c.busyMs)}})
	}
	return out
}

func (s *Server) planLocked(jobID string) map[string]any {
	var nodes []map[string]any
	for _, v := range s.graphs.vertices[jobID] {
		inputs := []map[string]any{}
		for i, in := range v.Inputs {
			ship := "REBALANCE"
			if v.Keyed {
				ship = "HASH"
			}
			inputs = append(inputs, map[string]any{"num": i, "id": in, "ship_strategy": ship, "exchange": "pipelined_bounded"})
		}
		nodes = append(nodes, map[string]any{"id": v.ID, "parallelism": s.parallelismLocked(jobID, v), "operator": "",
			"description": v.Name, "inputs": inputs})
	}
	return map[string]any{"jid": jobID, "name": "fake", "type": "STREAMING", "nodes": nodes}
}

// aggregates answers an aggregating metrics endpoint: the ids asked for with ?get (all ids,
// without values, when none are asked for) and the aggregates asked for with ?agg (all).
func aggregates(metrics map[string]Aggregate, r *http.Request) []map[string]any {
	out := []map[string]any{}
	get := r.URL.Query().Get("get")
	if get == "" {
		ids := make([]string, 0, len(metrics))
		for id := range metrics {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			out = append(out, map[string]any{"id": id})
		}
		return out
	}
	aggs := map[string]bool{"min": true, "max": true, "avg": true, "sum": true}
	if a := r.URL.Query().Get("agg"); a != "" {
		aggs = map[string]bool{}
		for _, name := range strings.Split(a, ",") {
			aggs[name] = true
		}
	}
	for _, id := range strings.Split(get, ",") {
		m, ok := metrics[id]
		if !ok {
			continue
		}
		entry := map[string]any{"id": id}
		for name, v := range map[string]float64{"min": m.Min, "max": m.Max, "avg": m.Avg, "sum": m.Sum} {
			if aggs[name] {
				entry[name] = number(v)
			}
		}
		out = append(out, entry)
	}
	return out
}

// number is v as Flink's Jackson writes a double: NaN and infinities as strings.
func number(v float64) any {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return v
}
