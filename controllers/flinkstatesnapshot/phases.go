package flinkstatesnapshot

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// A FlinkStateSnapshot reconcile reads the resource once into a snapshotScope and runs the
// phases below, in order, with jobs.RunPhases: a phase either acts, which ends the reconcile,
// or leaves the snapshot to the phases after it. The referenced job is resolved at most once a
// reconcile, by the first phase that needs it, and every trigger id is written to the status
// before Flink is asked (write-ahead), so an operator restarted at any moment asks again under
// the same id.
//
// The snapshot's states (statePhases):
//
//	"" / TRIGGER_PENDING, alreadyExists   → COMPLETED with spec.savepoint.path   (recordExisting)
//	TRIGGER_PENDING, backing off          → wait (10 s, 20 s, 40 s … after each failure) (backoff)
//	TRIGGER_PENDING, job missing/stopped  → ABANDONED                            (abandon)
//	TRIGGER_PENDING                       → trigger id written (IN_PROGRESS), then Flink asked (trigger)
//	IN_PROGRESS, job missing/stopped      → failures+1, as a failed attempt      (jobGone)
//	IN_PROGRESS, Flink forgot the trigger → asked again under the same id        (progress)
//	IN_PROGRESS, failed                   → failures+1: FAILED past backoffLimit, else TRIGGER_PENDING
//	IN_PROGRESS, done                     → COMPLETED with the path
//	COMPLETED / FAILED / ABANDONED        → final                                (final)
//
// Deletion (deletionPhases) disposes a COMPLETED savepoint with disposeOnDelete through the
// job's cluster.

// snapshotScope is what the phases of one snapshot reconcile share.
type snapshotScope struct {
	snap *flinkv1beta1.FlinkStateSnapshot
	// original is the snapshot as last written, what persistSnapshot patches from; taken when
	// the state phases start.
	original *flinkv1beta1.FlinkStateSnapshot
	// now is when the reconcile started: the time of its trigger, result and back-off reckoning.
	now time.Time
	// The referenced job, once resolved (resolved): its cluster's client, or why it does not run.
	resolved bool
	tgt      target
	why      string
}

func newSnapshotScope(snap *flinkv1beta1.FlinkStateSnapshot, now time.Time) *snapshotScope {
	return &snapshotScope{snap: snap, now: now}
}

// close releases the job's cluster client (nil-safe: none when the job was not resolved or found).
func (s *snapshotScope) close() { s.tgt.Flink.Close() }

// pending: the snapshot waits to be triggered (a new one has no state yet).
func (s *snapshotScope) pending() bool {
	return s.snap.Status.State == "" || s.snap.Status.State == flinkv1beta1.SnapshotTriggerPending
}

// final: COMPLETED, FAILED or ABANDONED; nothing is done with the snapshot any more.
func (s *snapshotScope) final() bool {
	switch s.snap.Status.State {
	case flinkv1beta1.SnapshotCompleted, flinkv1beta1.SnapshotFailed, flinkv1beta1.SnapshotAbandoned:
		return true
	}
	return false
}

// disposeOnDelete: a savepoint to be disposed of with its resource (the default for savepoints).
func (s *snapshotScope) disposeOnDelete() bool {
	sp := s.snap.Spec.Savepoint
	return sp != nil && (sp.DisposeOnDelete == nil || *sp.DisposeOnDelete)
}

// target resolves the referenced job once a reconcile (ResolveTarget); why is set when it does
// not run. An error is not kept: it ends the reconcile.
func (r *FlinkStateSnapshotReconciler) target(ctx context.Context, s *snapshotScope) (target, string, error) {
	if !s.resolved {
		tgt, why, err := r.ResolveTarget(ctx, s.snap)
		if err != nil {
			return target{}, "", err
		}
		s.tgt, s.why, s.resolved = tgt, why, true
	}
	return s.tgt, s.why, nil
}

// snapshotPhase is one step of a snapshot reconcile.
type snapshotPhase = jobs.PhaseOf[*snapshotScope]

