package flinkbluegreendeployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/bluegreen"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/redact"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// Event reasons of the blue/green controller.
const (
	ReasonBlueGreenDeploy    = "BlueGreenDeploy"
	ReasonBlueGreenSavepoint = "BlueGreenSavepoint"
	ReasonBlueGreenSwitched  = "BlueGreenSwitched"
	ReasonBlueGreenAborted   = "BlueGreenAborted"
	ReasonBlueGreenFailed    = "BlueGreenFailed"
	ReasonBlueGreenPatched   = "BlueGreenPatched"
	ReasonBlueGreenNotReady  = "BlueGreenNotReady"
)

// Condition types of a FlinkBlueGreenDeployment.
const (
	// ConditionBlueGreenReady: a child is active, its job runs, and no switch failed.
	ConditionBlueGreenReady = "Ready"
	// ConditionBlueGreenProgressing: the first child, a switch, or a change of the active child
	// is under way (lifecycle.BlueGreenProgressing).
	ConditionBlueGreenProgressing = "Progressing"
)

// ReasonInvalid is the Ready condition's reason while the resource cannot be acted upon.
const ReasonInvalid = "Invalid"

// AnnotationBlueGreenRetired marks the child a finished switch replaced: it is deleted even
// if the operator stopped between recording the switch and deleting it.
const AnnotationBlueGreenRetired = "flink.apache.org/bluegreen-retired"

// FlinkBlueGreenDeploymentReconciler runs a FlinkBlueGreenDeployment as two child
// FlinkDeployments, <name>-blue and <name>-green, which the FlinkDeployment controller runs.
// The decisions are pkg/bluegreen's state machine; this reconciler observes the children and
// the savepoint, records the next state in the status (write-ahead, with an optimistic lock so
// a stale copy never records anything) and only then acts, so a restart resumes the step.
type FlinkBlueGreenDeploymentReconciler struct {
	// ReconcilerOptions and Intervals are the wiring all reconcilers share (reconciler/options.go): the
	// reconcile deadline, rate limits, listener and secret patterns.
	reconciler.ReconcilerOptions
	Intervals reconciler.Intervals

	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
	// Now is the clock (time.Now when nil); tests move it past grace periods.
	Now func() time.Time
	// Validator holds the operator-wide policy (pod security level, Ingress annotations and
	// hosts) applied before every reconcile acts; nil applies none.
	Validator *validation.Validator
	// PerNamespace is how many reconciles of one namespace run at once (RateLimits.PerNamespace);
	// zero is no limit.
	PerNamespace int
}

// Reads go through the manager's cache (list and watch). The children, snapshots and ingress
// carry ownerReferences with blockOwnerDeletion, which needs update on the resource's finalizers
// subresource where the OwnerReferencesPermissionEnforcement admission plugin runs.
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinkbluegreendeployments,verbs=list;watch
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinkbluegreendeployments/status,verbs=patch
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinkbluegreendeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinkdeployments,verbs=list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinkstatesnapshots,verbs=list;watch;create

// SetupWithManager watches the resources and what they own: the children (also those whose
// owner reference is not a controller reference, as upstream's operator writes them), the
// savepoint snapshots and the ingress.
func (r *FlinkBlueGreenDeploymentReconciler) SetupWithManager(mgr ctrl.Manager) error {
	owner := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &flinkv1beta1.FlinkBlueGreenDeployment{})
	return r.setUpBlueGreen(mgr, func(b *builder.Builder) *builder.Builder {
		return b.For(&flinkv1beta1.FlinkBlueGreenDeployment{}).
			Watches(&flinkv1beta1.FlinkDeployment{}, owner).
			Watches(&flinkv1beta1.FlinkStateSnapshot{}, owner).
			Watches(&networkingv1.Ingress{}, owner)
	})
}

func (r *FlinkBlueGreenDeploymentReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// childName is upstream's name of a child: <name>-blue, <name>-green.
func childName(bg *flinkv1beta1.FlinkBlueGreenDeployment, c bluegreen.Color) string {
	return bg.Name + "-" + strings.ToLower(string(c))
}

// savepointName names the snapshot of a switch: one per generation and color, so a reconcile
// that repeats the step (after a restart) finds the snapshot instead of taking another.
func savepointName(bg *flinkv1beta1.FlinkBlueGreenDeployment, c bluegreen.Color) string {
	return fmt.Sprintf("%s-%d", childName(bg, c), bg.Generation)
}

// observed is what one reconcile saw.
type observed struct {
	children  map[bluegreen.Color]*flinkv1beta1.FlinkDeployment
	savepoint *flinkv1beta1.FlinkStateSnapshot
	last      *flinkv1beta1.FlinkBlueGreenDeploymentSpec
	opts      bluegreen.Options
	// stored is the status as read, before observe cleared a refusal that no longer holds:
	// status patches are computed from it, so the clearing is written too.
	stored flinkv1beta1.FlinkBlueGreenDeploymentStatus
	// wasInvalid: the Ready condition reported a refusal that no longer holds.
	wasInvalid bool
}

func (r *FlinkBlueGreenDeploymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	bg := &flinkv1beta1.FlinkBlueGreenDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, bg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !bg.DeletionTimestamp.IsZero() {
		// The children, snapshots and ingress are owned: the garbage collector removes them.
		return ctrl.Result{}, nil
	}
	obs, err := r.observe(ctx, bg)
	if err != nil {
		return ctrl.Result{}, err
	}
	if obs == nil {
		return ctrl.Result{}, nil // invalid: recorded in the status
	}

	in := r.inputs(bg, obs)
	step, err := bluegreen.Next(bg.Status.BlueGreenState, in)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("decide the blue/green step: %w", err) // observe refused an unknown state already
	}
	log.FromContext(ctx).V(1).Info("blue/green step", "state", bg.Status.BlueGreenState, "next", step.Next, "action", step.Action, "target", step.Target)
	res, err := r.act(ctx, bg, obs, step)
	if apierrors.IsConflict(err) {
		// The status moved on since this copy was read: decide again on the new one.
		return reconciler.RequeueSoon(), nil
	}
	return res, err
}

// observe reads the children and the savepoint in progress. It returns nil (and records why)
// when the resource cannot be acted upon.
func (r *FlinkBlueGreenDeploymentReconciler) observe(ctx context.Context, bg *flinkv1beta1.FlinkBlueGreenDeployment) (*observed, error) {
	obs := &observed{children: map[bluegreen.Color]*flinkv1beta1.FlinkDeployment{}}
	opts, optErrs := bluegreen.ParseOptions(bg.Spec.Configuration)
	if len(optErrs) > 0 {
		return nil, r.recordInvalid(ctx, bg, optErrs[0].Error())
	}
	obs.opts = opts
	// The operator-wide policy, again: the resource may have been admitted before the policy
	// changed, or without the webhook. Refused here, nothing is created or changed (children,
	// Ingress); what runs stays as it is, as a FlinkDeployment keeps its last deployed spec.
	if r.Validator != nil {
		if errs := r.Validator.ValidateBlueGreenPolicy(bg); len(errs) > 0 {
			return nil, r.recordInvalid(ctx, bg, errs.ToAggregate().Error())
		}
	}
	// A state this operator does not know says nothing of which child serves: refused, nothing
	// is decided or touched until it is corrected (see bluegreen.UnknownStateError). Checked
	// before a former refusal is cleared below, so that the same refusal is not written again.
	if err := bluegreen.CheckState(bg.Status.BlueGreenState); err != nil {
		return nil, r.recordInvalid(ctx, bg, err.Error())
	}
	// The Ingress is checked here too, for the same reason: refused while acting, after the
	// step's status write cleared the refusal, it would be written anew on every reconcile, each
	// write a watch event and another reconcile.
	if refusal, err := r.ingressRefusal(ctx, bg); err != nil || refusal != "" {
		if err != nil {
			return nil, err
		}
		return nil, r.recordInvalid(ctx, bg, refusal)
	}
	obs.stored = *bg.Status.DeepCopy()
	if c := meta.FindStatusCondition(bg.Status.Conditions, ConditionBlueGreenReady); c != nil && c.Reason == ReasonInvalid {
		bg.Status.Error = "" // fixed since: the conditions are set anew below
		obs.wasInvalid = true
	}
	last, _, err := bluegreen.UnmarshalSpec(bg.Status.LastReconciledSpec)
	if err != nil {
		return nil, r.recordInvalid(ctx, bg, err.Error())
	}
	obs.last = last
	for _, c := range []bluegreen.Color{bluegreen.Blue, bluegreen.Green} {
		child := &flinkv1beta1.FlinkDeployment{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: bg.Namespace, Name: childName(bg, c)}, child)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("get child FlinkDeployment %s: %w", childName(bg, c), err)
		}
		if !jobs.OwnedBy(child, bg) {
			return nil, r.recordInvalid(ctx, bg, fmt.Sprintf("FlinkDeployment %s exists and does not belong to this FlinkBlueGreenDeployment; rename one of them", child.Name))
		}
		obs.children[c] = child
	}
	if name := bg.Status.SavepointTriggerID; name != "" {
		snap := &flinkv1beta1.FlinkStateSnapshot{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: bg.Namespace, Name: name}, snap)
		switch {
		case err == nil:
			obs.savepoint = snap
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("get savepoint FlinkStateSnapshot %s: %w", name, err)
		}
	}
	return obs, nil
}

