package flink

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// ClusterOverview is GET /overview.
type ClusterOverview struct {
	TaskManagers   int    `json:"taskmanagers"`
	SlotsTotal     int    `json:"slots-total"`
	SlotsAvailable int    `json:"slots-available"`
	JobsRunning    int    `json:"jobs-running"`
	JobsFinished   int    `json:"jobs-finished"`
	JobsCancelled  int    `json:"jobs-cancelled"`
	JobsFailed     int    `json:"jobs-failed"`
	FlinkVersion   string `json:"flink-version"`
	FlinkCommit    string `json:"flink-commit"`
}

// Overview returns the cluster overview (task managers, slots, job counts).
func (c *Client) Overview(ctx context.Context) (*ClusterOverview, error) {
	out := &ClusterOverview{}
	return out, c.do(ctx, request{op: "get cluster overview", method: http.MethodGet, route: "/overview", path: "/overview"}, out)
}

// DashboardConfig is GET /config.
type DashboardConfig struct {
	RefreshInterval int64  `json:"refresh-interval"`
	TimezoneName    string `json:"timezone-name"`
	TimezoneOffset  int64  `json:"timezone-offset"`
	FlinkVersion    string `json:"flink-version"`
	FlinkRevision   string `json:"flink-revision"`
	Features        struct {
		WebSubmit  bool `json:"web-submit"`
		WebCancel  bool `json:"web-cancel"`
		WebRescale bool `json:"web-rescale"`
		WebHistory bool `json:"web-history"`
	} `json:"features"`
}

// Config returns the dashboard configuration: version, revision, and whether jar
// submission is served (false on application clusters).
func (c *Client) Config(ctx context.Context) (*DashboardConfig, error) {
	out := &DashboardConfig{}
	if err := c.do(ctx, request{op: "get config", method: http.MethodGet, route: "/config", path: "/config"}, out); err != nil {
		return out, err
	}
	// The answer carries the version, which later calls of this client would ask for again.
	if v, err := ParseVersion(out.FlinkVersion); err == nil {
		c.versionMu.Lock()
		if c.version == nil {
			c.version = &v
		}
		c.versionMu.Unlock()
	}
	return out, nil
}

type keyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// JobManagerConfig returns the effective cluster configuration (GET /jobmanager/config).
func (c *Client) JobManagerConfig(ctx context.Context) (map[string]string, error) {
	var kvs []keyValue
	if err := c.do(ctx, request{op: "get jobmanager config", method: http.MethodGet,
		route: "/jobmanager/config", path: "/jobmanager/config"}, &kvs); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.Key] = kv.Value
	}
	return out, nil
}

// TaskManager is one entry of GET /taskmanagers.
type TaskManager struct {
	ID                     string `json:"id"`
	Path                   string `json:"path"`
	DataPort               int    `json:"dataPort"`
	TimeSinceLastHeartbeat int64  `json:"timeSinceLastHeartbeat"`
	SlotsNumber            int    `json:"slotsNumber"`
	FreeSlots              int    `json:"freeSlots"`
	Blocked                bool   `json:"blocked"`
	Hardware               struct {
		CPUCores       int   `json:"cpuCores"`
		PhysicalMemory int64 `json:"physicalMemory"`
		FreeMemory     int64 `json:"freeMemory"`
		ManagedMemory  int64 `json:"managedMemory"`
	} `json:"hardware"`
}

// TaskManagers lists the registered task managers.
func (c *Client) TaskManagers(ctx context.Context) ([]TaskManager, error) {
	var out struct {
		TaskManagers []TaskManager `json:"taskmanagers"`
	}
	err := c.do(ctx, request{op: "list taskmanagers", method: http.MethodGet, route: "/taskmanagers", path: "/taskmanagers"}, &out)
	return out.TaskManagers, err
}

// ShutdownCluster stops the whole cluster (DELETE /cluster); the JobManager process exits.
func (c *Client) ShutdownCluster(ctx context.Context) error {
	return c.do(ctx, request{op: "shut down cluster", method: http.MethodDelete, route: "/cluster", path: "/cluster"}, nil)
}

// Metric is one value of a metrics endpoint.
type Metric struct {
	ID    string `json:"id"`
	Value string `json:"value"`
}