// snapshotPhases are the phases of a snapshot reconcile, in the order they are tried.
func (r *FlinkStateSnapshotReconciler) snapshotPhases() []snapshotPhase {
	return []snapshotPhase{
		// Deleted: deletionPhases, nothing else.
		{Name: "deletion", Run: r.deletion},
		// The finalizer and the labels snapshots are filtered by.
		{Name: "metadata", Run: r.metadata},
		// statePhases, then the status written.
		{Name: "advance", Run: r.advance},
	}
}

// statePhases move the snapshot along its states, one step a reconcile.
func (r *FlinkStateSnapshotReconciler) statePhases() []snapshotPhase {
	return []snapshotPhase{
		// COMPLETED, FAILED, ABANDONED: nothing more to do.
		{Name: "final", Run: r.finalState},
		// spec.savepoint.alreadyExists: a record of a savepoint taken elsewhere, COMPLETED at once.
		{Name: "recordExisting", Run: r.recordExisting},
		// A retry after a failure waits out its back-off.
		{Name: "backoff", Run: r.awaitBackoff},
		// The referenced job does not run: ABANDONED.
		{Name: "abandon", Run: r.abandon},
		// Trigger id written (IN_PROGRESS), then Flink asked.
		{Name: "trigger", Run: r.triggerSnapshot},
		// In flight and the job went away: a failed attempt.
		{Name: "jobGone", Run: r.jobGone},
		// In flight: Flink asked how it went; COMPLETED, a failed attempt, or asked again later.
		{Name: "progress", Run: r.trackProgress},
	}
}

// deletionPhases let a deleted snapshot go: a savepoint being written is followed to its end,
// a completed one disposed of through the job's cluster, then the finalizer goes.
func (r *FlinkStateSnapshotReconciler) deletionPhases() []snapshotPhase {
	return []snapshotPhase{
		// The finalizer is gone already: nothing to do.
		{Name: "released", Run: r.released},
		// A savepoint still being written is waited for.
		{Name: "awaitInProgress", Run: r.awaitInProgress},
		// A completed savepoint with disposeOnDelete is disposed of.
		{Name: "disposeSavepoint", Run: r.disposeSavepoint},
		{Name: "removeFinalizer", Run: r.removeFinalizer},
	}
}

// deletion runs deletionPhases on a deleted snapshot.
func (r *FlinkStateSnapshotReconciler) deletion(ctx context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	if s.snap.DeletionTimestamp.IsZero() {
		return jobs.Next(), nil
	}
	res, err := jobs.RunPhases(ctx, s, r.deletionPhases())
	return jobs.Acted(res), err
}

// metadata adds the finalizer and the filtering labels (ensureMetadata); a conflict is tried
// again soon on the newer resource.
func (r *FlinkStateSnapshotReconciler) metadata(ctx context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	if err := r.ensureMetadata(ctx, s.snap); err != nil {
		if apierrors.IsConflict(err) {
			return jobs.Acted(reconciler.RequeueSoon()), nil
		}
		return jobs.PhaseResult{}, err
	}
	return jobs.Next(), nil
}

// advance runs statePhases and writes the status, also after a phase failed (what it recorded
// before failing is kept); a conflict is tried again soon on the newer resource.
func (r *FlinkStateSnapshotReconciler) advance(ctx context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	s.original = s.snap.DeepCopy()
	if s.pending() {
		s.snap.Status.State = flinkv1beta1.SnapshotTriggerPending
	}
	res, err := jobs.RunPhases(ctx, s, r.statePhases())
	if perr := r.persistSnapshot(ctx, s.snap, s.original); perr != nil {
		if apierrors.IsConflict(perr) {
			return jobs.Acted(reconciler.RequeueSoon()), nil
		}
		return jobs.PhaseResult{}, perr
	}
	return jobs.Acted(res), err
}

// finalState ends the reconcile of a COMPLETED, FAILED or ABANDONED snapshot.
func (r *FlinkStateSnapshotReconciler) finalState(_ context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	if !s.final() {
		return jobs.Next(), nil
	}
	return jobs.Acted(ctrl.Result{}), nil
}

