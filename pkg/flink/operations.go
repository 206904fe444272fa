package flink

import (
	"context"
	"fmt"
	"net/http"
)

// Async operations (savepoint, stop-with-savepoint, checkpoint, savepoint disposal) follow
// one protocol: the trigger answers with a trigger id, then the status is polled until
// COMPLETED, which carries either a result or a failure cause. Triggers take a
// caller-chosen trigger id (Flink 1.15+ for savepoints, 1.17+ for checkpoints), so the
// operator records the id in status first and may retry the trigger without starting a
// second operation: the JobManager deduplicates by (job, trigger id) while it remembers it.

// OperationState is the state of an async operation.
type OperationState string

const (
	// OperationInProgress: poll again later.
	OperationInProgress OperationState = "IN_PROGRESS"
	// OperationCompleted: the operation ended; see the result's failure.
	OperationCompleted OperationState = "COMPLETED"
)

// SavepointFormat is the binary format of a savepoint.
type SavepointFormat string

// Savepoint formats.
const (
	SavepointFormatCanonical SavepointFormat = "CANONICAL"
	SavepointFormatNative    SavepointFormat = "NATIVE"
)

// SavepointRequest triggers a savepoint.
type SavepointRequest struct {
	// TriggerID, chosen by the caller (NewTriggerID); required.
	TriggerID string
	// TargetDirectory; empty uses the cluster's savepoint directory.
	TargetDirectory string
	// FormatType; empty is CANONICAL.
	FormatType SavepointFormat
	// CancelJob cancels the job once the savepoint completed.
	CancelJob bool
}

// TriggerSavepoint starts a savepoint (POST /jobs/:jobid/savepoints).
func (c *Client) TriggerSavepoint(ctx context.Context, jobID string, r SavepointRequest) error {
	const op = "trigger savepoint"
	p, err := triggerPath(op, jobID, r.TriggerID, "savepoints")
	if err != nil {
		return err
	}
	// kebab-case here, camelCase in /stop: Flink's own inconsistency.
	body := map[string]any{"triggerId": r.TriggerID, "cancel-job": r.CancelJob}
	if r.TargetDirectory != "" {
		body["target-directory"] = r.TargetDirectory
	}
	if r.FormatType != "" {
		body["formatType"] = r.FormatType
	}
	return c.triggered(ctx, request{op: op, method: http.MethodPost, route: "/jobs/:jobid/savepoints", path: p, body: body}, r.TriggerID)
}

// StopRequest stops a job with a savepoint.
type StopRequest struct {
	// TriggerID, chosen by the caller (NewTriggerID); required.
	TriggerID string
	// TargetDirectory; empty uses the cluster's savepoint directory.
	TargetDirectory string
	// FormatType; empty is CANONICAL.
	FormatType SavepointFormat
	// Drain emits MAX_WATERMARK before stopping (ends event-time windows).
	Drain bool
}

// StopWithSavepoint takes a savepoint and stops the job, which ends FINISHED
// (POST /jobs/:jobid/stop). Poll with SavepointStatus.
func (c *Client) StopWithSavepoint(ctx context.Context, jobID string, r StopRequest) error {
	const op = "stop job with savepoint"
	p, err := triggerPath(op, jobID, r.TriggerID, "stop")
	if err != nil {
		return err
	}
	body := map[string]any{"triggerId": r.TriggerID, "drain": r.Drain}
	if r.TargetDirectory != "" {
		body["targetDirectory"] = r.TargetDirectory
	}
	if r.FormatType != "" {
		body["formatType"] = r.FormatType
	}
	return c.triggered(ctx, request{op: op, method: http.MethodPost, route: "/jobs/:jobid/stop", path: p, body: body}, r.TriggerID)
}

// SavepointResult is the status of a savepoint or stop-with-savepoint.
type SavepointResult struct {
	State OperationState
	// Location of the completed savepoint, e.g. file:/flink/sp/savepoint-123abc-4567.
	Location string
	// Failure is set when the operation completed unsuccessfully.
	Failure *SerializedThrowable
}

// SavepointStatus polls a savepoint or stop-with-savepoint. An unknown trigger id gives
// KindTriggerNotFound: after a JobManager restart the outcome is unknown.
func (c *Client) SavepointStatus(ctx context.Context, jobID, triggerID string) (*SavepointResult, error) {
	const op = "get savepoint status"
	p, err := triggerPath(op, jobID, triggerID, "savepoints", triggerID)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Status    struct{ ID OperationState } `json:"status"`
		Operation *struct {
			Location string               `json:"location"`
			Failure  *SerializedThrowable `json:"failure-cause"`
		} `json:"operation"`
	}
	if err := c.do(ctx, request{op: op, method: http.MethodGet, route: "/jobs/:jobid/savepoints/:triggerid", path: p, trigger: true}, &raw); err != nil {
		return nil, err
	}
	out := &SavepointResult{State: raw.Status.ID}
	if raw.Operation != nil {
		out.Location, out.Failure = raw.Operation.Location, raw.Operation.Failure
	}
	return out, nil
}

// CheckpointType is the type of a manually triggered checkpoint.
type CheckpointType string

const (
	// CheckpointConfigured uses the job's configured checkpoint type.
	CheckpointConfigured CheckpointType = "CONFIGURED"
	// CheckpointFull forces a full checkpoint (INCREMENTAL is rejected by Flink, FLINK-33723).
	CheckpointFull CheckpointType = "FULL"
)

