package lifecycle

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// MaxOperations is how many operations status.operations keeps: the oldest go first.
const MaxOperations = 10

// OperationStep is what one status computation tells RecordOperations: the Progressing
// condition before it (nil when there was none: a new or adopted resource) and after it, the
// Degraded condition after it, the resource's generation, the savepoint or checkpoint the
// status records as what the job restores from or was stopped with, and the time.
type OperationStep struct {
	Before     *metav1.Condition
	After      metav1.Condition
	Degraded   metav1.Condition
	Generation int64
	Snapshot   string
	Now        metav1.Time
	// NeverStable: no spec has been stable yet (no last stable spec), so an upgrade is the
	// first deployment.
	NeverStable bool
	// Restored is the checkpoint or savepoint Flink reports the job restored from, read only
	// while the open operation restored from HA metadata, whose path only Flink knows
	// (RestoreUnrecorded); "" otherwise.
	Restored string
}

// RestoreUnrecorded says the open operation is a rollback whose snapshot is not known yet: it
// restored the HA metadata's latest checkpoint, and only Flink can say which one that was, once
// the job runs. A controller reads it then (OperationStep.Restored), and only then.
func RestoreUnrecorded(ops []flinkv1beta1.Operation) bool {
	n := len(ops)
	return n > 0 && ops[n-1].Outcome == flinkv1beta1.OperationInProgress && ops[n-1].Type == flinkv1beta1.OperationRollback &&
		ops[n-1].Snapshot == ""
}

// Step is the OperationStep of a status whose conditions were just computed, with before the
// Progressing condition it had until then (nil if none).
func Step(s *flinkv1beta1.CommonStatus, before *metav1.Condition, generation int64, now metav1.Time) OperationStep {
	step := OperationStep{Before: before, Generation: generation, Snapshot: s.JobStatus.UpgradeSavepointPath, Now: now,
		NeverStable: s.ReconciliationStatus.LastStableSpec == ""}
	if step.Snapshot == flinkv1beta1.LastStateSentinelPath {
		step.Snapshot = "" // the HA metadata's latest checkpoint, whose path only Flink knows
	}
	if c := meta.FindStatusCondition(s.Conditions, ConditionProgressing); c != nil {
		step.After = *c
	}
	if c := meta.FindStatusCondition(s.Conditions, ConditionDegraded); c != nil {
		step.Degraded = *c
	}
	return step
}

// operationOf is the operation a Progressing reason is a step of; "" for the reasons at rest.
// An upgrade's stop with a savepoint and its new JobManager are steps of the upgrade.
func operationOf(r Reason) flinkv1beta1.OperationType {
	switch r {
	case ReasonUpgrading, ReasonSavepointing, ReasonSwitching:
		return flinkv1beta1.OperationUpgrade
	case ReasonSuspending:
		return flinkv1beta1.OperationSuspend
	case ReasonRollingBack:
		return flinkv1beta1.OperationRollback
	case ReasonDeleting:
		return flinkv1beta1.OperationDelete
	case ReasonDeploying, ReasonJobStarting:
		return flinkv1beta1.OperationDeploy
	case ReasonScaling:
		return flinkv1beta1.OperationScale
	}
	return ""
}

