package flinkstatesnapshot

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// SnapshotFinalizer is upstream's finalizer name for snapshots.
const SnapshotFinalizer = "flinkstatesnapshots.flink.apache.org/finalizer"

// Event reasons and labels of snapshots (upstream's).
const (
	ReasonSnapshotError     = "SnapshotError"
	ReasonSnapshotAbandoned = "SnapshotAbandoned"
	ReasonSnapshotCompleted = "SnapshotCompleted"
	// ReasonSnapshotDeletionWaits: a deleted savepoint resource waits for Flink to finish it
	// (upstream only logs this).
	ReasonSnapshotDeletionWaits = "SnapshotDeletionWaits"
)

// FlinkStateSnapshotReconciler takes savepoints and checkpoints that FlinkStateSnapshot
// resources ask for.
type FlinkStateSnapshotReconciler struct {
	reconciler.ReconcilerOptions
	Client    client.Client
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	Flink     *clients.Factory
	Defaults  flinkconf.Defaults
	Intervals reconciler.Intervals
	// BaseBackoff is the first retry delay after a failure (doubling after each); 10 s when 0.
	BaseBackoff time.Duration
}

// +kubebuilder:rbac:groups=flink.apache.org,resources=flinkstatesnapshots,verbs=list;watch;create;update;patch;delete
// Reads go through the manager's cache (list, watch). Status is written by merge patch (reconciler/status.go); nothing sets an ownerReference to a snapshot.
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinkstatesnapshots/status,verbs=patch

// SetupWithManager watches snapshots.
func (r *FlinkStateSnapshotReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Intervals == (reconciler.Intervals{}) {
		r.Intervals = reconciler.DefaultIntervals
	}
	r.Recorder = reconciler.WithListener(r.Recorder, r.Listener)
	return r.SetUp(mgr, reconciler.ControllerSpec{Name: "flinkstatesnapshot", Object: &flinkv1beta1.FlinkStateSnapshot{}, Intervals: r.Intervals,
		Build: func(b *builder.Builder) *builder.Builder { return b.For(&flinkv1beta1.FlinkStateSnapshot{}) }}, r)
}

// The snapshot state machine:
//
//	"" / TRIGGER_PENDING, alreadyExists   → COMPLETED with spec.savepoint.path
//	TRIGGER_PENDING, backing off          → wait (10 s, 20 s, 40 s … after each failure)
//	TRIGGER_PENDING, job missing/stopped  → ABANDONED
//	TRIGGER_PENDING                       → trigger id written (IN_PROGRESS), then Flink asked
//	IN_PROGRESS, Flink forgot the trigger → asked again under the same id
//	IN_PROGRESS, failed                   → failures+1: FAILED past backoffLimit, else TRIGGER_PENDING
//	IN_PROGRESS, done                     → COMPLETED with the path
//	COMPLETED / FAILED / ABANDONED        → final
//
// Deletion disposes a COMPLETED savepoint with disposeOnDelete through the job's cluster.
func (r *FlinkStateSnapshotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	snap := &flinkv1beta1.FlinkStateSnapshot{}
	if err := r.Client.Get(ctx, req.NamespacedName, snap); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("flinkstatesnapshot", req.NamespacedName))
	if !snap.DeletionTimestamp.IsZero() {
		return r.dispose(ctx, snap)
	}
	if err := r.ensureMetadata(ctx, snap); err != nil {
		if apierrors.IsConflict(err) {
			return reconciler.RequeueSoon(), nil
		}
		return ctrl.Result{}, err
	}
	original := snap.DeepCopy()
	result, err := r.step(ctx, snap, original)
	if perr := r.persistSnapshot(ctx, snap, original); perr != nil {
		if apierrors.IsConflict(perr) {
			return reconciler.RequeueSoon(), nil
		}
		return ctrl.Result{}, perr
	}
	return result, err
}

