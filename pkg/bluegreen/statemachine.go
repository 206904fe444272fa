// Package bluegreen holds the decisions of the FlinkBlueGreenDeployment controller that need
// no cluster: the state machine (which step follows which, given what was observed), the
// comparison of a spec with the last reconciled one, and the kubernetes.operator.bluegreen.*
// options. The controller observes, asks Next, records the answer in the status and only then
// acts, so that every decision is a row of a table a test can list.
package bluegreen

import (
	"fmt"
	"strings"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// Color names a child FlinkDeployment.
type Color string

// The two children.
const (
	Blue  Color = "BLUE"
	Green Color = "GREEN"
)

// Other is the child that is not c.
func (c Color) Other() Color {
	if c == Blue {
		return Green
	}
	return Blue
}

// Action is what the controller does after it has recorded the next state.
type Action string

// Actions.
const (
	// ActionNone: nothing to do but keep the active child's ingress in place.
	ActionNone Action = "None"
	// ActionWait: a step is in progress; look again after the reschedule interval.
	ActionWait Action = "Wait"
	// ActionDeploy creates or updates the target child from the template (and, during a
	// switch, from the savepoint of the active child).
	ActionDeploy Action = "Deploy"
	// ActionPatchActive applies the template to the active child in place (suspend, resume,
	// or a change while the active child is not ready to be savepointed).
	ActionPatchActive Action = "PatchActive"
	// ActionTriggerSavepoint takes a savepoint of the active child.
	ActionTriggerSavepoint Action = "TriggerSavepoint"
	// ActionRecordReady records when the new child became ready; the deletion delay counts from then.
	ActionRecordReady Action = "RecordReady"
	// ActionFinalize switches the ingress to the new child and deletes the old one.
	ActionFinalize Action = "Finalize"
	// ActionAbort suspends the new child and keeps the active one; the switch failed.
	ActionAbort Action = "Abort"
	// ActionFail records an error and stays with the active child (savepoint failed).
	ActionFail Action = "Fail"
	// ActionFailNotReady records that a change cannot be carried out because the active child
	// is not ready, and touches no child (upstream's "Transition to ... not possible").
	ActionFailNotReady Action = "FailNotReady"
	// ActionDeployRecorded (re)creates the target child from the last reconciled template: the
	// current one asks for a suspend, which waits until the switch has ended.
	ActionDeployRecorded Action = "DeployRecorded"
)

// Actions are every action Next can return, so that a caller that maps actions to handlers
// can check it has one for each.
func Actions() []Action {
	return []Action{ActionNone, ActionWait, ActionDeploy, ActionDeployRecorded, ActionPatchActive,
		ActionTriggerSavepoint, ActionRecordReady, ActionFinalize, ActionAbort, ActionFail, ActionFailNotReady}
}

// States are the states Next decides from (besides "", a resource never reconciled), in the
// order of the CRD's enum of status.blueGreenState.
func States() []flinkv1beta1.FlinkBlueGreenDeploymentState {
	return []flinkv1beta1.FlinkBlueGreenDeploymentState{
		flinkv1beta1.BlueGreenActiveBlue, flinkv1beta1.BlueGreenActiveGreen, flinkv1beta1.BlueGreenInitializingBlue,
		flinkv1beta1.BlueGreenSavepointingBlue, flinkv1beta1.BlueGreenSavepointingGreen,
		flinkv1beta1.BlueGreenTransitioningToBlue, flinkv1beta1.BlueGreenTransitioningToGreen,
	}
}

// UnknownStateError is status.blueGreenState holding a value that is not one of States(). The
// CRD's enum keeps other values out, so this is a state written by an operator version with
// states this one lacks (rolling the operator back keeps the newer CRD), or a CRD edited by hand.
// The state says which child serves and which step of a switch is under way; guessing (say,
// starting over from INITIALIZING_BLUE) could deploy blue over a serving green, so nothing is
// decided or touched until the state is corrected (or the operator that wrote it runs again).
type UnknownStateError struct {
	State flinkv1beta1.FlinkBlueGreenDeploymentState
}

func (e *UnknownStateError) Error() string {
	names := make([]string, 0, len(States()))
	for _, s := range States() {
		names = append(names, string(s))
	}
	return fmt.Sprintf("status.blueGreenState: %q is not a blue/green state (allowed: %s); no child is changed until it is corrected",
		e.State, strings.Join(names, ", "))
}

// CheckState returns an *UnknownStateError unless s is one of States() or "" (never reconciled).
func CheckState(s flinkv1beta1.FlinkBlueGreenDeploymentState) error {
	if s == "" {
		return nil
	}
	for _, known := range States() {
		if s == known {
			return nil
		}
	}
	return &UnknownStateError{State: s}
}

// Diff is how the template differs from the last reconciled one.
type Diff string

// Diffs.
const (
	// DiffNone: nothing changed (the zero value).
	DiffNone Diff = ""
	// DiffTransition: the change needs a new child (a blue/green switch).
	DiffTransition Diff = "Transition"
	// DiffInPlace: the change applies to the active child in place (suspend, resume).
	DiffInPlace Diff = "InPlace"
	// DiffPatch: only fields that need no restart of the job changed (trigger nonces, upgrade
	// mode, operator options...): upstream's PATCH_CHILD, applied to the active child in place.
	DiffPatch Diff = "Patch"
	// DiffSavepointRedeploy: a new savepointRedeployNonce asks for a new child started from the
	// template's initialSavepointPath, without a savepoint of the active child.
	DiffSavepointRedeploy Diff = "SavepointRedeploy"
)

// Inputs is what the controller observed, in the terms the state machine decides on.
type Inputs struct {
	// Diff of the template against the last reconciled one.
	Diff Diff
	// Reconciled: a spec was recorded (status.lastReconciledSpec).
	Reconciled bool
	// Suspended: the template asks for job.state suspended.
	Suspended bool
	// NeedsSavepoint: the template's upgradeMode keeps state (savepoint, last-state), so a
	// switch starts the new child from a savepoint of the active one.
	NeedsSavepoint bool
	// ActiveReady: the active child's job runs and its resource is stable.
	ActiveReady bool
	// TargetExists: the child being started (during a transition) exists.
	TargetExists bool
	// TargetReady: that child's job runs and its resource is stable.
	TargetReady bool
	// ActiveExists: the child being replaced exists (false on the first deployment).
	ActiveExists bool
	// SavepointDone / SavepointFailed: the savepoint of the active child finished.
	SavepointDone   bool
	SavepointFailed bool
	// ReadyRecorded: deploymentReadyTimestamp is set.
	ReadyRecorded bool
	// AbortGraceElapsed: abortTimestamp has passed.
	AbortGraceElapsed bool
	// DeletionDelayElapsed: deployment-deletion.delay has passed since deploymentReadyTimestamp.
	DeletionDelayElapsed bool
	// Failing: the resource reports a failure (status.error), e.g. an aborted switch.
	Failing bool
}

// Step is the state machine's answer: the state to record, then the action to take, on the
// child Target.
type Step struct {
	Next   flinkv1beta1.FlinkBlueGreenDeploymentState
	Action Action
	Target Color
}

// Active is the child serving in state s (for transitions, the child being replaced), and
// whether s is a resting state.
func Active(s flinkv1beta1.FlinkBlueGreenDeploymentState) (Color, bool) {
	switch s {
	case flinkv1beta1.BlueGreenActiveBlue:
		return Blue, true
	case flinkv1beta1.BlueGreenActiveGreen:
		return Green, true
	case flinkv1beta1.BlueGreenSavepointingBlue, flinkv1beta1.BlueGreenTransitioningToGreen:
		return Blue, false
	case flinkv1beta1.BlueGreenSavepointingGreen, flinkv1beta1.BlueGreenTransitioningToBlue:
		return Green, false
	}
	return Blue, false
}

// ActiveState is the resting state with c serving.
func ActiveState(c Color) flinkv1beta1.FlinkBlueGreenDeploymentState {
	if c == Blue {
		return flinkv1beta1.BlueGreenActiveBlue
	}
	return flinkv1beta1.BlueGreenActiveGreen
}

func savepointingState(c Color) flinkv1beta1.FlinkBlueGreenDeploymentState {
	if c == Blue {
		return flinkv1beta1.BlueGreenSavepointingBlue
	}
	return flinkv1beta1.BlueGreenSavepointingGreen
}

// TransitioningState is the state that starts child c.
func TransitioningState(c Color) flinkv1beta1.FlinkBlueGreenDeploymentState {
	if c == Blue {
		return flinkv1beta1.BlueGreenTransitioningToBlue
	}
	return flinkv1beta1.BlueGreenTransitioningToGreen
}

// Target is the child a state starts: for TRANSITIONING_TO_X it is X.
func Target(s flinkv1beta1.FlinkBlueGreenDeploymentState) Color {
	if s == flinkv1beta1.BlueGreenTransitioningToGreen {
		return Green
	}
	return Blue
}

// Next decides the step from state s given in. An empty state is a new resource. A state that
// is not one of States() is an *UnknownStateError and no step: see UnknownStateError for why it
// is not treated as a new resource.
func Next(s flinkv1beta1.FlinkBlueGreenDeploymentState, in Inputs) (Step, error) {
	if err := CheckState(s); err != nil {
		return Step{}, err
	}
	stay := func(a Action, c Color) (Step, error) { return Step{Next: s, Action: a, Target: c}, nil }
	switch s {
	case "", flinkv1beta1.BlueGreenInitializingBlue:
		// The first child is blue; a template that starts suspended waits for running, and a
		// first deployment that was aborted waits for a new spec.
		if in.Suspended || (in.Reconciled && in.Diff == DiffNone) {
			return Step{Next: flinkv1beta1.BlueGreenInitializingBlue, Action: ActionNone, Target: Blue}, nil
		}
		return Step{Next: flinkv1beta1.BlueGreenTransitioningToBlue, Action: ActionDeploy, Target: Blue}, nil

	case flinkv1beta1.BlueGreenActiveBlue, flinkv1beta1.BlueGreenActiveGreen:
		active, _ := Active(s)
		switch {
		case in.Diff == DiffNone:
			return stay(ActionNone, active)
		case in.Diff == DiffInPlace || in.Suspended:
			// Suspend and resume act on the active child; so does any change while it is
			// suspended (it takes the change when resumed).
			return stay(ActionPatchActive, active)
		case !in.ActiveReady && in.Failing:
			// Already reported: the change waits until the active child is ready again.
			return stay(ActionNone, active)
		case !in.ActiveReady:
			// Neither a switch (no savepoint of a child that is not running) nor a patch
			// (an upgrade with downtime): upstream reports it and touches nothing.
			return stay(ActionFailNotReady, active)
		case in.Diff == DiffPatch:
			return stay(ActionPatchActive, active)
		case in.Diff == DiffSavepointRedeploy:
			// The user chose the state: the new child starts from initialSavepointPath, so no
			// savepoint of the active child is taken.
			return Step{Next: TransitioningState(active.Other()), Action: ActionDeploy, Target: active.Other()}, nil
		case in.NeedsSavepoint:
			return Step{Next: savepointingState(active), Action: ActionTriggerSavepoint, Target: active}, nil
		default:
			return Step{Next: TransitioningState(active.Other()), Action: ActionDeploy, Target: active.Other()}, nil
		}

	case flinkv1beta1.BlueGreenSavepointingBlue, flinkv1beta1.BlueGreenSavepointingGreen:
		active, _ := Active(s)
		ended := in.SavepointDone || in.SavepointFailed || in.AbortGraceElapsed
		switch {
		case in.Suspended && ended:
			// A suspend asked for while the savepoint was taken: no switch, the active child
			// is suspended in place.
			return Step{Next: ActiveState(active), Action: ActionPatchActive, Target: active}, nil
		case in.SavepointDone:
			return Step{Next: TransitioningState(active.Other()), Action: ActionDeploy, Target: active.Other()}, nil
		case in.SavepointFailed || in.AbortGraceElapsed:
			// The active child keeps running untouched; the error says why no switch happened.
			return Step{Next: ActiveState(active), Action: ActionFail, Target: active}, nil
		default:
			return stay(ActionWait, active)
		}

	case flinkv1beta1.BlueGreenTransitioningToBlue, flinkv1beta1.BlueGreenTransitioningToGreen:
		target := Target(s)
		// A suspend asked for during the switch waits for it to end (upstream's
		// handleSpecChangesDuringTransition): the new child never gets it, and it is not
		// recorded, so that the resting state that follows suspends the active child.
		suspendWaits := in.Diff == DiffInPlace && in.Suspended
		switch {
		case !in.TargetExists && suspendWaits:
			return stay(ActionDeployRecorded, target)
		case !in.TargetExists || (in.Diff != DiffNone && !suspendWaits):
			// Not created yet (the operator stopped after recording this state), or the
			// template changed again: (re)apply the template to the new child.
			return stay(ActionDeploy, target)
		case in.TargetReady && (!in.ActiveExists || (in.ReadyRecorded && in.DeletionDelayElapsed)):
			return Step{Next: ActiveState(target), Action: ActionFinalize, Target: target}, nil
		case in.TargetReady && !in.ReadyRecorded:
			return stay(ActionRecordReady, target)
		case in.TargetReady:
			return stay(ActionWait, target)
		case in.AbortGraceElapsed:
			if !in.ActiveExists {
				return Step{Next: flinkv1beta1.BlueGreenInitializingBlue, Action: ActionAbort, Target: target}, nil
			}
			return Step{Next: ActiveState(target.Other()), Action: ActionAbort, Target: target}, nil
		default:
			return stay(ActionWait, target)
		}
	}
	// In States() but without a case above: a state added to the list and not to the machine.
	return Step{}, &UnknownStateError{State: s}
}
