package lifecycle

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// Reasons of a FlinkBlueGreenDeployment's Degraded condition (its Ready and Progressing
// conditions are the blue/green controller's: Progressing's reason is the blue/green state).
const (
	ReasonBlueGreenInvalid Reason = "InvalidSpec"   // the spec or the operator's policy refuses it; nothing is changed
	ReasonSwitchFailed     Reason = "SwitchFailed"  // a switch was aborted or could not start; the active child stays
	ReasonActiveDegraded   Reason = "ChildDegraded" // the active child FlinkDeployment is Degraded
)

// BlueGreenDegraded is a FlinkBlueGreenDeployment's Degraded condition: its own refusal or
// failed switch first, then the active child's Degraded condition, which it passes on with the
// child's name so that a person knows which FlinkDeployment to look at.
func BlueGreenDegraded(invalid bool, statusError string, active *flinkv1beta1.FlinkDeployment, generation int64) metav1.Condition {
	c := metav1.Condition{Type: ConditionDegraded, ObservedGeneration: generation, Status: metav1.ConditionFalse,
		Reason: string(ReasonHealthy), Message: "Nothing wrong observed"}
	switch {
	case invalid:
		c.Status, c.Reason = metav1.ConditionTrue, string(ReasonBlueGreenInvalid)
		c.Message = statusError + ": fix the spec; no child and no Ingress is changed until then"
	case statusError != "":
		c.Status, c.Reason = metav1.ConditionTrue, string(ReasonSwitchFailed)
		c.Message = statusError + ": the same spec is not tried again, a spec change is"
	case active != nil:
		if d := meta.FindStatusCondition(active.Status.Conditions, ConditionDegraded); d != nil && d.Status == metav1.ConditionTrue {
			c.Status, c.Reason = metav1.ConditionTrue, string(ReasonActiveDegraded)
			c.Message = "The active FlinkDeployment " + active.Name + " is Degraded (" + d.Reason + "): " + d.Message
		}
	}
	return c
}
