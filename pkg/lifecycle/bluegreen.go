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

// Reasons of a FlinkBlueGreenDeployment's Progressing condition besides those of the job kinds
// (Deploying, Savepointing, Suspended, Settled, WaitingForUser, and those of its active child).
const (
	ReasonSwitching Reason = "Switching" // a new child is started to replace the active one
)

// BlueGreenView is what a FlinkBlueGreenDeployment's Progressing condition is decided from: its
// recorded state and what was observed of its children.
type BlueGreenView struct {
	State flinkv1beta1.FlinkBlueGreenDeploymentState
	// Error is status.error: a refused spec or a failed switch.
	Error string
	// Suspended: the template asks for a suspended job.
	Suspended bool
	// Active is the child serving (during a switch, the one being replaced), Target the child a
	// switch starts; nil when it does not exist.
	Active, Target *flinkv1beta1.FlinkDeployment
	// Savepoint is the FlinkStateSnapshot of a switch's savepoint, AbortAt when the step in
	// progress is given up (status.abortTimestamp).
	Savepoint, AbortAt string
}

// BlueGreenProgressing is a FlinkBlueGreenDeployment's Progressing condition, first match wins
// (TestBlueGreenProgressing is its specification):
//
//	SAVEPOINTING_*                           → Savepointing (True)
//	TRANSITIONING_*, no child to replace     → Deploying (True): the first child
//	TRANSITIONING_*                          → Switching (True)
//	status.error (refused spec, failed switch) → WaitingForUser (False)
//	active child Progressing                 → its reason (True): a suspend, resume or in-place
//	                                           change applied to the active child
//	suspended, or the active child still is  → Suspended (False)
//	otherwise                                → Settled (False)
//
// The steps of a switch come first: a switch goes on, and is aborted by itself, whatever the
// error of an earlier one says. RecordOperations follows this condition as it follows a
// FlinkDeployment's, so a switch is an Upgrade (Failed when aborted) and a first child a Deploy.
func BlueGreenProgressing(v BlueGreenView, generation int64) metav1.Condition {
	c := metav1.Condition{Type: ConditionProgressing, ObservedGeneration: generation, Status: metav1.ConditionFalse}
	act := func(r Reason, msg string) { c.Status, c.Reason, c.Message = metav1.ConditionTrue, string(r), msg }
	abort := ""
	if v.AbortAt != "" {
		abort = "; it is aborted at " + v.AbortAt + " unless it completes (kubernetes.operator.bluegreen.abort.grace-period)"
	}
	switch v.State {
	case flinkv1beta1.BlueGreenSavepointingBlue, flinkv1beta1.BlueGreenSavepointingGreen:
		act(ReasonSavepointing, "Taking a savepoint of "+childName(v.Active)+" (FlinkStateSnapshot "+orUnknown(v.Savepoint)+
			") for a new child to start from"+abort)
		return c
	case flinkv1beta1.BlueGreenTransitioningToBlue, flinkv1beta1.BlueGreenTransitioningToGreen:
		from := ""
		if p := restoreOf(v.Target); p != "" {
			from = " from " + p
		}
		if v.Active == nil {
			act(ReasonDeploying, "Deploying the first child "+childName(v.Target)+from+"; it becomes active once its job runs"+abort)
			return c
		}
		act(ReasonSwitching, "Starting "+childName(v.Target)+from+" to replace "+v.Active.Name+
			"; traffic switches to it and the old child is deleted once its job runs"+abort)
		return c
	}
	if v.Error != "" {
		c.Reason, c.Message = string(ReasonWaitingForUser), "Nothing is done until the spec changes: "+v.Error
		return c
	}
	var child *metav1.Condition
	if v.Active != nil {
		child = meta.FindStatusCondition(v.Active.Status.Conditions, ConditionProgressing)
	}
	if child != nil && child.Status == metav1.ConditionTrue {
		act(Reason(child.Reason), "The active FlinkDeployment "+v.Active.Name+" is "+child.Reason+": "+child.Message)
		return c
	}
	switch {
	case v.Suspended:
		c.Reason, c.Message = string(ReasonSuspended), "The job is suspended as spec.template.spec.job.state asks; set it to running to resume"
		return c
	case child != nil && Reason(child.Reason) == ReasonSuspended:
		// Asked to run, and the active child has not started its resume yet: the job is still
		// suspended (and the resume that follows is recorded as one).
		c.Reason, c.Message = string(ReasonSuspended), "The active FlinkDeployment "+v.Active.Name+" is still suspended; it resumes as spec.template.spec.job.state asks"
		return c
	}
	c.Reason, c.Message = string(ReasonSettled), "No switch in progress"
	return c
}

// BlueGreenStep is the OperationStep of a FlinkBlueGreenDeployment whose Progressing condition
// was just computed (after), with the one it had until then (before, nil if none): the snapshot
// is what the new child starts from.
func BlueGreenStep(v BlueGreenView, before *metav1.Condition, after, degraded metav1.Condition, generation int64, now metav1.Time) OperationStep {
	step := OperationStep{Before: before, After: after, Degraded: degraded, Generation: generation, Now: now}
	if v.State == flinkv1beta1.BlueGreenTransitioningToBlue || v.State == flinkv1beta1.BlueGreenTransitioningToGreen {
		step.Snapshot = restoreOf(v.Target)
	}
	return step
}

func childName(d *flinkv1beta1.FlinkDeployment) string {
	if d == nil {
		return "the child"
	}
	return d.Name
}

// restoreOf is the savepoint a child starts from ("" for none).
func restoreOf(d *flinkv1beta1.FlinkDeployment) string {
	if d == nil || d.Spec.Job == nil {
		return ""
	}
	return d.Spec.Job.InitialSavepointPath
}