// recordExisting completes a record of an existing savepoint (spec.savepoint.alreadyExists)
// with its path, taken when recorded (upstream).
func (r *FlinkStateSnapshotReconciler) recordExisting(_ context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	sp := s.snap.Spec.Savepoint
	if !s.pending() || sp == nil || sp.AlreadyExists == nil || !*sp.AlreadyExists {
		return jobs.Next(), nil
	}
	st := &s.snap.Status
	st.State, st.Path, st.ResultTimestamp = flinkv1beta1.SnapshotCompleted, sp.Path, flinkv1beta1.FormatSnapshotTime(s.now)
	if st.TriggerTimestamp == "" {
		st.TriggerTimestamp = st.ResultTimestamp
	}
	return jobs.Acted(ctrl.Result{}), nil
}

// awaitBackoff holds a retry until the back-off after the last failure has passed.
func (r *FlinkStateSnapshotReconciler) awaitBackoff(_ context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	if !s.pending() {
		return jobs.Next(), nil
	}
	if wait := r.backoffLeft(s.snap, s.now); wait > 0 {
		return jobs.Acted(ctrl.Result{RequeueAfter: wait}), nil
	}
	return jobs.Next(), nil
}

// abandon gives up a snapshot whose job does not run (or cannot be found): ABANDONED, with a
// Warning event saying why.
func (r *FlinkStateSnapshotReconciler) abandon(ctx context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	if !s.pending() {
		return jobs.Next(), nil
	}
	_, why, err := r.target(ctx, s)
	if err != nil || why == "" {
		return jobs.Next(), err
	}
	s.snap.Status.State, s.snap.Status.Error = flinkv1beta1.SnapshotAbandoned, why
	r.Recorder.Event(s.snap, corev1.EventTypeWarning, ReasonSnapshotAbandoned, why)
	return jobs.Acted(ctrl.Result{}), nil
}

// triggerSnapshot records a new trigger id as IN_PROGRESS, writes it, then asks Flink under it
// (write-ahead); a trigger Flink refuses counts as a failed attempt.
func (r *FlinkStateSnapshotReconciler) triggerSnapshot(ctx context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	if !s.pending() {
		return jobs.Next(), nil
	}
	tgt, why, err := r.target(ctx, s)
	if err != nil || why != "" {
		return jobs.Next(), err
	}
	st := &s.snap.Status
	st.TriggerID, st.TriggerTimestamp, st.State = flink.NewTriggerID(), flinkv1beta1.FormatSnapshotTime(s.now), flinkv1beta1.SnapshotInProgress
	st.Error = ""
	if err := r.persistSnapshot(ctx, s.snap, s.original); err != nil {
		return jobs.PhaseResult{}, err
	}
	if progress := tgt.Flink.Start(ctx, snapshotOperation(s.snap, tgt)); progress.Outcome == flink.OutcomeFailed {
		r.failed(s.snap, "trigger: "+progress.Failure)
	}
	return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), nil
}

// jobGone counts a triggered snapshot whose job went away as a failed attempt. Only snapshots
// in flight get here: the final phase ends the reconcile of the others.
func (r *FlinkStateSnapshotReconciler) jobGone(ctx context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	if s.pending() {
		return jobs.Next(), nil
	}
	_, why, err := r.target(ctx, s)
	if err != nil || why == "" {
		return jobs.Next(), err
	}
	return jobs.Acted(r.failed(s.snap, "the job went away while the snapshot was in progress: "+why)), nil
}

// trackProgress asks Flink how the snapshot went (asking again under the same trigger id when
// Flink forgot it): COMPLETED with its path, a failed attempt, or looked at again soon. Only
// snapshots in flight get here, as for jobGone.
func (r *FlinkStateSnapshotReconciler) trackProgress(ctx context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	if s.pending() {
		return jobs.Next(), nil
	}
	tgt, why, err := r.target(ctx, s)
	if err != nil || why != "" {
		return jobs.Next(), err
	}
	op := snapshotOperation(s.snap, tgt)
	progress := tgt.Flink.Advance(ctx, op)
	switch progress.Outcome {
	case flink.OutcomePending:
		reconciler.LogUnknownOutcome(ctx, op, progress)
		return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), nil
	case flink.OutcomeFailed:
		return jobs.Acted(r.failed(s.snap, jobs.SnapshotKind(s.snap)+" failed: "+progress.Failure)), nil
	}
	st := &s.snap.Status
	st.State, st.Path, st.ResultTimestamp, st.Error = flinkv1beta1.SnapshotCompleted, progress.Location, flinkv1beta1.FormatSnapshotTime(s.now), ""
	r.Recorder.Eventf(s.snap, corev1.EventTypeNormal, ReasonSnapshotCompleted, "%s completed: %s", jobs.SnapshotKind(s.snap), progress.Location)
	return jobs.Acted(ctrl.Result{}), nil
}

