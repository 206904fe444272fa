package flink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
)

// The calls and types of this file serve the autoscaler: a job's graph (vertices, their
// parallelism and inputs) and the per-vertex metrics it scales on. The answers are the same
// from Flink 1.18 to 2.x; where a field is newer, it is optional here.

// Float is a number Flink may send as a JSON string: Jackson writes a Java double that is NaN
// or infinite as "NaN", "Infinity" or "-Infinity" (busy time is NaN where a task cannot
// measure it), which a plain float64 field would fail the whole answer on.
type Float float64

// UnmarshalJSON accepts a JSON number, null (NaN) or a string holding a number, NaN or
// [-]Infinity.
func (f *Float) UnmarshalJSON(data []byte) error {
	v, err := parseFlinkFloat(data)
	*f = Float(v)
	return err
}

func parseFlinkFloat(data []byte) (float64, error) {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("null")) {
		return math.NaN(), nil
	}
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return 0, err
		}
		switch s {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", TruncateMessage(s))
		}
		return v, nil
	}
	var v float64
	if err := json.Unmarshal(data, &v); err != nil {
		return 0, err
	}
	return v, nil
}

// VertexIOMetrics are a vertex's counters since its tasks started, summed over its subtasks
// (the "metrics" of a vertex in the job details).
type VertexIOMetrics struct {
	ReadRecords  int64 `json:"read-records"`
	WriteRecords int64 `json:"write-records"`
	// ReadRecordsComplete is false while some subtask's counts are not yet known.
	ReadRecordsComplete  bool `json:"read-records-complete"`
	WriteRecordsComplete bool `json:"write-records-complete"`
	// AccumulatedBusyTimeMs is NaN when a subtask cannot measure its busy time.
	AccumulatedBusyTimeMs          Float `json:"accumulated-busy-time"`
	AccumulatedBackPressuredTimeMs int64 `json:"accumulated-backpressured-time"`
	AccumulatedIdleTimeMs          int64 `json:"accumulated-idle-time"`
}

// JobPlan is a job's graph as Flink plans it (the "plan" of the job details, or
// GET /jobs/:jobid/plan).
type JobPlan struct {
	JobID string        `json:"jid"`
	Name  string        `json:"name"`
	Type  string        `json:"type,omitempty"`
	Nodes []JobPlanNode `json:"nodes"`
}

// JobPlanNode is one vertex of a job plan.
type JobPlanNode struct {
	ID          string `json:"id"`
	Parallelism int    `json:"parallelism"`
	// Description names the vertex's operators (HTML-ish in some versions).
	Description string         `json:"description"`
	Operator    string         `json:"operator"`
	Inputs      []JobPlanInput `json:"inputs"`
}

// JobPlanInput is an edge into a plan node.
type JobPlanInput struct {
	Num int    `json:"num"`
	ID  string `json:"id"`
	// ShipStrategy is how records are distributed: HASH (keyed), FORWARD, REBALANCE,
	// RESCALE, BROADCAST, GLOBAL, ...
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

// ShipHash is the ship strategy of a keyed edge.
const ShipHash = "HASH"

// JobPlan decodes the plan the job details carry. KindMalformed when it is missing or not a
// plan, or when a node or input has an id that is not a Flink id.
func (d *JobDetails) JobPlan() (*JobPlan, error) {
	const op = "read job plan"
	raw := bytes.TrimSpace(d.Plan)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, &Error{Kind: KindMalformed, Op: op, Message: "the job details carry no plan"}
	}
	plan := &JobPlan{}
	if err := json.Unmarshal(raw, plan); err != nil {
		return nil, &Error{Kind: KindMalformed, Op: op, Message: fmt.Sprintf("cannot decode plan %s", abbreviate(raw)), Err: err}
	}
	if err := plan.validate(op); err != nil {
		return nil, err
	}
	return plan, nil
}

// JobPlan returns a job's plan (GET /jobs/:jobid/plan); KindNotFound for an unknown job.
func (c *Client) JobPlan(ctx context.Context, jobID string) (*JobPlan, error) {
	const op = "get job plan"
	p, err := jobPath(op, jobID, "plan")
	if err != nil {
		return nil, err
	}
	var out struct {
		Plan *JobPlan `json:"plan"`
	}
	if err := c.do(ctx, request{op: op, method: http.MethodGet, route: "/jobs/:jobid/plan", path: p}, &out); err != nil {
		return nil, err
	}
	if out.Plan == nil {
		return nil, &Error{Kind: KindMalformed, Op: op, Message: "the answer carries no plan"}
	}
	return out.Plan, out.Plan.validate(op)
}

// validate rejects ids that are not Flink ids: they end up in metric paths and in the
// pipeline.jobvertex-parallelism-overrides the operator writes.
func (p *JobPlan) validate(op string) error {
	for _, n := range p.Nodes {
		if !IsValidID(n.ID) {
			return &Error{Kind: KindMalformed, Op: op, Message: fmt.Sprintf("plan node id %q is not 32 hex characters", TruncateMessage(n.ID))}
		}
		for _, in := range n.Inputs {
			if !IsValidID(in.ID) {
				return &Error{Kind: KindMalformed, Op: op, Message: fmt.Sprintf("input %q of plan node %s is not 32 hex characters", TruncateMessage(in.ID), n.ID)}
			}
		}
	}
	return nil
}

// UnmarshalJSON reads an aggregate Flink sent as a number, or as a string when it is NaN or
// infinite (see Float), so one such subtask does not fail the whole answer.
func (m *AggregatedMetric) UnmarshalJSON(data []byte) error {
	var raw struct {
		ID   string          `json:"id"`
		Min  json.RawMessage `json:"min"`
		Max  json.RawMessage `json:"max"`
		Avg  json.RawMessage `json:"avg"`
		Sum  json.RawMessage `json:"sum"`
		Skew json.RawMessage `json:"skew"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := AggregatedMetric{ID: raw.ID}
	for _, f := range []struct {
		raw json.RawMessage
		dst **float64
	}{{raw.Min, &out.Min}, {raw.Max, &out.Max}, {raw.Avg, &out.Avg}, {raw.Sum, &out.Sum}, {raw.Skew, &out.Skew}} {
		if len(f.raw) == 0 {
			continue
		}
		v, err := parseFlinkFloat(f.raw)
		if err != nil {
			return fmt.Errorf("metric %q: %w", TruncateMessage(raw.ID), err)
		}
		*f.dst = &v
	}
	*m = out
	return nil
}
