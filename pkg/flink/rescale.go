package flink

import (
	"context"
	"net/http"
)

// ParallelismBounds are the bounds the adaptive scheduler keeps a vertex's parallelism in.
type ParallelismBounds struct {
	LowerBound int `json:"lowerBound"`
	UpperBound int `json:"upperBound"`
}

// VertexResources are the resource requirements of one job vertex.
type VertexResources struct {
	Parallelism ParallelismBounds `json:"parallelism"`
}

// ResourceRequirements returns the per-vertex parallelism bounds of a job
// (GET /jobs/:jobid/resource-requirements, Flink 1.18+, adaptive scheduler only).
func (c *Client) ResourceRequirements(ctx context.Context, jobID string) (map[string]VertexResources, error) {
	const op = "get resource requirements"
	if _, err := c.requireVersion(ctx, op, 1, 18); err != nil {
		return nil, err
	}
	p, err := jobPath(op, jobID, "resource-requirements")
	if err != nil {
		return nil, err
	}
	out := map[string]VertexResources{}
	return out, c.do(ctx, request{op: op, method: http.MethodGet, route: "/jobs/:jobid/resource-requirements", path: p}, &out)
}

// SetResourceRequirements rescales a running job in place by changing its per-vertex
// parallelism bounds (PUT /jobs/:jobid/resource-requirements, Flink 1.18+, adaptive
// scheduler only; PATCH /jobs/:jobid/rescaling always answers 503).
func (c *Client) SetResourceRequirements(ctx context.Context, jobID string, reqs map[string]VertexResources) error {
	const op = "set resource requirements"
	if _, err := c.requireVersion(ctx, op, 1, 18); err != nil {
		return err
	}
	p, err := jobPath(op, jobID, "resource-requirements")
	if err != nil {
		return err
	}
	return c.do(ctx, request{op: op, method: http.MethodPut, route: "/jobs/:jobid/resource-requirements", path: p, body: reqs}, nil)
}