// released: a deleted snapshot without the finalizer has nothing left to do.
func (r *FlinkStateSnapshotReconciler) released(_ context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	if controllerutil.ContainsFinalizer(s.snap, SnapshotFinalizer) {
		return jobs.Next(), nil
	}
	return jobs.Acted(ctrl.Result{}), nil
}

// awaitInProgress keeps a deleted savepoint that is still being written until Flink is done
// with it (upstream's StateSnapshotReconciler.cleanup keeps the finalizer on IN_PROGRESS), so it
// is not left behind undisposed. Upstream only waits; here its progress is also followed
// (statePhases), so that the wait ends; a failed attempt is not retried: the resource is going
// away. The wait is bounded (lifecycle.DecideDeletion): past the cleanup timeout since the
// deletion started, the snapshot goes with a Warning that the savepoint is not disposed of.
func (r *FlinkStateSnapshotReconciler) awaitInProgress(ctx context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	ref := s.snap.Spec.JobReference
	if !s.disposeOnDelete() || ref == nil || ref.Name == "" || s.snap.Status.State != flinkv1beta1.SnapshotInProgress {
		return jobs.Next(), nil
	}
	timeout := r.cleanupTimeout(ctx, s.snap)
	decision := lifecycle.DecideDeletion(lifecycle.DeletionObserved{Step: lifecycle.StepSnapshotInProgress, Blocked: lifecycle.BlockInProgress,
		Elapsed: s.now.Sub(s.snap.DeletionTimestamp.Time), Timeout: timeout})
	if decision.Action == lifecycle.DeletionGiveUp {
		r.Recorder.Eventf(s.snap, corev1.EventTypeWarning, string(decision.Reason),
			"The savepoint (trigger %s) was still in progress %s after the deletion started (kubernetes.operator.resource.cleanup.timeout): the resource goes without disposing of it; if Flink completes it, it stays in the savepoint storage",
			s.snap.Status.TriggerID, timeout)
		return jobs.Next(), nil
	}
	s.original = s.snap.DeepCopy()
	if _, err := jobs.RunPhases(ctx, s, r.statePhases()); err != nil {
		return jobs.PhaseResult{}, err
	}
	if err := r.persistSnapshot(ctx, s.snap, s.original); err != nil {
		if apierrors.IsConflict(err) {
			return jobs.Acted(reconciler.RequeueSoon()), nil
		}
		return jobs.PhaseResult{}, err
	}
	if s.snap.Status.State != flinkv1beta1.SnapshotInProgress {
		return jobs.Next(), nil
	}
	r.Recorder.Eventf(s.snap, corev1.EventTypeNormal, ReasonSnapshotDeletionWaits,
		"Cannot delete yet: the savepoint is still in progress; it is disposed of once Flink completes it (the deletion goes without it %s after it started)", decision.Bound)
	return jobs.Acted(ctrl.Result{RequeueAfter: decision.Requeue(r.Intervals.ProgressCheck)}), nil
}

