package flinkbluegreendeployment

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/bluegreen"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// This file is where every blue/green state transition is written: one handler per action of
// pkg/bluegreen's state machine (as upstream's BlueGreenStateHandlerRegistry keeps one handler
// per state). Each handler changes the status, records it (writeStatus, with an optimistic lock,
// so a reconcile that read a stale copy acts on nothing), and only then touches the children,
// the savepoint or the ingress: an operator restarted between the two finds the step recorded
// and carries it out again.

// transition is one reconcile's step: the resource (its status being changed), the status as it
// was read (base, from which the status patch is computed), what was observed and the step
// pkg/bluegreen decided.
type transition struct {
	bg   *flinkv1beta1.FlinkBlueGreenDeployment
	base *flinkv1beta1.FlinkBlueGreenDeployment
	obs  *observed
	step bluegreen.Step
	now  time.Time
}

// actionHandler carries out one action of the state machine.
type actionHandler func(r *FlinkBlueGreenDeploymentReconciler, ctx context.Context, t *transition) (ctrl.Result, error)

// actionHandlers has a handler for every bluegreen.Actions() (a test checks it).
var actionHandlers = map[bluegreen.Action]actionHandler{
	bluegreen.ActionNone:             (*FlinkBlueGreenDeploymentReconciler).rest,
	bluegreen.ActionWait:             (*FlinkBlueGreenDeploymentReconciler).wait,
	bluegreen.ActionDeploy:           (*FlinkBlueGreenDeploymentReconciler).deploy,
	bluegreen.ActionDeployRecorded:   (*FlinkBlueGreenDeploymentReconciler).deployRecorded,
	bluegreen.ActionPatchActive:      (*FlinkBlueGreenDeploymentReconciler).patchActive,
	bluegreen.ActionTriggerSavepoint: (*FlinkBlueGreenDeploymentReconciler).triggerSavepoint,
	bluegreen.ActionRecordReady:      (*FlinkBlueGreenDeploymentReconciler).recordReady,
	bluegreen.ActionFinalize:         (*FlinkBlueGreenDeploymentReconciler).finalize,
	bluegreen.ActionAbort:            (*FlinkBlueGreenDeploymentReconciler).abort,
	bluegreen.ActionFail:             (*FlinkBlueGreenDeploymentReconciler).fail,
	bluegreen.ActionFailNotReady:     (*FlinkBlueGreenDeploymentReconciler).failNotReady,
}

// act records step in the status, then carries out its action.
func (r *FlinkBlueGreenDeploymentReconciler) act(ctx context.Context, bg *flinkv1beta1.FlinkBlueGreenDeployment, obs *observed, step bluegreen.Step) (ctrl.Result, error) {
	handle, ok := actionHandlers[step.Action]
	if !ok {
		return ctrl.Result{}, fmt.Errorf("unknown blue/green action %q", step.Action)
	}
	base := bg.DeepCopy()
	base.Status = *obs.stored.DeepCopy()
	bg.Status.BlueGreenState = step.Next
	return handle(r, ctx, &transition{bg: bg, base: base, obs: obs, step: step, now: r.now()})
}

func (t *transition) status() *flinkv1beta1.FlinkBlueGreenDeploymentStatus { return &t.bg.Status }

// target is the child the step acts on (nil when it does not exist).
func (t *transition) target() *flinkv1beta1.FlinkDeployment { return t.obs.children[t.step.Target] }

// recordSpec records the current spec as the one acted upon.
func (t *transition) recordSpec() error {
	spec, err := bluegreen.MarshalSpec(&t.bg.Spec)
	if err != nil {
		return err
	}
	t.bg.Status.LastReconciledSpec = spec
	t.bg.Status.ObservedGeneration = t.bg.Generation
	return nil
}

// resetMarkers forgets the switch's timestamps and savepoint: it ended.
func (t *transition) resetMarkers() {
	st := t.status()
	st.AbortTimestamp, st.DeploymentReadyTimestamp, st.SavepointTriggerID = "", "", ""
}

// abortAt is when a step started now is given up.
func (t *transition) abortAt() string {
	return t.now.Add(t.obs.opts.AbortGracePeriod).UTC().Format(time.RFC3339Nano)
}