// childReady is upstream's test: the child's job runs and its resource is stable, for the
// generation last written.
func childReady(d *flinkv1beta1.FlinkDeployment) bool {
	return d != nil && d.DeletionTimestamp.IsZero() && d.Status.ObservedGeneration >= d.Generation &&
		d.Status.LifecycleState == flinkv1beta1.LifecycleStable && d.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
}

// parseTimestamp reads a status timestamp; empty and upstream's reset value (the epoch) are unset.
func parseTimestamp(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Unix() == 0 {
		return time.Time{}, false
	}
	return t, true
}

func (r *FlinkBlueGreenDeploymentReconciler) inputs(bg *flinkv1beta1.FlinkBlueGreenDeployment, obs *observed) bluegreen.Inputs {
	now := r.now()
	state := bg.Status.BlueGreenState
	active, _ := bluegreen.Active(state)
	target := bluegreen.Target(state)
	in := bluegreen.Inputs{
		Diff:           bluegreen.Compare(obs.last, &bg.Spec),
		Reconciled:     obs.last != nil,
		Suspended:      bluegreen.IsSuspended(&bg.Spec),
		NeedsSavepoint: bluegreen.NeedsSavepoint(&bg.Spec),
		ActiveExists:   obs.children[active] != nil,
		ActiveReady:    childReady(obs.children[active]),
		TargetExists:   obs.children[target] != nil && obs.children[target].DeletionTimestamp.IsZero(),
		TargetReady:    childReady(obs.children[target]),
		Failing:        bg.Status.Error != "",
	}
	if obs.savepoint != nil {
		switch obs.savepoint.Status.State {
		case flinkv1beta1.SnapshotCompleted:
			in.SavepointDone = obs.savepoint.Status.Path != ""
		case flinkv1beta1.SnapshotFailed, flinkv1beta1.SnapshotAbandoned:
			in.SavepointFailed = true
		}
	}
	if abortAt, ok := parseTimestamp(bg.Status.AbortTimestamp); ok {
		in.AbortGraceElapsed = !now.Before(abortAt)
	}
	if readyAt, ok := parseTimestamp(bg.Status.DeploymentReadyTimestamp); ok {
		in.ReadyRecorded = true
		in.DeletionDelayElapsed = !now.Before(readyAt.Add(obs.opts.DeletionDelay))
	}
	return in
}

// dropSavepoint deletes the switch's snapshot unless it completed: one still retrying would
// keep savepointing the active child.
func (r *FlinkBlueGreenDeploymentReconciler) dropSavepoint(ctx context.Context, obs *observed) error {
	if snap := obs.savepoint; snap != nil && snap.Status.State != flinkv1beta1.SnapshotCompleted {
		if err := r.Client.Delete(ctx, snap); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete savepoint %s of the switch: %w", snap.Name, err)
		}
	}
	return nil
}

func isSavepointing(s flinkv1beta1.FlinkBlueGreenDeploymentState) bool {
	return s == flinkv1beta1.BlueGreenSavepointingBlue || s == flinkv1beta1.BlueGreenSavepointingGreen
}