// disposeSavepoint disposes of a completed savepoint with disposeOnDelete through the
// referenced job's cluster. Without a running job there is nothing to dispose with, so the
// deletion waits (as upstream) unless the referenced resource is gone; unlike upstream, not
// forever: past twice the cleanup timeout since the deletion started (the first may have gone
// to the savepoint's writing), the snapshot goes with a Warning naming the savepoint left in
// the storage.
func (r *FlinkStateSnapshotReconciler) disposeSavepoint(ctx context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	st := s.snap.Status
	if !s.disposeOnDelete() || st.State != flinkv1beta1.SnapshotCompleted || st.Path == "" {
		return jobs.Next(), nil
	}
	tgt, why, err := r.target(ctx, s)
	if err != nil {
		return jobs.PhaseResult{}, err
	}
	if why != "" && !r.targetExists(ctx, s.snap) {
		return jobs.Next(), nil
	}
	block := lifecycle.BlockUnreachable
	if why == "" {
		block = lifecycle.BlockInProgress
	}
	timeout := r.cleanupTimeout(ctx, s.snap)
	decision := lifecycle.DecideDeletion(lifecycle.DeletionObserved{Step: lifecycle.StepSavepointDisposal, Blocked: block,
		Elapsed: s.now.Sub(s.snap.DeletionTimestamp.Time), Timeout: timeout})
	if decision.Action == lifecycle.DeletionGiveUp {
		r.Recorder.Eventf(s.snap, corev1.EventTypeWarning, string(decision.Reason),
			"Savepoint %s not disposed of within %s of the deletion (twice kubernetes.operator.resource.cleanup.timeout): the resource goes, the savepoint stays in the storage",
			st.Path, decision.Bound)
		return jobs.Next(), nil
	}
	if why != "" {
		r.Recorder.Eventf(s.snap, corev1.EventTypeWarning, ReasonSnapshotError, "Waiting to dispose %s: %s", st.Path, why)
		return jobs.Acted(ctrl.Result{RequeueAfter: decision.Requeue(r.Intervals.Reconcile)}), nil
	}
	if _, err := tgt.Flink.DisposeSavepoint(ctx, st.Path); err != nil {
		r.Recorder.Eventf(s.snap, corev1.EventTypeWarning, ReasonSnapshotError, "Disposing %s failed: %v", st.Path, err)
		return jobs.Acted(ctrl.Result{RequeueAfter: decision.Requeue(r.Intervals.ProgressCheck)}), nil
	}
	r.Recorder.Eventf(s.snap, corev1.EventTypeNormal, "SnapshotDisposed", "Savepoint %s disposed", st.Path)
	return jobs.Next(), nil
}

// cleanupTimeout is kubernetes.operator.resource.cleanup.timeout of the snapshot's job's
// cluster, as that cluster's reconciler reads it (the operator's defaults when the cluster is
// not found or its configuration cannot be read).
func (r *FlinkStateSnapshotReconciler) cleanupTimeout(ctx context.Context, snap *flinkv1beta1.FlinkStateSnapshot) time.Duration {
	_, defaults, _ := reconciler.LiveSettings(r.Live, r.Intervals, r.Defaults, r.Flink)
	fallback := flinkconf.Config{}
	for k, v := range defaults.Operator {
		fallback[k] = v
	}
	cluster := r.referencedCluster(ctx, snap)
	if cluster == nil {
		return options.ResourceCleanupTimeout.Get(fallback)
	}
	conf, err := reconciler.ClusterConfig(cluster, defaults)
	if err != nil {
		return options.ResourceCleanupTimeout.Get(fallback)
	}
	return options.ResourceCleanupTimeout.Get(conf)
}

// referencedCluster is the FlinkDeployment the snapshot's job runs on (a session job's
// session), or nil when it is not found.
func (r *FlinkStateSnapshotReconciler) referencedCluster(ctx context.Context, snap *flinkv1beta1.FlinkStateSnapshot) *flinkv1beta1.FlinkDeployment {
	ref := snap.Spec.JobReference
	if ref == nil || ref.Name == "" {
		return nil
	}
	name := ref.Name
	if ref.Kind == flinkv1beta1.JobKindFlinkSessionJob {
		job := &flinkv1beta1.FlinkSessionJob{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: ref.Name}, job); err != nil {
			return nil
		}
		name = job.Spec.DeploymentName
	}
	dep := &flinkv1beta1.FlinkDeployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: name}, dep); err != nil {
		return nil
	}
	return dep
}

// removeFinalizer lets the deleted snapshot go.
func (r *FlinkStateSnapshotReconciler) removeFinalizer(ctx context.Context, s *snapshotScope) (jobs.PhaseResult, error) {
	controllerutil.RemoveFinalizer(s.snap, SnapshotFinalizer)
	if err := r.Client.Update(ctx, s.snap); err != nil && !apierrors.IsNotFound(err) {
		return jobs.PhaseResult{}, fmt.Errorf("remove finalizer: %w", err)
	}
	return jobs.Acted(ctrl.Result{}), nil
}
