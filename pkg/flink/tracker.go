package flink

import (
	"context"
	"net/http"
	"strconv"
)

// The tracker drives every asynchronous operation the operator asks of Flink (savepoint,
// stop-with-savepoint, checkpoint) the same way:
//
//  1. the caller chooses a trigger id (NewTriggerID) and records it in the resource's status
//     before anything is sent (write-ahead), so an operator restarted at any moment knows it;
//  2. Start sends the trigger under that id;
//  3. Advance asks for the outcome on later reconciles. A trigger the JobManager does not know
//     (it restarted, or the trigger never reached it) is sent again under the same id: Flink
//     deduplicates by id, so this never starts a second operation while the first is known.
//
// Transport trouble (unreachable, timeout, 5xx) is never an outcome: the operation stays
// pending and Unreachable says why, for the caller's log. Only Flink's own answer fails one.

// OperationKind is what an operation does.
type OperationKind string

// Operation kinds.
const (
	OperationSavepoint         OperationKind = "savepoint"
	OperationStopWithSavepoint OperationKind = "stop-with-savepoint"
	OperationCheckpoint        OperationKind = "checkpoint"
)

// Operation is one recorded asynchronous operation.
type Operation struct {
	Kind      OperationKind
	JobID     string
	TriggerID string
	// TargetDirectory of a savepoint; empty uses the cluster's default.
	TargetDirectory string
	// Format of a savepoint; empty is CANONICAL.
	Format SavepointFormat
	// Drain: a stop-with-savepoint emits MAX_WATERMARK first.
	Drain bool
	// CheckpointType of a checkpoint; empty is CONFIGURED.
	CheckpointType CheckpointType
}

// Outcome is where an operation stands.
type Outcome string

// Outcomes.
const (
	// OutcomePending: in progress, or not known yet; ask again later.
	OutcomePending Outcome = "Pending"
	// OutcomeCompleted: done; Location (savepoints) or CheckpointID (checkpoints) is set.
	OutcomeCompleted Outcome = "Completed"
	// OutcomeFailed: Flink refused or failed it; Failure says why. Trigger anew to retry.
	OutcomeFailed Outcome = "Failed"
)

// Progress is what the tracker learnt about an operation.
type Progress struct {
	Outcome Outcome
	// Location of a completed savepoint, or of a completed checkpoint when Flink reports one.
	Location     string
	CheckpointID int64
	// Failure is Flink's reason for a failed operation.
	Failure string
	// Unreachable is why the outcome is not known yet (the JobManager could not be asked).
	Unreachable error
}

// Start sends the operation's trigger. The trigger id must already be recorded by the caller.
func (c *Client) Start(ctx context.Context, op Operation) Progress {
	var err error
	switch op.Kind {
	case OperationStopWithSavepoint:
		err = c.StopWithSavepoint(ctx, op.JobID, StopRequest{TriggerID: op.TriggerID, TargetDirectory: op.TargetDirectory, FormatType: op.Format, Drain: op.Drain})
	case OperationCheckpoint:
		err = c.TriggerCheckpoint(ctx, op.JobID, CheckpointRequest{TriggerID: op.TriggerID, Type: op.CheckpointType})
	default:
		err = c.TriggerSavepoint(ctx, op.JobID, SavepointRequest{TriggerID: op.TriggerID, TargetDirectory: op.TargetDirectory, FormatType: op.Format})
	}
	switch {
	case err == nil:
		return Progress{Outcome: OutcomePending}
	case transient(err):
		// It may have arrived: Advance finds out, and sends it again if it did not.
		return Progress{Outcome: OutcomePending, Unreachable: err}
	default:
		return Progress{Outcome: OutcomeFailed, Failure: err.Error()}
	}
}

// Advance asks for the outcome of a started operation, sending its trigger again under the
// same id when the JobManager does not know it.
func (c *Client) Advance(ctx context.Context, op Operation) Progress {
	var p Progress
	var err error
	switch op.Kind {
	case OperationCheckpoint:
		var res *CheckpointResult
		if res, err = c.CheckpointStatus(ctx, op.JobID, op.TriggerID); err == nil {
			p = checkpointProgress(res)
			if p.Outcome == OutcomeCompleted {
				p.Location = c.checkpointLocation(ctx, op.JobID, res.CheckpointID)
			}
		}
	default:
		var res *SavepointResult
		if res, err = c.SavepointStatus(ctx, op.JobID, op.TriggerID); err == nil {
			p = savepointProgress(res)
		}
	}
	switch {
	case err == nil:
		return p
	case IsTriggerNotFound(err):
		return c.Start(ctx, op)
	case transient(err):
		return Progress{Outcome: OutcomePending, Unreachable: err}
	default:
		// A 4xx on the status call (job gone, bad id): the operation cannot complete.
		return Progress{Outcome: OutcomeFailed, Failure: err.Error()}
	}
}

func savepointProgress(res *SavepointResult) Progress {
	switch {
	case res.State != OperationCompleted:
		return Progress{Outcome: OutcomePending}
	case res.Failure != nil:
		return Progress{Outcome: OutcomeFailed, Failure: res.Failure.Message()}
	default:
		return Progress{Outcome: OutcomeCompleted, Location: res.Location}
	}
}

func checkpointProgress(res *CheckpointResult) Progress {
	switch {
	case res.State != OperationCompleted:
		return Progress{Outcome: OutcomePending}
	case res.Failure != nil:
		return Progress{Outcome: OutcomeFailed, Failure: res.Failure.Message()}
	default:
		return Progress{Outcome: OutcomeCompleted, CheckpointID: res.CheckpointID}
	}
}

// checkpointLocation is where a completed checkpoint lies (GET
// /jobs/:jobid/checkpoints/details/:checkpointid), "" when Flink does not say (it was not
// retained, or the call failed: the checkpoint is complete either way).
func (c *Client) checkpointLocation(ctx context.Context, jobID string, checkpointID int64) string {
	p, err := jobPath("get checkpoint details", jobID, "checkpoints", "details", strconv.FormatInt(checkpointID, 10))
	if err != nil {
		return ""
	}
	var out struct {
		ExternalPath string `json:"external_path"`
	}
	if err := c.do(ctx, request{op: "get checkpoint details", method: http.MethodGet, route: "/jobs/:jobid/checkpoints/details/:checkpointid", path: p}, &out); err == nil {
		return out.ExternalPath
	}
	// The statistics name the latest completed one, which is this one unless another completed
	// since.
	if stats, err := c.CheckpointStatistics(ctx, jobID); err == nil && stats.Latest.Completed != nil && stats.Latest.Completed.ID == checkpointID {
		return stats.Latest.Completed.ExternalPath
	}
	return ""
}

// transient: the JobManager could not be asked or could not answer now.
func transient(err error) bool {
	return IsUnavailable(err) || IsTimeout(err) || KindOf(err) == KindServer || KindOf(err) == KindMalformed
}