func isTransitioning(s flinkv1beta1.FlinkBlueGreenDeploymentState) bool {
	return s == flinkv1beta1.BlueGreenTransitioningToBlue || s == flinkv1beta1.BlueGreenTransitioningToGreen
}

// nextLook is when a step in progress is looked at again: the reschedule interval, or sooner
// when the grace period or the deletion delay ends before it.
func (r *FlinkBlueGreenDeploymentReconciler) nextLook(bg *flinkv1beta1.FlinkBlueGreenDeployment, opts bluegreen.Options) time.Duration {
	next := opts.RescheduleInterval
	now := r.now()
	if abortAt, ok := parseTimestamp(bg.Status.AbortTimestamp); ok && abortAt.Sub(now) < next {
		next = abortAt.Sub(now)
	}
	if readyAt, ok := parseTimestamp(bg.Status.DeploymentReadyTimestamp); ok {
		if d := readyAt.Add(opts.DeletionDelay).Sub(now); d < next {
			next = d
		}
	}
	if next < 100*time.Millisecond {
		next = 100 * time.Millisecond
	}
	return next
}

// writeStatus patches the status from base with an optimistic lock: a reconcile that read a
// stale copy fails here and acts on nothing.
func (r *FlinkBlueGreenDeploymentReconciler) writeStatus(ctx context.Context, base, bg *flinkv1beta1.FlinkBlueGreenDeployment) error {
	if equality.Semantic.DeepEqual(base.Status, bg.Status) {
		return nil
	}
	bg.Status.LastReconciledTimestamp = r.now().UTC().Format(time.RFC3339Nano)
	if err := r.Client.Status().Patch(ctx, bg, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("record blue/green state %s: %w", bg.Status.BlueGreenState, err)
	}
	return nil
}

func (r *FlinkBlueGreenDeploymentReconciler) recordInvalid(ctx context.Context, bg *flinkv1beta1.FlinkBlueGreenDeployment, msg string) error {
	base := bg.DeepCopy()
	if bg.Status.Error == msg {
		return nil
	}
	bg.Status.Error = msg
	meta.SetStatusCondition(&bg.Status.Conditions, metav1.Condition{Type: ConditionBlueGreenReady, Status: metav1.ConditionFalse,
		Reason: ReasonInvalid, Message: msg, ObservedGeneration: bg.Generation})
	degraded := lifecycle.BlueGreenDegraded(true, msg, nil, bg.Generation)
	meta.SetStatusCondition(&bg.Status.Conditions, degraded)
	// Progressing too, for this generation: left as it was, it would speak of an older one. The
	// children are not read when a refusal comes this early; a switch under way waits meanwhile.
	view := lifecycle.BlueGreenView{State: bg.Status.BlueGreenState, Error: msg, Suspended: bluegreen.IsSuspended(&bg.Spec),
		Savepoint: bg.Status.SavepointTriggerID, AbortAt: bg.Status.AbortTimestamp}
	before := meta.FindStatusCondition(bg.Status.Conditions, ConditionBlueGreenProgressing).DeepCopy()
	progressing := lifecycle.BlueGreenProgressing(view, bg.Generation)
	meta.SetStatusCondition(&bg.Status.Conditions, progressing)
	bg.Status.Operations = lifecycle.RecordOperations(bg.Status.Operations, lifecycle.BlueGreenStep(view, before, progressing, degraded, bg.Generation, metav1.NewTime(r.now())))
	r.Recorder.Event(bg, "Warning", reconciler.ReasonValidationError, msg)
	return r.writeStatus(ctx, base, bg)
}

// mirrorJobStatus shows the active child's job in the resource's status, unless a failed
// switch is being reported.
func (r *FlinkBlueGreenDeploymentReconciler) mirrorJobStatus(bg *flinkv1beta1.FlinkBlueGreenDeployment, active *flinkv1beta1.FlinkDeployment, obs *observed) {
	if active != nil && bg.Status.Error == "" {
		bg.Status.JobStatus = *active.Status.JobStatus.DeepCopy()
	}
	if bluegreen.IsSuspended(&bg.Spec) && bg.Status.Error == "" {
		bg.Status.JobStatus.State = flinkv1beta1.JobStatusSuspended // as upstream reports a suspended resource
	}
	r.setConditionsFor(bg, active, obs)
}