// RecordOperations is the one place status.operations changes, from the transitions of the
// Progressing condition (assess decides it; this only follows it):
//
//	Progressing turns True                  → an operation starts: its type from the reason
//	                                          (an upgrade out of Suspended is a Resume, one
//	                                          before any spec was stable the first Deploy)
//	True, a step of the open operation      → it goes on (a Deploying after an Upgrading is the
//	                                          upgrade's new JobManager); message and snapshot follow
//	True, another operation                 → the open one ends (Failed when a rollback replaces
//	                                          it, else Superseded) and the new one starts
//	True, a rollback with nothing open      → the upgrade it replaces, if it ended Succeeded
//	                                          (its job accepted, then failing), is Failed
//	True, same type, another generation     → a newer spec replaced the target: Superseded, new one
//	Progressing turns False                 → the open one ends: Failed when the resource waits
//	                                          for a person or was rolled back (a rollback itself
//	                                          succeeds then) or a rescale timed out, else Succeeded
//
// Nothing changes while Progressing stays False, so a resource at rest costs no status write.
// Messages are the conditions', already redacted. At most MaxOperations are kept, whatever the
// status held before.
func RecordOperations(ops []flinkv1beta1.Operation, step OperationStep) []flinkv1beta1.Operation {
	ops = latest(ops) // a status someone else wrote may hold more
	var open *flinkv1beta1.Operation
	if n := len(ops); n > 0 && ops[n-1].Outcome == flinkv1beta1.OperationInProgress {
		open = &ops[n-1]
	}
	if open != nil && open.Snapshot == "" && step.Restored != "" {
		open.Snapshot = step.Restored // what Flink says the operation restored, before it ends
	}
	end := func(outcome flinkv1beta1.OperationOutcome, message string) {
		open.Outcome, open.EndedAt, open.Message = outcome, step.Now.DeepCopy(), message
		open = nil
	}
	if step.After.Status != metav1.ConditionTrue {
		if open == nil {
			return ops
		}
		switch reason := Reason(step.After.Reason); {
		case reason == ReasonWaitingForUser:
			end(flinkv1beta1.OperationFailed, step.Degraded.Message)
		case open.Type == flinkv1beta1.OperationScale && step.Degraded.Status == metav1.ConditionTrue &&
			Reason(step.Degraded.Reason) == ReasonScaleTimedOut:
			end(flinkv1beta1.OperationFailed, step.Degraded.Message)
		case reason == ReasonRolledBack && open.Type != flinkv1beta1.OperationRollback:
			end(flinkv1beta1.OperationFailed, step.Degraded.Message)
		case reason == ReasonSettled:
			end(flinkv1beta1.OperationSucceeded, "") // "no action in flight" says nothing of it
		default:
			end(flinkv1beta1.OperationSucceeded, step.After.Message)
		}
		return ops
	}

	kind := operationOf(Reason(step.After.Reason))
	if kind == "" {
		return ops
	}
	if kind == flinkv1beta1.OperationUpgrade && step.NeverStable {
		kind = flinkv1beta1.OperationDeploy // the first spec is recorded as an upgrade from nothing
	}
	if kind == flinkv1beta1.OperationScale {
		// A rescale in place restores nothing the operator chose: the path recorded is that of an
		// earlier upgrade.
		step.Snapshot = ""
	}
	if open != nil {
		switch {
		case continues(open, kind, step.Generation):
			open.Message = step.After.Message
			if step.Snapshot != "" {
				open.Snapshot = step.Snapshot
			}
			return ops
		case kind == flinkv1beta1.OperationRollback:
			end(flinkv1beta1.OperationFailed, step.After.Message)
		default:
			end(flinkv1beta1.OperationSuperseded, open.Message)
		}
	}
	if kind == flinkv1beta1.OperationRollback && open == nil {
		failRolledBack(ops, step.After.Message)
	}
	if kind == flinkv1beta1.OperationUpgrade && step.Before != nil && Reason(step.Before.Reason) == ReasonSuspended {
		kind = flinkv1beta1.OperationResume
	}
	return latest(append(ops, flinkv1beta1.Operation{Type: kind, Generation: step.Generation, StartedAt: step.Now,
		Outcome: flinkv1beta1.OperationInProgress, Snapshot: step.Snapshot, Message: step.After.Message}))
}

// failRolledBack marks Failed the upgrade or resume a rollback starting with nothing open
// replaces: the last operation, if it is one and ended Succeeded. A rollback replaces only a
// spec that never became stable, but the upgrade's Progressing may already have settled (its
// new job accepted, then restarting in a loop until the readiness timeout), which ended it
// Succeeded; the history must not say so of an upgrade that was rolled back.
func failRolledBack(ops []flinkv1beta1.Operation, message string) {
	n := len(ops)
	if n == 0 {
		return
	}
	last := &ops[n-1]
	if (last.Type == flinkv1beta1.OperationUpgrade || last.Type == flinkv1beta1.OperationResume) && last.Outcome == flinkv1beta1.OperationSucceeded {
		last.Outcome, last.Message = flinkv1beta1.OperationFailed, message
	}
}

// latest is the last MaxOperations of ops.
func latest(ops []flinkv1beta1.Operation) []flinkv1beta1.Operation {
	if len(ops) <= MaxOperations {
		return ops
	}
	return append([]flinkv1beta1.Operation(nil), ops[len(ops)-MaxOperations:]...)
}

// continues says a Progressing step of type kind belongs to the open operation: the same type
// for the same generation, or the JobManager and job starting as the last part of an upgrade,
// resume or rollback.
func continues(open *flinkv1beta1.Operation, kind flinkv1beta1.OperationType, generation int64) bool {
	if kind == flinkv1beta1.OperationDeploy {
		// A JobManager starting during a rescale in place is a recovery, not a step of it.
		return open.Type != flinkv1beta1.OperationDelete && open.Type != flinkv1beta1.OperationSuspend && open.Type != flinkv1beta1.OperationScale
	}
	if kind == flinkv1beta1.OperationUpgrade && (open.Type == flinkv1beta1.OperationResume || open.Type == flinkv1beta1.OperationRollback) {
		return open.Generation == generation // a rollback deploys the stable spec as an upgrade
	}
	return kind == open.Type && (open.Generation == generation || kind == flinkv1beta1.OperationRollback || kind == flinkv1beta1.OperationDelete)
}