// CheckpointRequest triggers a checkpoint.
type CheckpointRequest struct {
	// TriggerID, chosen by the caller (NewTriggerID); required.
	TriggerID string
	// Type; empty is CONFIGURED.
	Type CheckpointType
}

// TriggerCheckpoint starts a checkpoint (POST /jobs/:jobid/checkpoints, Flink 1.17+;
// KindUnsupported on older clusters).
func (c *Client) TriggerCheckpoint(ctx context.Context, jobID string, r CheckpointRequest) error {
	const op = "trigger checkpoint"
	p, err := triggerPath(op, jobID, r.TriggerID, "checkpoints")
	if err != nil {
		return err
	}
	if _, err := c.requireVersion(ctx, op, 1, 17); err != nil {
		return err
	}
	body := map[string]any{"triggerId": r.TriggerID}
	if r.Type != "" {
		body["checkpointType"] = r.Type
	}
	return c.triggered(ctx, request{op: op, method: http.MethodPost, route: "/jobs/:jobid/checkpoints", path: p, body: body}, r.TriggerID)
}

// CheckpointResult is the status of a triggered checkpoint.
type CheckpointResult struct {
	State        OperationState
	CheckpointID int64
	Failure      *SerializedThrowable
}

// CheckpointStatus polls a triggered checkpoint; KindTriggerNotFound for an unknown trigger id.
func (c *Client) CheckpointStatus(ctx context.Context, jobID, triggerID string) (*CheckpointResult, error) {
	const op = "get checkpoint status"
	p, err := triggerPath(op, jobID, triggerID, "checkpoints", triggerID)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Status    struct{ ID OperationState } `json:"status"`
		Operation *struct {
			// camelCase here, kebab-case for savepoints.
			CheckpointID int64                `json:"checkpointId"`
			Failure      *SerializedThrowable `json:"failureCause"`
		} `json:"operation"`
	}
	if err := c.do(ctx, request{op: op, method: http.MethodGet, route: "/jobs/:jobid/checkpoints/:triggerid", path: p, trigger: true}, &raw); err != nil {
		return nil, err
	}
	out := &CheckpointResult{State: raw.Status.ID}
	if raw.Operation != nil {
		out.CheckpointID, out.Failure = raw.Operation.CheckpointID, raw.Operation.Failure
	}
	return out, nil
}

// DisposeSavepoint deletes a savepoint's data through the cluster (POST /savepoint-disposal)
// and returns the trigger id Flink chose (the endpoint takes none from the caller).
func (c *Client) DisposeSavepoint(ctx context.Context, path string) (string, error) {
	const op = "dispose savepoint"
	if path == "" {
		return "", &Error{Kind: KindBadRequest, Op: op, Message: "savepoint path is empty"}
	}
	var out struct {
		RequestID string `json:"request-id"`
	}
	err := c.do(ctx, request{op: op, method: http.MethodPost, route: "/savepoint-disposal", path: "/savepoint-disposal",
		body: map[string]string{"savepoint-path": path}}, &out)
	return out.RequestID, err
}

// DisposalResult is the status of a savepoint disposal.
type DisposalResult struct {
	State   OperationState
	Failure *SerializedThrowable
}

// SavepointDisposalStatus polls a savepoint disposal; KindTriggerNotFound for an unknown id.
func (c *Client) SavepointDisposalStatus(ctx context.Context, triggerID string) (*DisposalResult, error) {
	const op = "get savepoint disposal status"
	if !IsValidID(triggerID) {
		return nil, &Error{Kind: KindBadRequest, Op: op, Message: fmt.Sprintf("trigger id %q is not 32 hex characters", triggerID)}
	}
	var raw struct {
		Status    struct{ ID OperationState } `json:"status"`
		Operation *struct {
			Failure *SerializedThrowable `json:"failure-cause"`
		} `json:"operation"`
	}
	if err := c.do(ctx, request{op: op, method: http.MethodGet, route: "/savepoint-disposal/:triggerid",
		path: "/savepoint-disposal/" + triggerID, trigger: true}, &raw); err != nil {
		return nil, err
	}
	out := &DisposalResult{State: raw.Status.ID}
	if raw.Operation != nil {
		out.Failure = raw.Operation.Failure
	}
	return out, nil
}

func triggerPath(op, jobID, triggerID string, rest ...string) (string, error) {
	if !IsValidID(triggerID) {
		return "", &Error{Kind: KindBadRequest, Op: op, Message: fmt.Sprintf("trigger id %q is not 32 hex characters (use NewTriggerID)", triggerID)}
	}
	return jobPath(op, jobID, rest...)
}

// triggered performs a trigger call and checks that Flink used the caller's trigger id.
func (c *Client) triggered(ctx context.Context, r request, triggerID string) error {
	var out struct {
		RequestID string `json:"request-id"`
	}
	if err := c.do(ctx, r, &out); err != nil {
		return err
	}
	if out.RequestID != triggerID {
		// Flink older than 1.15 ignores triggerId: the operation cannot be found under the
		// recorded id, so say so rather than poll an id that will never resolve.
		return &Error{Kind: KindUnsupported, Op: r.op,
			Message: fmt.Sprintf("the JobManager ignored trigger id %s (answered %s); Flink 1.15+ is needed", triggerID, out.RequestID)}
	}
	return nil
}