func (r *FlinkBlueGreenDeploymentReconciler) setConditions(bg *flinkv1beta1.FlinkBlueGreenDeployment, obs *observed) {
	active, _ := bluegreen.Active(bg.Status.BlueGreenState)
	r.setConditionsFor(bg, obs.children[active], obs)
}

// setConditionsFor sets Ready, Progressing and Degraded for the recorded state with active the
// child serving, and follows Progressing's transitions in status.operations.
func (r *FlinkBlueGreenDeploymentReconciler) setConditionsFor(bg *flinkv1beta1.FlinkBlueGreenDeployment, active *flinkv1beta1.FlinkDeployment, obs *observed) {
	st := &bg.Status
	_, resting := bluegreen.Active(st.BlueGreenState)
	ready := metav1.Condition{Type: ConditionBlueGreenReady, Status: metav1.ConditionFalse, Reason: "NotReady",
		Message: "no active child runs its job", ObservedGeneration: bg.Generation}
	switch {
	case st.Error != "":
		ready.Reason, ready.Message = "Failed", st.Error
	case resting && childReady(active):
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, "ActiveChildRunning", active.Name+" is active and its job runs"
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	view := lifecycle.BlueGreenView{State: st.BlueGreenState, Error: st.Error, Suspended: bluegreen.IsSuspended(&bg.Spec),
		Active: active, Savepoint: st.SavepointTriggerID, AbortAt: st.AbortTimestamp}
	if !resting && st.BlueGreenState != flinkv1beta1.BlueGreenInitializingBlue {
		view.Target = obs.children[bluegreen.Target(st.BlueGreenState)]
	}
	before := meta.FindStatusCondition(st.Conditions, ConditionBlueGreenProgressing).DeepCopy()
	progressing := lifecycle.BlueGreenProgressing(view, bg.Generation)
	meta.SetStatusCondition(&st.Conditions, progressing)
	degraded := lifecycle.BlueGreenDegraded(false, st.Error, active, bg.Generation)
	meta.SetStatusCondition(&st.Conditions, degraded)
	st.Operations = lifecycle.RecordOperations(st.Operations, lifecycle.BlueGreenStep(view, before, progressing, degraded, bg.Generation, metav1.NewTime(r.now())))
}

// restorePath is what the new child starts from: the switch's savepoint, else the template's
// initialSavepointPath (first deployment, stateless upgrade mode, savepoint redeploy).
func (r *FlinkBlueGreenDeploymentReconciler) restorePath(bg *flinkv1beta1.FlinkBlueGreenDeployment, spec *flinkv1beta1.FlinkBlueGreenDeploymentSpec, obs *observed) (string, error) {
	if bg.Status.SavepointTriggerID != "" {
		if obs.savepoint == nil || obs.savepoint.Status.Path == "" {
			return "", fmt.Errorf("savepoint %s of the switch has no path", bg.Status.SavepointTriggerID)
		}
		return switchRestorePath(obs.savepoint.Status.Path, &spec.Template.Spec.FlinkConfiguration), nil
	}
	if job := spec.Template.Spec.Job; job != nil {
		return job.InitialSavepointPath, nil
	}
	return "", nil
}

// switchRestorePath is the new child's initialSavepointPath for the switch's savepoint at
// location. As upstream (BlueGreenUtils), a local savepoint is written without its file:
// scheme, the form users and upstream's scripts compare with the mount path
// (/opt/flink/volume/...); Flink reads a path without a scheme from the default file system,
// which is the local one unless fs.default-scheme names another, and then the scheme stays.
func switchRestorePath(location string, conf *flinkv1beta1.FlinkConfiguration) string {
	if flat, err := conf.Flatten(); err == nil {
		if scheme := flat["fs.default-scheme"]; scheme != "" && !strings.HasPrefix(scheme, "file:") {
			return location
		}
	}
	return strings.TrimPrefix(location, "file:")
}

// desiredChild is child c built from tmpl: upstream's name and label, owned by bg,
// starting from restorePath, its own ingress (if any) prefixed with its color so the two
// children's hosts differ.
func (r *FlinkBlueGreenDeploymentReconciler) desiredChild(bg *flinkv1beta1.FlinkBlueGreenDeployment, tmpl *flinkv1beta1.FlinkDeploymentTemplateSpec, c bluegreen.Color, restorePath string) (*flinkv1beta1.FlinkDeployment, error) {
	d := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: childName(bg, c), Namespace: bg.Namespace}}
	d.Labels = map[string]string{}
	for k, v := range tmpl.ObjectMeta.Labels {
		d.Labels[k] = v
	}
	d.Labels[flinkv1beta1.BlueGreenDeploymentTypeLabel] = string(c)
	if len(tmpl.ObjectMeta.Annotations) > 0 {
		d.Annotations = map[string]string{}
		for k, v := range tmpl.ObjectMeta.Annotations {
			d.Annotations[k] = v
		}
	}
	d.Spec = *tmpl.Spec.DeepCopy()
	if d.Spec.Job != nil {
		d.Spec.Job.InitialSavepointPath = restorePath
	}
	if d.Spec.Ingress != nil {
		d.Spec.Ingress.Template = bluegreen.ChildIngressTemplate(c, d.Spec.Ingress.Template)
	}
	if err := controllerutil.SetControllerReference(bg, d, r.Scheme); err != nil {
		return nil, fmt.Errorf("own child %s: %w", d.Name, err)
	}
	return d, nil
}