// ensureMetadata adds the finalizer and the filtering labels.
func (r *FlinkStateSnapshotReconciler) ensureMetadata(ctx context.Context, snap *flinkv1beta1.FlinkStateSnapshot) error {
	before := snap.DeepCopy()
	controllerutil.AddFinalizer(snap, SnapshotFinalizer)
	labels := snap.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[jobs.LabelSnapshotType] = jobs.SnapshotKind(snap)
	if labels[jobs.LabelSnapshotTrigger] == "" {
		labels[jobs.LabelSnapshotTrigger] = string(flinkv1beta1.SnapshotTriggerManual)
	}
	if ref := snap.Spec.JobReference; ref != nil {
		labels[jobs.LabelJobReferenceKind], labels[jobs.LabelJobReferenceName] = string(ref.Kind), ref.Name
	}
	state := snap.Status.State
	if state == "" {
		state = flinkv1beta1.SnapshotTriggerPending
	}
	labels[jobs.LabelSnapshotState] = string(state)
	snap.SetLabels(labels)
	if reconciler.EqualStatus(before.ObjectMeta, snap.ObjectMeta) {
		return nil
	}
	return r.Client.Patch(ctx, snap, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

func (r *FlinkStateSnapshotReconciler) persistSnapshot(ctx context.Context, snap, original *flinkv1beta1.FlinkStateSnapshot) error {
	st := &snap.Status
	ready := metav1.Condition{Type: "Ready", ObservedGeneration: snap.Generation, Status: metav1.ConditionFalse,
		Reason: camelState(st.State), Message: "Snapshot " + string(st.State)}
	if st.State == flinkv1beta1.SnapshotCompleted {
		ready.Status, ready.Message = metav1.ConditionTrue, "Snapshot completed: "+st.Path
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	if reconciler.EqualStatus(original.Status, snap.Status) {
		return nil
	}
	if err := reconciler.PatchStatus(ctx, r.Client, snap, original); err != nil {
		return err
	}
	reconciler.StatusWritten(ctx, r.Listener, snap, &original.Status, &snap.Status, nil)
	original.Status = *snap.Status.DeepCopy()
	original.ResourceVersion = snap.ResourceVersion
	if snap.Labels[jobs.LabelSnapshotState] != string(st.State) && st.State != "" {
		before := snap.DeepCopy()
		snap.Labels[jobs.LabelSnapshotState] = string(st.State)
		return r.Client.Patch(ctx, snap, client.MergeFrom(before))
	}
	return nil
}

func camelState(s flinkv1beta1.SnapshotState) string {
	switch s {
	case flinkv1beta1.SnapshotCompleted:
		return "Completed"
	case flinkv1beta1.SnapshotFailed:
		return "Failed"
	case flinkv1beta1.SnapshotAbandoned:
		return "Abandoned"
	case flinkv1beta1.SnapshotInProgress:
		return "InProgress"
	}
	return "TriggerPending"
}

// target is the job a snapshot is of: its cluster's REST client and job id.
type target struct {
	Flink *flink.Client
	jobID string
}

// ResolveTarget finds the referenced job; ok is false (with a reason) when it does not run.
func (r *FlinkStateSnapshotReconciler) ResolveTarget(ctx context.Context, snap *flinkv1beta1.FlinkStateSnapshot) (target, string, error) {
	ref := snap.Spec.JobReference
	if ref == nil || ref.Name == "" {
		return target{}, "spec.jobReference is required unless spec.savepoint.alreadyExists is true", nil
	}
	var cluster *flinkv1beta1.FlinkDeployment
	var jobID string
	switch ref.Kind {
	case flinkv1beta1.JobKindFlinkDeployment, "":
		dep := &flinkv1beta1.FlinkDeployment{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: ref.Name}, dep); err != nil {
			if apierrors.IsNotFound(err) {
				return target{}, fmt.Sprintf("FlinkDeployment %s not found", ref.Name), nil
			}
			return target{}, "", err
		}
		if dep.Spec.Job == nil || dep.Status.JobStatus.State != flinkv1beta1.JobStatusRunning {
			return target{}, fmt.Sprintf("the job of FlinkDeployment %s is not running", ref.Name), nil
		}
		cluster, jobID = dep, dep.Status.JobStatus.JobID
	case flinkv1beta1.JobKindFlinkSessionJob:
		job := &flinkv1beta1.FlinkSessionJob{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: ref.Name}, job); err != nil {
			if apierrors.IsNotFound(err) {
				return target{}, fmt.Sprintf("FlinkSessionJob %s not found", ref.Name), nil
			}
			return target{}, "", err
		}
		if job.Status.JobStatus.State != flinkv1beta1.JobStatusRunning {
			return target{}, fmt.Sprintf("FlinkSessionJob %s is not running", ref.Name), nil
		}
		dep := &flinkv1beta1.FlinkDeployment{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: job.Spec.DeploymentName}, dep); err != nil {
			return target{}, fmt.Sprintf("session %s of FlinkSessionJob %s not found", job.Spec.DeploymentName, ref.Name), client.IgnoreNotFound(err)
		}
		cluster, jobID = dep, job.Status.JobStatus.JobID
	default:
		return target{}, fmt.Sprintf("spec.jobReference.kind %q: allowed: FlinkDeployment, FlinkSessionJob", ref.Kind), nil
	}
	// The cluster is addressed as its own reconciler addresses it: the same configuration, from
	// the operator's default configuration and REST timeout in force now.
	_, defaults, factory := reconciler.LiveSettings(r.Live, r.Intervals, r.Defaults, r.Flink)
	conf, err := reconciler.ClusterConfig(cluster, defaults)
	if err != nil {
		return target{}, "", err
	}
	cl, err := factory.For(ctx, cluster.Namespace, cluster.Name, cluster.Spec.FlinkVersion, conf)
	if err != nil {
		if _, refused := clients.IsRESTServiceRefused(err); refused {
			r.Recorder.Event(snap, corev1.EventTypeWarning, clients.ReasonRESTServiceRefused, err.Error())
		}
		return target{}, "", err
	}
	return target{Flink: cl, jobID: jobID}, "", nil
}

