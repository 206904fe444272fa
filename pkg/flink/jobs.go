package flink

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// JobState is a Flink job state as the REST API reports it.
type JobState string

// Flink job states.
const (
	JobInitializing JobState = "INITIALIZING"
	JobCreated      JobState = "CREATED"
	JobRunning      JobState = "RUNNING"
	JobFailing      JobState = "FAILING"
	JobFailed       JobState = "FAILED"
	JobCancelling   JobState = "CANCELLING"
	JobCanceled     JobState = "CANCELED"
	JobFinished     JobState = "FINISHED"
	JobRestarting   JobState = "RESTARTING"
	JobSuspended    JobState = "SUSPENDED"
	JobReconciling  JobState = "RECONCILING"
)

// IsGloballyTerminal reports whether the job can never run again in this cluster.
func (s JobState) IsGloballyTerminal() bool {
	return s == JobFailed || s == JobCanceled || s == JobFinished
}

// JobOverview is one entry of GET /jobs/overview.
type JobOverview struct {
	ID               string   `json:"jid"`
	Name             string   `json:"name"`
	State            JobState `json:"state"`
	StartTime        int64    `json:"start-time"`
	EndTime          int64    `json:"end-time"` // -1 while running
	Duration         int64    `json:"duration"`
	LastModification int64    `json:"last-modification"`
}

// JobsOverview lists all jobs of the cluster.
func (c *Client) JobsOverview(ctx context.Context) ([]JobOverview, error) {
	var out struct {
		Jobs []JobOverview `json:"jobs"`
	}
	err := c.do(ctx, request{op: "list jobs", method: http.MethodGet, route: "/jobs/overview", path: "/jobs/overview"}, &out)
	return out.Jobs, err
}