// ensureChild makes child c match tmpl, starting from restorePath. A child that
// started from another savepoint (left by an aborted switch) is deleted and created anew: a
// FlinkDeployment reads initialSavepointPath on its first deployment only. done is false while
// such a child is still being deleted.
func (r *FlinkBlueGreenDeploymentReconciler) ensureChild(ctx context.Context, bg *flinkv1beta1.FlinkBlueGreenDeployment, tmpl *flinkv1beta1.FlinkDeploymentTemplateSpec, c bluegreen.Color, restorePath string, existing *flinkv1beta1.FlinkDeployment) (done bool, err error) {
	want, err := r.desiredChild(bg, tmpl, c, restorePath)
	if err != nil {
		return false, err
	}
	if existing == nil {
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("create child %s: %w", want.Name, err)
		}
		r.Recorder.Eventf(bg, "Normal", ReasonBlueGreenDeploy, "Created %s%s", want.Name, fromPath(restorePath))
		return true, nil
	}
	if !existing.DeletionTimestamp.IsZero() {
		return false, nil
	}
	if restorePathOf(existing) != restorePath || existing.Annotations[AnnotationBlueGreenRetired] != "" {
		if err := r.Client.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("delete child %s to start it from %q: %w", existing.Name, restorePath, err)
		}
		return false, nil
	}
	if equality.Semantic.DeepEqual(existing.Spec, want.Spec) && equality.Semantic.DeepEqual(existing.Labels, want.Labels) {
		return true, nil
	}
	existing.Spec = want.Spec
	existing.Labels = want.Labels
	if len(want.Annotations) > 0 {
		if existing.Annotations == nil {
			existing.Annotations = map[string]string{}
		}
		for k, v := range want.Annotations {
			existing.Annotations[k] = v
		}
	}
	before := existing.ResourceVersion
	if err := r.Client.Update(ctx, existing); err != nil {
		return false, fmt.Errorf("update child %s: %w", existing.Name, err)
	}
	if existing.ResourceVersion == before {
		return true, nil // only the API server's defaults differed
	}
	r.Recorder.Eventf(bg, "Normal", ReasonBlueGreenDeploy, "Updated %s%s", existing.Name, fromPath(restorePath))
	return true, nil
}

// restorePathOf is the savepoint child d started from ("" for none or no child).
func restorePathOf(d *flinkv1beta1.FlinkDeployment) string {
	if d == nil || d.Spec.Job == nil {
		return ""
	}
	return d.Spec.Job.InitialSavepointPath
}

func fromPath(p string) string {
	if p == "" {
		return ""
	}
	return " from savepoint " + p
}