// AggregatedMetric is one value of an aggregating metrics endpoint; absent aggregates are nil.
type AggregatedMetric struct {
	ID   string   `json:"id"`
	Min  *float64 `json:"min,omitempty"`
	Max  *float64 `json:"max,omitempty"`
	Avg  *float64 `json:"avg,omitempty"`
	Sum  *float64 `json:"sum,omitempty"`
	Skew *float64 `json:"skew,omitempty"`
}

// JobManagerMetrics returns JobManager metrics by name (GET /jobmanager/metrics?get=...).
// With no names it lists the available metric ids (values empty). Flink answers with a bare
// JSON array, not the object its OpenAPI spec shows.
func (c *Client) JobManagerMetrics(ctx context.Context, names ...string) (map[string]string, error) {
	return c.metrics(ctx, "get jobmanager metrics", "/jobmanager/metrics", "/jobmanager/metrics", names)
}

// JobMetrics returns job-level metrics by name (GET /jobs/:jobid/metrics?get=...), such as
// numRestarts and numberOfCompletedCheckpoints.
func (c *Client) JobMetrics(ctx context.Context, jobID string, names ...string) (map[string]string, error) {
	const op = "get job metrics"
	p, err := jobPath(op, jobID, "metrics")
	if err != nil {
		return nil, err
	}
	return c.metrics(ctx, op, "/jobs/:jobid/metrics", p, names)
}

// JobVertexMetrics returns metrics of one vertex (ids prefixed with the subtask index, e.g.
// "0.numRecordsIn").
func (c *Client) JobVertexMetrics(ctx context.Context, jobID, vertexID string, names ...string) (map[string]string, error) {
	const op = "get vertex metrics"
	p, err := jobPath(op, jobID, "vertices", vertexID, "metrics")
	if err != nil {
		return nil, err
	}
	return c.metrics(ctx, op, "/jobs/:jobid/vertices/:vertexid/metrics", p, names)
}

func (c *Client) metrics(ctx context.Context, op, route, path string, names []string) (map[string]string, error) {
	q := url.Values{}
	if len(names) > 0 {
		q.Set("get", strings.Join(names, ","))
	}
	var list []Metric
	if err := c.do(ctx, request{op: op, method: http.MethodGet, route: route, path: path, query: q}, &list); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list))
	for _, m := range list {
		out[m.ID] = m.Value
	}
	return out, nil
}

// Aggregation names of the aggregating metrics endpoints (skew needs Flink 1.20+).
const (
	AggMin  = "min"
	AggMax  = "max"
	AggAvg  = "avg"
	AggSum  = "sum"
	AggSkew = "skew"
)

// SubtaskMetrics aggregates metrics over a vertex's subtasks
// (GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics?get=...&agg=...).
func (c *Client) SubtaskMetrics(ctx context.Context, jobID, vertexID string, names, aggs []string) ([]AggregatedMetric, error) {
	const op = "get subtask metrics"
	p, err := jobPath(op, jobID, "vertices", vertexID, "subtasks", "metrics")
	if err != nil {
		return nil, err
	}
	return c.aggregatedMetrics(ctx, op, "/jobs/:jobid/vertices/:vertexid/subtasks/metrics", p, names, aggs)
}

// TaskManagersMetrics aggregates metrics over all task managers (GET /taskmanagers/metrics).
func (c *Client) TaskManagersMetrics(ctx context.Context, names, aggs []string) ([]AggregatedMetric, error) {
	return c.aggregatedMetrics(ctx, "get taskmanager metrics", "/taskmanagers/metrics", "/taskmanagers/metrics", names, aggs)
}

func (c *Client) aggregatedMetrics(ctx context.Context, op, route, path string, names, aggs []string) ([]AggregatedMetric, error) {
	q := url.Values{}
	if len(names) > 0 {
		q.Set("get", strings.Join(names, ","))
	}
	if len(aggs) > 0 {
		q.Set("agg", strings.Join(aggs, ","))
	}
	var out []AggregatedMetric
	return out, c.do(ctx, request{op: op, method: http.MethodGet, route: route, path: path, query: q}, &out)
}
