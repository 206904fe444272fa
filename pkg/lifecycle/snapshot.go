package lifecycle

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// Reasons of a FlinkStateSnapshot's Progressing and Degraded conditions (its Ready reason is its
// state: Completed, Failed, Abandoned, InProgress, TriggerPending).
const (
	ReasonCheckpointing     Reason = "Checkpointing"     // a checkpoint is asked for or under way
	ReasonSnapshotRetrying  Reason = "SnapshotRetrying"  // an attempt failed; the next one waits its back-off
	ReasonSnapshotFailed    Reason = "SnapshotFailed"    // failed past spec.backoffLimit
	ReasonSnapshotAbandoned Reason = "SnapshotAbandoned" // its job does not exist or does not run
	ReasonSnapshotDone      Reason = "Done"              // Progressing False: completed, failed or abandoned
)

// SnapshotConditions returns a FlinkStateSnapshot's Ready, Progressing and Degraded conditions:
// Ready once completed (what `kubectl wait --for=condition=Ready` waits for), Progressing while
// the snapshot is pending or in progress, Degraded when an attempt failed or it was abandoned.
func SnapshotConditions(snap *flinkv1beta1.FlinkStateSnapshot) []metav1.Condition {
	st, gen := &snap.Status, snap.Generation
	state := st.State
	if state == "" {
		state = flinkv1beta1.SnapshotTriggerPending
	}
	what := "Savepoint"
	if snap.Spec.Checkpoint != nil {
		what = "Checkpoint"
	}
	ready := metav1.Condition{Type: ConditionReady, ObservedGeneration: gen, Status: metav1.ConditionFalse,
		Reason: camel(string(state)), Message: "Snapshot " + string(state)}
	if state == flinkv1beta1.SnapshotCompleted {
		ready.Status, ready.Message = metav1.ConditionTrue, "Snapshot completed: "+st.Path
	}

	progressing := metav1.Condition{Type: ConditionProgressing, ObservedGeneration: gen, Status: metav1.ConditionFalse,
		Reason: string(ReasonSnapshotDone), Message: "Snapshot " + string(state) + ": nothing more is done"}
	if state == flinkv1beta1.SnapshotTriggerPending || state == flinkv1beta1.SnapshotInProgress {
		reason := ReasonSavepointing
		if snap.Spec.Checkpoint != nil {
			reason = ReasonCheckpointing
		}
		progressing.Status, progressing.Reason = metav1.ConditionTrue, string(reason)
		progressing.Message = what + " " + string(state)
		if st.TriggerID != "" {
			progressing.Message += " (trigger " + st.TriggerID + ")"
		}
	}

	degraded := metav1.Condition{Type: ConditionDegraded, ObservedGeneration: gen, Status: metav1.ConditionFalse,
		Reason: string(ReasonHealthy), Message: "Nothing wrong observed"}
	switch {
	case state == flinkv1beta1.SnapshotFailed:
		degraded.Status, degraded.Reason = metav1.ConditionTrue, string(ReasonSnapshotFailed)
		degraded.Message = fmt.Sprintf("%s failed %d times, past spec.backoffLimit: %s. Create a new FlinkStateSnapshot to try again",
			what, st.Failures, orNone(st.Error))
	case state == flinkv1beta1.SnapshotAbandoned:
		degraded.Status, degraded.Reason = metav1.ConditionTrue, string(ReasonSnapshotAbandoned)
		degraded.Message = what + " abandoned: its job does not exist or does not run (" + orNone(st.Error) + ")"
	case st.Failures > 0 && state != flinkv1beta1.SnapshotCompleted:
		degraded.Status, degraded.Reason = metav1.ConditionTrue, string(ReasonSnapshotRetrying)
		degraded.Message = fmt.Sprintf("%s attempt %d failed, retried after a back-off: %s", what, st.Failures, orNone(st.Error))
	}
	return []metav1.Condition{ready, progressing, degraded}
}

func orNone(msg string) string {
	if msg == "" {
		return "no error recorded"
	}
	return msg
}