func (r *FlinkBlueGreenDeploymentReconciler) createSavepoint(ctx context.Context, bg *flinkv1beta1.FlinkBlueGreenDeployment, c bluegreen.Color) error {
	dispose := false
	snap := &flinkv1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: bg.Status.SavepointTriggerID, Namespace: bg.Namespace, Labels: map[string]string{}},
		Spec: flinkv1beta1.FlinkStateSnapshotSpec{
			JobReference: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: childName(bg, c)},
			// The new child restores from it; deleting the resource must not delete the files.
			Savepoint: &flinkv1beta1.SavepointSpec{DisposeOnDelete: &dispose},
		},
	}
	for k, v := range bg.Labels { // the same shard as the resource
		snap.Labels[k] = v
	}
	if err := controllerutil.SetControllerReference(bg, snap, r.Scheme); err != nil {
		return fmt.Errorf("own savepoint %s: %w", snap.Name, err)
	}
	if err := r.Client.Create(ctx, snap); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create savepoint FlinkStateSnapshot %s: %w", snap.Name, err)
	}
	return nil
}

func (r *FlinkBlueGreenDeploymentReconciler) markRetired(ctx context.Context, d *flinkv1beta1.FlinkDeployment) error {
	if d.Annotations[AnnotationBlueGreenRetired] != "" {
		return nil
	}
	base := d.DeepCopy()
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[AnnotationBlueGreenRetired] = "true"
	if err := r.Client.Patch(ctx, d, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("mark %s replaced: %w", d.Name, err)
	}
	return nil
}

// retireOthers deletes a child that a finished switch replaced, if the operator stopped before
// deleting it. A child left suspended by an aborted switch stays, for inspection, as upstream.
func (r *FlinkBlueGreenDeploymentReconciler) retireOthers(ctx context.Context, bg *flinkv1beta1.FlinkBlueGreenDeployment, obs *observed, active bluegreen.Color) error {
	other := obs.children[active.Other()]
	if other == nil || other.Annotations[AnnotationBlueGreenRetired] == "" || !other.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := r.Client.Delete(ctx, other); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete replaced child %s: %w", other.Name, err)
	}
	return nil
}

func (r *FlinkBlueGreenDeploymentReconciler) suspendChild(ctx context.Context, d *flinkv1beta1.FlinkDeployment) error {
	if d == nil || d.Spec.Job == nil || d.Spec.Job.State == flinkv1beta1.JobStateSuspended {
		return nil
	}
	base := d.DeepCopy()
	d.Spec.Job.State = flinkv1beta1.JobStateSuspended
	if err := r.Client.Patch(ctx, d, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("suspend %s: %w", d.Name, err)
	}
	return nil
}

// reconcileIngress points the resource's ingress (spec.ingress) at the active child's REST
// service, or deletes it when spec.ingress is unset.
func (r *FlinkBlueGreenDeploymentReconciler) reconcileIngress(ctx context.Context, bg *flinkv1beta1.FlinkBlueGreenDeployment, active bluegreen.Color) error {
	name := native.IngressName(bg.Name)
	current := &networkingv1.Ingress{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: bg.Namespace, Name: name}, current)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get ingress %s: %w", name, err)
	}
	exists := err == nil
	if bg.Spec.Ingress == nil {
		if exists && jobs.OwnedBy(current, bg) {
			if err := r.Client.Delete(ctx, current); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete ingress %s: %w", name, err)
			}
		}
		return nil
	}
	want, err := buildIngress(bg, active)
	if err != nil {
		return r.recordInvalid(ctx, bg, err.Error())
	}
	if err := controllerutil.SetControllerReference(bg, want, r.Scheme); err != nil {
		return fmt.Errorf("own ingress %s: %w", name, err)
	}
	if !exists {
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ingress %s: %w", name, err)
		}
		return nil
	}
	if !jobs.OwnedBy(current, bg) {
		return r.recordInvalid(ctx, bg, foreignIngress(name))
	}
	if equality.Semantic.DeepEqual(current.Spec, want.Spec) && equality.Semantic.DeepEqual(current.Labels, want.Labels) &&
		equality.Semantic.DeepEqual(current.Annotations, want.Annotations) {
		return nil
	}
	base := current.DeepCopy()
	current.Spec, current.Labels, current.Annotations = want.Spec, want.Labels, want.Annotations
	if err := r.Client.Patch(ctx, current, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("switch ingress %s to %s: %w", name, childName(bg, active), err)
	}
	return nil
}