// record sets the conditions for the new status and writes it.
func (r *FlinkBlueGreenDeploymentReconciler) record(ctx context.Context, t *transition) error {
	r.setConditions(t.bg, t.obs)
	return r.writeStatus(ctx, t.base, t.bg)
}

// lookAgain is the result of a step in progress.
func (r *FlinkBlueGreenDeploymentReconciler) lookAgain(t *transition) ctrl.Result {
	return ctrl.Result{RequeueAfter: r.nextLook(t.bg, t.obs.opts)}
}

// rest (ActionNone) shows the active child's job; at rest it also keeps that child, the
// ingress and the retirement of the replaced child as recorded.
func (r *FlinkBlueGreenDeploymentReconciler) rest(ctx context.Context, t *transition) (ctrl.Result, error) {
	bg, st := t.bg, t.status()
	r.mirrorJobStatus(bg, t.target(), t.obs)
	if t.obs.wasInvalid {
		r.setConditions(bg, t.obs) // the refusal's condition goes with it
	}
	if t.step.Next == flinkv1beta1.BlueGreenInitializingBlue && bluegreen.IsSuspended(&bg.Spec) {
		st.JobStatus.State = flinkv1beta1.JobStatusSuspended
	}
	if err := r.writeStatus(ctx, t.base, bg); err != nil {
		return ctrl.Result{}, err
	}
	if _, resting := bluegreen.Active(t.step.Next); resting {
		return ctrl.Result{}, r.keepActive(ctx, t)
	}
	return ctrl.Result{}, nil
}

// keepActive deletes a child a finished switch replaced, re-applies the recorded template to the
// active child (in case the operator stopped between recording and applying it) unless a switch
// failed, and points the ingress at the active child.
func (r *FlinkBlueGreenDeploymentReconciler) keepActive(ctx context.Context, t *transition) error {
	bg := t.bg
	if err := r.retireOthers(ctx, bg, t.obs, t.step.Target); err != nil {
		return err
	}
	if active := t.target(); bg.Status.Error == "" && active != nil {
		if _, err := r.ensureChild(ctx, bg, &bg.Spec.Template, t.step.Target, restorePathOf(active), active); err != nil {
			return err
		}
	}
	return r.reconcileIngress(ctx, bg, t.step.Target)
}