// step advances the state machine by one step.
func (r *FlinkStateSnapshotReconciler) step(ctx context.Context, snap, original *flinkv1beta1.FlinkStateSnapshot) (ctrl.Result, error) {
	st := &snap.Status
	now := time.Now()
	switch st.State {
	case flinkv1beta1.SnapshotCompleted, flinkv1beta1.SnapshotFailed, flinkv1beta1.SnapshotAbandoned:
		return ctrl.Result{}, nil
	case "", flinkv1beta1.SnapshotTriggerPending:
		st.State = flinkv1beta1.SnapshotTriggerPending
		if sp := snap.Spec.Savepoint; sp != nil && sp.AlreadyExists != nil && *sp.AlreadyExists {
			st.State, st.Path, st.ResultTimestamp = flinkv1beta1.SnapshotCompleted, sp.Path, flinkv1beta1.FormatSnapshotTime(now)
			if st.TriggerTimestamp == "" { // a record of an existing savepoint: taken when recorded (upstream)
				st.TriggerTimestamp = st.ResultTimestamp
			}
			return ctrl.Result{}, nil
		}
		if wait := r.backoffLeft(snap, now); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		tgt, why, err := r.ResolveTarget(ctx, snap)
		if err != nil {
			return ctrl.Result{}, err
		}
		defer tgt.Flink.Close() // nil-safe: no client when the job is not found
		if why != "" {
			st.State, st.Error = flinkv1beta1.SnapshotAbandoned, why
			r.Recorder.Event(snap, corev1.EventTypeWarning, ReasonSnapshotAbandoned, why)
			return ctrl.Result{}, nil
		}
		st.TriggerID, st.TriggerTimestamp, st.State = flink.NewTriggerID(), flinkv1beta1.FormatSnapshotTime(now), flinkv1beta1.SnapshotInProgress
		st.Error = ""
		return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, r.trigger(ctx, snap, original, tgt)
	}
	// IN_PROGRESS
	tgt, why, err := r.ResolveTarget(ctx, snap)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer tgt.Flink.Close() // nil-safe: no client when the job is not found
	if why != "" {
		return r.failed(snap, "the job went away while the snapshot was in progress: "+why), nil
	}
	op := snapshotOperation(snap, tgt)
	progress := tgt.Flink.Advance(ctx, op)
	switch progress.Outcome {
	case flink.OutcomePending:
		reconciler.LogUnknownOutcome(ctx, op, progress)
		return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, nil
	case flink.OutcomeFailed:
		return r.failed(snap, jobs.SnapshotKind(snap)+" failed: "+progress.Failure), nil
	}
	st.State, st.Path, st.ResultTimestamp, st.Error = flinkv1beta1.SnapshotCompleted, progress.Location, flinkv1beta1.FormatSnapshotTime(now), ""
	r.Recorder.Eventf(snap, corev1.EventTypeNormal, ReasonSnapshotCompleted, "%s completed: %s", jobs.SnapshotKind(snap), progress.Location)
	return ctrl.Result{}, nil
}