// buildIngress is the resource's Ingress (spec.ingress) in front of the REST service of child
// active, without its owner.
func buildIngress(bg *flinkv1beta1.FlinkBlueGreenDeployment, active bluegreen.Color) (*networkingv1.Ingress, error) {
	shape := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: bg.Name, Namespace: bg.Namespace}}
	shape.Spec.Ingress = bg.Spec.Ingress
	want, err := native.BuildIngress(shape, flinkconf.DefaultRESTPort)
	if err != nil {
		return nil, err
	}
	want.OwnerReferences = nil
	for i := range want.Spec.Rules {
		for j := range want.Spec.Rules[i].HTTP.Paths {
			want.Spec.Rules[i].HTTP.Paths[j].Backend.Service.Name = flinkconf.RESTServiceName(childName(bg, active))
		}
	}
	return want, nil
}

// ingressRefusal is why the resource's Ingress cannot be made ("" when it can): its template
// cannot be built, or an Ingress of its name belongs to someone else. Without spec.ingress there
// is nothing to make (a foreign Ingress is left alone).
func (r *FlinkBlueGreenDeploymentReconciler) ingressRefusal(ctx context.Context, bg *flinkv1beta1.FlinkBlueGreenDeployment) (string, error) {
	if bg.Spec.Ingress == nil {
		return "", nil
	}
	if _, err := buildIngress(bg, bluegreen.Blue); err != nil {
		return err.Error(), nil
	}
	name := native.IngressName(bg.Name)
	current := &networkingv1.Ingress{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: bg.Namespace, Name: name}, current)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get ingress %s: %w", name, err)
	case !jobs.OwnedBy(current, bg):
		return foreignIngress(name), nil
	}
	return "", nil
}

func foreignIngress(name string) string {
	return fmt.Sprintf("Ingress %s exists and does not belong to this FlinkBlueGreenDeployment", name)
}

// setUpBlueGreen wires the blue/green controller as the others: its events go to the
// listener, each reconcile is bounded by the deadline, paced by the rate limits and the
// namespace share, and the secrets of the template's configuration are masked in what it logs,
// records and returns.
func (r *FlinkBlueGreenDeploymentReconciler) setUpBlueGreen(mgr ctrl.Manager, build func(*builder.Builder) *builder.Builder) error {
	if r.Intervals == (reconciler.Intervals{}) {
		r.Intervals = reconciler.DefaultIntervals
	}
	if r.RateLimits.PerNamespace == 0 {
		r.RateLimits.PerNamespace = r.PerNamespace
	}
	r.Recorder = reconciler.WithListener(r.Recorder, r.Listener)
	return r.SetUp(mgr, reconciler.ControllerSpec{Name: "flinkbluegreendeployment", Object: &flinkv1beta1.FlinkBlueGreenDeployment{},
		Intervals: r.Intervals, Build: build}, r.redacting())
}

// redacting is the blue/green reconciler under the shared preamble: the template's secrets are
// masked in its events, logs and errors.
func (r *FlinkBlueGreenDeploymentReconciler) redacting() reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		bg := &flinkv1beta1.FlinkBlueGreenDeployment{}
		return r.Run(ctx, r.Client, req, bg, reconciler.Preamble{LogKey: "flinkbluegreendeployment",
			Secrets: func(client.Object) []string {
				spec := &bg.Spec.Template.Spec
				conf, _ := spec.FlinkConfiguration.Flatten()
				dep := &flinkv1beta1.FlinkDeployment{Spec: *spec}
				return append(redact.Values(conf, r.SecretKeyPatterns, reconciler.DeploymentPods(dep)...), reconciler.JarURIPasswords(spec.Job)...)
			}},
			func(ctx context.Context, red *redact.Redactor) (ctrl.Result, error) {
				rr := *r
				rr.Recorder = red.Recorder(r.Recorder)
				return rr.Reconcile(ctx, req)
			})
	})
}