// JobVertex is one vertex of a job's details.
type JobVertex struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"maxParallelism"`
	Status         string `json:"status"`
	// Metrics are the vertex's counters; nil when the JobManager sent none.
	Metrics *VertexIOMetrics `json:"metrics,omitempty"`
}

// JobDetails is GET /jobs/:jobid.
type JobDetails struct {
	ID             string             `json:"jid"`
	Name           string             `json:"name"`
	State          JobState           `json:"state"`
	IsStoppable    bool               `json:"isStoppable"`
	StartTime      int64              `json:"start-time"`
	EndTime        int64              `json:"end-time"`
	Duration       int64              `json:"duration"`
	MaxParallelism int                `json:"maxParallelism"`
	Now            int64              `json:"now"`
	Timestamps     map[JobState]int64 `json:"timestamps"`
	Vertices       []JobVertex        `json:"vertices"`
	// Plan is the job graph as Flink sends it (raw JSON).
	Plan json.RawMessage `json:"plan"`
}

// AllTasksRunning reports whether every vertex of the job runs. A job is RUNNING before its
// tasks are deployed, and snapshots triggered before then fail.
func (d *JobDetails) AllTasksRunning() bool {
	if len(d.Vertices) == 0 {
		return false
	}
	for _, v := range d.Vertices {
		if v.Status != string(JobRunning) && v.Status != string(JobFinished) {
			return false
		}
	}
	return true
}

// JobDetails returns a job's details, including its vertices; KindNotFound for an unknown job.
func (c *Client) JobDetails(ctx context.Context, jobID string) (*JobDetails, error) {
	const op = "get job details"
	p, err := jobPath(op, jobID)
	if err != nil {
		return nil, err
	}
	out := &JobDetails{}
	return out, c.do(ctx, request{op: op, method: http.MethodGet, route: "/jobs/:jobid", path: p}, out)
}

// JobStatus returns a job's state: GET /jobs/:jobid/status on Flink 1.16+, the job details
// on 1.15, which lacks that endpoint.
func (c *Client) JobStatus(ctx context.Context, jobID string) (JobState, error) {
	const op = "get job status"
	v, err := c.Version(ctx)
	if err != nil {
		return "", err
	}
	if !v.AtLeast(1, 16) {
		d, err := c.JobDetails(ctx, jobID)
		if err != nil {
			return "", err
		}
		return d.State, nil
	}
	p, err := jobPath(op, jobID, "status")
	if err != nil {
		return "", err
	}
	var out struct {
		Status JobState `json:"status"`
	}
	return out.Status, c.do(ctx, request{op: op, method: http.MethodGet, route: "/jobs/:jobid/status", path: p}, &out)
}

// CancelJob cancels a job (PATCH /jobs/:jobid?mode=cancel). A job that is already terminal
// gives KindConflict, an unknown job KindNotFound.
func (c *Client) CancelJob(ctx context.Context, jobID string) error {
	const op = "cancel job"
	p, err := jobPath(op, jobID)
	if err != nil {
		return err
	}
	return c.do(ctx, request{op: op, method: http.MethodPatch, route: "/jobs/:jobid", path: p,
		query: url.Values{"mode": {"cancel"}}}, nil)
}

// JobException is one failure of a job.
type JobException struct {
	ExceptionName string `json:"exceptionName"`
	Stacktrace    string `json:"stacktrace"`
	// Timestamp in epoch milliseconds.
	Timestamp     int64             `json:"timestamp"`
	TaskName      string            `json:"taskName,omitempty"`
	Endpoint      string            `json:"endpoint,omitempty"`
	TaskManagerID string            `json:"taskManagerId,omitempty"`
	FailureLabels map[string]string `json:"failureLabels,omitempty"`
	// Concurrent are failures of other tasks in the same failover.
	Concurrent []JobException `json:"concurrentExceptions,omitempty"`
}

// JobExceptions are a job's failures, newest first.
type JobExceptions struct {
	Entries   []JobException
	Truncated bool
}

// maxExceptionsResponseBytes bounds the reply of JobExceptions: ten failures with full stack
// traces and their concurrent failures fit.
const maxExceptionsResponseBytes = 8 << 20

// JobExceptions returns up to max of a job's failures (max <= 0: Flink's default). It reads
// exceptionHistory, the only form 2.x has; on old 1.x clusters that have no history it falls
// back to the legacy root exception.
func (c *Client) JobExceptions(ctx context.Context, jobID string, max int) (*JobExceptions, error) {
	const op = "get job exceptions"
	p, err := jobPath(op, jobID, "exceptions")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if max > 0 {
		q.Set("maxExceptions", strconv.Itoa(max))
	}
	var raw struct {
		History *struct {
			Entries   []JobException `json:"entries"`
			Truncated bool           `json:"truncated"`
		} `json:"exceptionHistory"`
		RootException *string `json:"root-exception"`
		Timestamp     *int64  `json:"timestamp"`
		Truncated     bool    `json:"truncated"`
	}
	// Entries carry stack traces, concurrent failures theirs too: a larger limit than other calls.
	if err := c.do(ctx, request{op: op, method: http.MethodGet, route: "/jobs/:jobid/exceptions", path: p, query: q,
		maxBytes: maxExceptionsResponseBytes}, &raw); err != nil {
		return nil, err
	}
	out := &JobExceptions{}
	if raw.History != nil {
		out.Entries, out.Truncated = raw.History.Entries, raw.History.Truncated
	}
	// A JobManager that ignores maxExceptions does not get more entries reported than asked.
	if max > 0 {
		if len(out.Entries) > max {
			out.Entries, out.Truncated = out.Entries[:max], true
		}
		for i := range out.Entries {
			if len(out.Entries[i].Concurrent) > max {
				out.Entries[i].Concurrent = out.Entries[i].Concurrent[:max]
			}
		}
	}
	if len(out.Entries) == 0 && raw.RootException != nil && *raw.RootException != "" {
		e := JobException{ExceptionName: firstLine(*raw.RootException), Stacktrace: *raw.RootException}
		if raw.Timestamp != nil {
			e.Timestamp = *raw.Timestamp
		}
		out.Entries, out.Truncated = []JobException{e}, raw.Truncated
	}
	return out, nil
}

// SerializedThrowable is Flink's form of a Java exception in REST responses.
type SerializedThrowable struct {
	Class      string `json:"class"`
	StackTrace string `json:"stack-trace"`
	// Serialized is the base64 Java-serialized throwable (opaque to the operator).
	Serialized string `json:"serialized-throwable,omitempty"`
}

// Message returns the first line of the stack trace (class and message), at most
// MaxMessageBytes long.
func (t *SerializedThrowable) Message() string {
	if t == nil {
		return ""
	}
	if line := firstLine(t.StackTrace); line != "" {
		return TruncateMessage(line)
	}
	return TruncateMessage(t.Class)
}

// ExecutionResult is GET /jobs/:jobid/execution-result.
type ExecutionResult struct {
	// Completed is false while the job runs.
	Completed bool
	// ApplicationStatus is SUCCEEDED, FAILED, CANCELED or UNKNOWN (up to 2.2); 2.3 reports
	// JobStatus instead, which is mapped here to the same values.
	ApplicationStatus string
	// Failure is set when the job failed.
	Failure *SerializedThrowable
	// NetRuntime in milliseconds.
	NetRuntime int64
}

// ExecutionResult returns the result of a finished job, Completed=false while it runs.
func (c *Client) ExecutionResult(ctx context.Context, jobID string) (*ExecutionResult, error) {
	const op = "get execution result"
	p, err := jobPath(op, jobID, "execution-result")
	if err != nil {
		return nil, err
	}
	var raw struct {
		Status struct {
			ID string `json:"id"`
		} `json:"status"`
		Result *struct {
			ApplicationStatus string               `json:"application-status"`
			JobStatus         string               `json:"job-status"`
			NetRuntime        int64                `json:"net-runtime"`
			Failure           *SerializedThrowable `json:"failure-cause"`
		} `json:"job-execution-result"`
	}
	if err := c.do(ctx, request{op: op, method: http.MethodGet, route: "/jobs/:jobid/execution-result", path: p}, &raw); err != nil {
		return nil, err
	}
	out := &ExecutionResult{Completed: raw.Status.ID == "COMPLETED"}
	if r := raw.Result; r != nil {
		out.ApplicationStatus = r.ApplicationStatus
		if out.ApplicationStatus == "" {
			out.ApplicationStatus = applicationStatusOf(JobState(r.JobStatus))
		}
		out.NetRuntime, out.Failure = r.NetRuntime, r.Failure
	}
	return out, nil
}

func applicationStatusOf(s JobState) string {
	switch s {
	case JobFinished:
		return "SUCCEEDED"
	case JobFailed:
		return "FAILED"
	case JobCanceled:
		return "CANCELED"
	default:
		return "UNKNOWN"
	}
}

// CheckpointRef is a checkpoint in the checkpoint statistics.
type CheckpointRef struct {
	ID           int64  `json:"id"`
	ExternalPath string `json:"external_path"`
	// IsSavepoint is set for savepoints (in latest.restored).
	IsSavepoint      bool  `json:"is_savepoint"`
	TriggerTimestamp int64 `json:"trigger_timestamp"`
	LatestAck        int64 `json:"latest_ack_timestamp"`
	RestoreTimestamp int64 `json:"restore_timestamp"`
	StateSize        int64 `json:"state_size"`
	CheckpointedSize int64 `json:"checkpointed_size"`
	Discarded        bool  `json:"discarded"`
}

// CheckpointStatistics is GET /jobs/:jobid/checkpoints, reduced to what the operator uses.
type CheckpointStatistics struct {
	Counts struct {
		Restored   int64 `json:"restored"`
		Total      int64 `json:"total"`
		InProgress int64 `json:"in_progress"`
		Completed  int64 `json:"completed"`
		Failed     int64 `json:"failed"`
	} `json:"counts"`
	Latest struct {
		Completed *CheckpointRef `json:"completed"`
		Savepoint *CheckpointRef `json:"savepoint"`
		Failed    *CheckpointRef `json:"failed"`
		Restored  *CheckpointRef `json:"restored"`
	} `json:"latest"`
}

// CheckpointStatistics returns a job's checkpoint counts and latest checkpoints; the path of
// the latest completed checkpoint is the restore point of a last-state upgrade without HA.
func (c *Client) CheckpointStatistics(ctx context.Context, jobID string) (*CheckpointStatistics, error) {
	const op = "get checkpoint statistics"
	p, err := jobPath(op, jobID, "checkpoints")
	if err != nil {
		return nil, err
	}
	out := &CheckpointStatistics{}
	return out, c.do(ctx, request{op: op, method: http.MethodGet, route: "/jobs/:jobid/checkpoints", path: p}, out)
}

// LatestCheckpointPath is the external path of a job's latest state, "" when it has none: of
// its latest completed checkpoint, latest savepoint and the checkpoint or savepoint it was
// restored from, the one with the highest id (as upstream's CheckpointHistoryWrapper). A job
// that restored a savepoint and failed before its first checkpoint so still names that savepoint.
func (c *Client) LatestCheckpointPath(ctx context.Context, jobID string) (string, error) {
	stats, err := c.CheckpointStatistics(ctx, jobID)
	if err != nil {
		return "", err
	}
	var latest *CheckpointRef
	for _, ref := range []*CheckpointRef{stats.Latest.Completed, stats.Latest.Savepoint, stats.Latest.Restored} {
		if ref != nil && ref.ExternalPath != "" && (latest == nil || ref.ID > latest.ID) {
			latest = ref
		}
	}
	if latest == nil {
		return "", nil
	}
	return latest.ExternalPath, nil
}