// snapshotOperation is the Flink operation a snapshot resource asks for.
func snapshotOperation(snap *flinkv1beta1.FlinkStateSnapshot, tgt target) flink.Operation {
	op := flink.Operation{Kind: flink.OperationSavepoint, JobID: tgt.jobID, TriggerID: snap.Status.TriggerID}
	if snap.Spec.Checkpoint != nil {
		op.Kind, op.CheckpointType = flink.OperationCheckpoint, flink.CheckpointFull
		return op
	}
	op.TargetDirectory, op.Format = snap.Spec.Savepoint.Path, flink.SavepointFormatCanonical
	if snap.Spec.Savepoint.FormatType == flinkv1beta1.SavepointFormatNative {
		op.Format = flink.SavepointFormatNative
	}
	return op
}

// trigger asks Flink under the recorded trigger id; the id is written before (write-ahead).
func (r *FlinkStateSnapshotReconciler) trigger(ctx context.Context, snap, original *flinkv1beta1.FlinkStateSnapshot, tgt target) error {
	if err := r.persistSnapshot(ctx, snap, original); err != nil {
		return err
	}
	if progress := tgt.Flink.Start(ctx, snapshotOperation(snap, tgt)); progress.Outcome == flink.OutcomeFailed {
		r.failed(snap, "trigger: "+progress.Failure)
	}
	return nil
}

// failed counts a failure: FAILED past the backoff limit, else pending a retry.
func (r *FlinkStateSnapshotReconciler) failed(snap *flinkv1beta1.FlinkStateSnapshot, msg string) ctrl.Result {
	st := &snap.Status
	st.Failures++
	st.Error = msg
	st.TriggerID = ""
	st.ResultTimestamp = flinkv1beta1.FormatSnapshotTime(time.Now())
	limit := int32(-1)
	if snap.Spec.BackoffLimit != nil {
		limit = *snap.Spec.BackoffLimit
	}
	if limit >= 0 && st.Failures > limit {
		st.State = flinkv1beta1.SnapshotFailed
		r.Recorder.Eventf(snap, corev1.EventTypeWarning, ReasonSnapshotError, "%s failed after %d attempts: %s", jobs.SnapshotKind(snap), st.Failures, msg)
		return ctrl.Result{}
	}
	st.State = flinkv1beta1.SnapshotTriggerPending
	r.Recorder.Eventf(snap, corev1.EventTypeWarning, ReasonSnapshotError, "%s attempt %d failed, retrying: %s", jobs.SnapshotKind(snap), st.Failures, msg)
	return ctrl.Result{RequeueAfter: r.backoff(st.Failures)}
}

func (r *FlinkStateSnapshotReconciler) backoff(failures int32) time.Duration {
	base := r.BaseBackoff
	if base == 0 {
		base = 10 * time.Second
	}
	return time.Duration(float64(base) * math.Pow(2, float64(min(failures, 16)-1)))
}