// wait (ActionWait): a savepoint or a new child is under way.
func (r *FlinkBlueGreenDeploymentReconciler) wait(ctx context.Context, t *transition) (ctrl.Result, error) {
	st := t.status()
	if t.obs.savepoint == nil && st.SavepointTriggerID != "" && isSavepointing(t.step.Next) {
		// Recorded, not created: the operator stopped in between.
		if err := r.createSavepoint(ctx, t.bg, t.step.Target); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.record(ctx, t); err != nil {
		return ctrl.Result{}, err
	}
	return r.lookAgain(t), nil
}

// deploy (ActionDeploy) creates or updates the target child from the current template.
func (r *FlinkBlueGreenDeploymentReconciler) deploy(ctx context.Context, t *transition) (ctrl.Result, error) {
	return r.deploySpec(ctx, t, &t.bg.Spec)
}

// deployRecorded (ActionDeployRecorded) creates the target child from the recorded template:
// the current one asks for a suspend that waits for the switch to end, so it is neither applied
// to the new child nor recorded.
func (r *FlinkBlueGreenDeploymentReconciler) deployRecorded(ctx context.Context, t *transition) (ctrl.Result, error) {
	if t.obs.last != nil {
		return r.deploySpec(ctx, t, t.obs.last)
	}
	return r.deploySpec(ctx, t, &t.bg.Spec)
}

// deploySpec starts (or updates) the target child from spec, recording spec when it is the
// current one. The child starts from the switch's savepoint, else from initialSavepointPath.
func (r *FlinkBlueGreenDeploymentReconciler) deploySpec(ctx context.Context, t *transition, spec *flinkv1beta1.FlinkBlueGreenDeploymentSpec) (ctrl.Result, error) {
	st := t.status()
	diff := bluegreen.Compare(t.obs.last, spec)
	if diff == bluegreen.DiffSavepointRedeploy {
		// The user chose the state to start from (upstream's startSavepointRedeployTransition):
		// the new child starts from initialSavepointPath, never from a savepoint of the switch.
		st.SavepointTriggerID = ""
	}
	// A new spec (or a new switch) gets a grace period of its own; the same spec redeployed
	// (its child was missing or being replaced) keeps the one running.
	_, graceRunning := parseTimestamp(st.AbortTimestamp)
	sameSwitch := isTransitioning(t.base.Status.BlueGreenState) && graceRunning && diff == bluegreen.DiffNone
	if !sameSwitch {
		st.AbortTimestamp = t.abortAt()
	}
	st.DeploymentReadyTimestamp = ""
	st.JobStatus.State = flinkv1beta1.JobStatusReconciling
	st.Error = ""
	if spec == &t.bg.Spec {
		if err := t.recordSpec(); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.record(ctx, t); err != nil {
		return ctrl.Result{}, err
	}
	path, err := r.restorePath(t.bg, spec, t.obs)
	if err != nil {
		return ctrl.Result{}, err
	}
	done, err := r.ensureChild(ctx, t.bg, &spec.Template, t.step.Target, path, t.target())
	if err != nil || !done {
		return reconciler.RequeueSoon(), err
	}
	return r.lookAgain(t), nil
}

// patchActive (ActionPatchActive) applies the template to the active child in place: suspend,
// resume, a change that needs no new child, or a suspend asked for during the switch's
// savepoint (the switch is given up).
func (r *FlinkBlueGreenDeploymentReconciler) patchActive(ctx context.Context, t *transition) (ctrl.Result, error) {
	bg, st := t.bg, t.status()
	if isSavepointing(t.base.Status.BlueGreenState) {
		if err := r.dropSavepoint(ctx, t.obs); err != nil {
			return ctrl.Result{}, err
		}
		t.resetMarkers()
	}
	if bluegreen.IsSuspended(&bg.Spec) {
		st.JobStatus.State = flinkv1beta1.JobStatusSuspended
	} else {
		st.JobStatus.State = flinkv1beta1.JobStatusReconciling
	}
	st.Error = ""
	if err := t.recordSpec(); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.record(ctx, t); err != nil {
		return ctrl.Result{}, err
	}
	done, err := r.ensureChild(ctx, bg, &bg.Spec.Template, t.step.Target, restorePathOf(t.target()), t.target())
	if err != nil || !done {
		return reconciler.RequeueSoon(), err
	}
	r.Recorder.Eventf(bg, "Normal", ReasonBlueGreenPatched, "Applied the template to the active child %s in place", childName(bg, t.step.Target))
	return r.lookAgain(t), nil
}

// triggerSavepoint (ActionTriggerSavepoint) records the savepoint of the active child a switch
// starts from, then creates its FlinkStateSnapshot.
func (r *FlinkBlueGreenDeploymentReconciler) triggerSavepoint(ctx context.Context, t *transition) (ctrl.Result, error) {
	bg, st := t.bg, t.status()
	st.SavepointTriggerID = savepointName(bg, t.step.Target)
	st.AbortTimestamp = t.abortAt()
	st.DeploymentReadyTimestamp = ""
	if err := r.record(ctx, t); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.createSavepoint(ctx, bg, t.step.Target); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(bg, "Normal", ReasonBlueGreenSavepoint, "Savepoint %s of %s for the switch to %s",
		st.SavepointTriggerID, childName(bg, t.step.Target), childName(bg, t.step.Target.Other()))
	return r.lookAgain(t), nil
}

// recordReady (ActionRecordReady) records when the new child became ready: the deletion delay
// counts from then.
func (r *FlinkBlueGreenDeploymentReconciler) recordReady(ctx context.Context, t *transition) (ctrl.Result, error) {
	t.status().DeploymentReadyTimestamp = t.now.UTC().Format(time.RFC3339Nano)
	if err := r.record(ctx, t); err != nil {
		return ctrl.Result{}, err
	}
	if t.obs.opts.DeletionDelay <= 0 {
		return reconciler.RequeueSoon(), nil
	}
	return ctrl.Result{RequeueAfter: t.obs.opts.DeletionDelay}, nil
}

// finalize (ActionFinalize) makes the new child the active one: the switch is recorded, the
// ingress points at the new child and the old one is deleted.
func (r *FlinkBlueGreenDeploymentReconciler) finalize(ctx context.Context, t *transition) (ctrl.Result, error) {
	bg := t.bg
	old := t.obs.children[t.step.Target.Other()]
	if old != nil {
		// Marked before the switch is recorded: a restart after the record still deletes it.
		if err := r.markRetired(ctx, old); err != nil {
			return ctrl.Result{}, err
		}
	}
	t.resetMarkers()
	t.status().Error = ""
	r.mirrorJobStatus(bg, t.target(), t.obs)
	if err := r.record(ctx, t); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.reconcileIngress(ctx, bg, t.step.Target); err != nil {
		return ctrl.Result{}, err
	}
	if old != nil {
		if err := r.Client.Delete(ctx, old); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete replaced child %s: %w", old.Name, err)
		}
	}
	r.Recorder.Eventf(bg, "Normal", ReasonBlueGreenSwitched, "%s is active (%s)", childName(bg, t.step.Target), t.step.Next)
	return reconciler.RequeueSoon(), nil
}

// abort (ActionAbort): the new child was not ready within the grace period. The failure is
// recorded, the new child is suspended (kept for inspection) and the old one stays active.
func (r *FlinkBlueGreenDeploymentReconciler) abort(ctx context.Context, t *transition) (ctrl.Result, error) {
	bg, st := t.bg, t.status()
	t.resetMarkers()
	st.JobStatus.State = flinkv1beta1.JobStatusFailing
	st.Error = fmt.Sprintf("Aborting deployment '%s', rolling B/G deployment back to %s: not ready within %s (%s)",
		childName(bg, t.step.Target), t.step.Next, t.obs.opts.AbortGracePeriod, options.BlueGreenAbortGracePeriod.Key)
	if err := r.record(ctx, t); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.suspendChild(ctx, t.target()); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Event(bg, "Warning", ReasonBlueGreenAborted, st.Error)
	return ctrl.Result{}, nil
}

// fail (ActionFail): the savepoint of the switch failed or took too long. The active child
// keeps running untouched; the spec is recorded so that it is not retried in a loop.
func (r *FlinkBlueGreenDeploymentReconciler) fail(ctx context.Context, t *transition) (ctrl.Result, error) {
	bg, st := t.bg, t.status()
	reason := "the savepoint did not complete within " + t.obs.opts.AbortGracePeriod.String()
	if t.obs.savepoint != nil && t.obs.savepoint.Status.Error != "" {
		reason = t.obs.savepoint.Status.Error
	}
	// Deleted before the failure is recorded (a restart in between only retries the savepoint).
	if err := r.dropSavepoint(ctx, t.obs); err != nil {
		return ctrl.Result{}, err
	}
	t.resetMarkers()
	st.JobStatus.State = flinkv1beta1.JobStatusFailing
	active := childName(bg, t.step.Target)
	st.Error = fmt.Sprintf("Savepoint of '%s' failed, %s stays active: %s", active, active, reason)
	// Recorded so that the same spec is not retried in a loop; the next change retries.
	if err := t.recordSpec(); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.record(ctx, t); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Event(bg, "Warning", ReasonBlueGreenFailed, st.Error)
	return ctrl.Result{}, nil
}

// failNotReady (ActionFailNotReady): upstream's checkAndInitiateDeployment. A change while the
// active child is not ready is reported and recorded (the same spec is not retried), and no
// child is touched; the next change tries again.
func (r *FlinkBlueGreenDeploymentReconciler) failNotReady(ctx context.Context, t *transition) (ctrl.Result, error) {
	bg, st := t.bg, t.status()
	st.JobStatus.State = flinkv1beta1.JobStatusFailing
	st.Error = fmt.Sprintf("Transition to %s not possible, current Flink Deployment '%s' is not READY. FAILING '%s'",
		t.step.Target.Other(), childName(bg, t.step.Target), bg.Name)
	if err := t.recordSpec(); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.record(ctx, t); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Event(bg, "Warning", ReasonBlueGreenNotReady, st.Error)
	return ctrl.Result{}, nil
}
