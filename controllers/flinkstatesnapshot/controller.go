package flinkstatesnapshot

import (
	"context"
	"fmt"
	"maps"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
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

// Reconcile reads the snapshot once and runs snapshotPhases on it (phases.go).
func (r *FlinkStateSnapshotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	snap := &flinkv1beta1.FlinkStateSnapshot{}
	if err := r.Client.Get(ctx, req.NamespacedName, snap); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("flinkstatesnapshot", req.NamespacedName))
	s := newSnapshotScope(snap, time.Now())
	defer s.close()
	return jobs.RunPhases(ctx, s, r.snapshotPhases())
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
	for _, c := range lifecycle.SnapshotConditions(snap) {
		meta.SetStatusCondition(&st.Conditions, c)
	}
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
		if err := r.Client.Patch(ctx, snap, client.MergeFrom(before)); err != nil {
			return err
		}
		// The label write is a newer version of the resource: a second status write in the same
		// reconcile (the failure of a trigger written ahead) goes from it, not from a conflict.
		original.ResourceVersion, original.Labels = snap.ResourceVersion, maps.Clone(snap.Labels)
	}
	return nil
}

// target is the job a snapshot is of: its cluster's REST client and job id.
type target struct {
	Flink *flink.Client
	jobID string
}

// ResolveTarget finds the referenced job and its cluster's client; the reason is set (and the
// client nil) when the job does not run.
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