// backoffLeft is how long a retry still has to wait after the last failure.
func (r *FlinkStateSnapshotReconciler) backoffLeft(snap *flinkv1beta1.FlinkStateSnapshot, now time.Time) time.Duration {
	st := snap.Status
	if st.Failures == 0 || st.ResultTimestamp == "" {
		return 0
	}
	failedAt, err := flinkv1beta1.ParseSnapshotTime(st.ResultTimestamp)
	if err != nil {
		return 0
	}
	return failedAt.Add(r.backoff(st.Failures)).Sub(now)
}

// dispose runs on deletion: a completed savepoint with disposeOnDelete is disposed through
// the referenced job's cluster; without a running job there is nothing to dispose with, so
// the deletion waits (as upstream) unless the referenced resource is gone. One still being
// written waits until Flink is done with it (upstream's StateSnapshotReconciler.cleanup keeps
// the finalizer on IN_PROGRESS), so the savepoint is not left behind undisposed.
func (r *FlinkStateSnapshotReconciler) dispose(ctx context.Context, snap *flinkv1beta1.FlinkStateSnapshot) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(snap, SnapshotFinalizer) {
		return ctrl.Result{}, nil
	}
	sp := snap.Spec.Savepoint
	disposeOnDelete := sp != nil && (sp.DisposeOnDelete == nil || *sp.DisposeOnDelete)
	if disposeOnDelete && snap.Spec.JobReference != nil && snap.Spec.JobReference.Name != "" &&
		snap.Status.State == flinkv1beta1.SnapshotInProgress {
		// Upstream only waits; here the savepoint's progress is also followed, so that the wait
		// ends (a failed attempt is not retried: the resource is going away).
		original := snap.DeepCopy()
		if _, err := r.step(ctx, snap, original); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.persistSnapshot(ctx, snap, original); err != nil {
			if apierrors.IsConflict(err) {
				return reconciler.RequeueSoon(), nil
			}
			return ctrl.Result{}, err
		}
		if snap.Status.State == flinkv1beta1.SnapshotInProgress {
			r.Recorder.Eventf(snap, corev1.EventTypeNormal, ReasonSnapshotDeletionWaits,
				"Cannot delete yet: the savepoint is still in progress; it is disposed of once Flink completes it")
			return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, nil
		}
	}
	if disposeOnDelete && snap.Status.State == flinkv1beta1.SnapshotCompleted && snap.Status.Path != "" {
		tgt, why, err := r.ResolveTarget(ctx, snap)
		if err != nil {
			return ctrl.Result{}, err
		}
		defer tgt.Flink.Close() // nil-safe: no client when the job is not found
		switch {
		case why != "" && r.targetExists(ctx, snap):
			r.Recorder.Eventf(snap, corev1.EventTypeWarning, ReasonSnapshotError, "Waiting to dispose %s: %s", snap.Status.Path, why)
			return ctrl.Result{RequeueAfter: r.Intervals.Reconcile}, nil
		case why == "":
			if _, err := tgt.Flink.DisposeSavepoint(ctx, snap.Status.Path); err != nil {
				r.Recorder.Eventf(snap, corev1.EventTypeWarning, ReasonSnapshotError, "Disposing %s failed: %v", snap.Status.Path, err)
				return ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}, nil
			}
			r.Recorder.Eventf(snap, corev1.EventTypeNormal, "SnapshotDisposed", "Savepoint %s disposed", snap.Status.Path)
		}
	}
	controllerutil.RemoveFinalizer(snap, SnapshotFinalizer)
	if err := r.Client.Update(ctx, snap); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

// targetExists: the referenced resource is still there (its job may come back to run).
func (r *FlinkStateSnapshotReconciler) targetExists(ctx context.Context, snap *flinkv1beta1.FlinkStateSnapshot) bool {
	ref := snap.Spec.JobReference
	if ref == nil {
		return false
	}
	var obj client.Object = &flinkv1beta1.FlinkDeployment{}
	if ref.Kind == flinkv1beta1.JobKindFlinkSessionJob {
		obj = &flinkv1beta1.FlinkSessionJob{}
	}
	return r.Client.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: ref.Name}, obj) == nil
}
