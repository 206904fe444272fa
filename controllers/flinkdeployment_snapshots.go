package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/schedule"
	"github.com/flink-operator/flink-operator/pkg/shard"
)

// Operator options of snapshots, with upstream's names and defaults.
const (
	optSavepointHistoryMax = "kubernetes.operator.savepoint.history.max.count"
	defaultHistoryMax      = 10
)

// Event reasons of snapshots.
const (
	ReasonSavepoint       = "SavepointTriggered"
	ReasonSavepointDone   = "SavepointCompleted"
	ReasonCheckpoint      = "CheckpointTriggered"
	ReasonCheckpointDone  = "CheckpointCompleted"
	ReasonCheckpointError = "CheckpointError"
	// ReasonPeriodicIntervalClamped: a periodic snapshot interval below the minimum was raised.
	ReasonPeriodicIntervalClamped = "PeriodicIntervalClamped"
)

// snapshots takes manual (nonce) and periodic savepoints and checkpoints of a running job: as
// FlinkStateSnapshot resources (the default, snapshotresources.go), or in upstream's legacy
// status-field mode (status.jobStatus.savepointInfo / checkpointInfo) when
// kubernetes.operator.snapshot.resource.enabled is false. In legacy mode each
// trigger id is written to the status before Flink is asked, and followed to its end on later
// reconciles, so nothing holds a worker and a restarted operator picks up where it left off.
// It returns a requeue when a snapshot is in flight.
func (r *FlinkDeploymentReconciler) snapshots(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf native.Config) (time.Duration, error) {
	st := s.status()
	if desired.Job == nil || !jobRunning(st) || st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerReady {
		return 0, nil
	}
	if snapshotResourcesEnabled(conf) {
		return 0, requestSnapshots(ctx, r.Client, r.Recorder, r.jobSnapshots(ctx, s, desired, conf), time.Now())
	}
	cl, err := r.restClient(ctx, s)
	if err != nil {
		return 0, err
	}
	sp, err := r.savepoints(ctx, s, desired, conf, cl)
	if err != nil {
		return 0, err
	}
	cp, err := r.checkpoints(ctx, s, desired, conf, cl)
	if err != nil {
		return 0, err
	}
	if sp || cp {
		return r.Intervals.ProgressCheck, nil
	}
	return 0, nil
}

// jobSnapshots describes the deployment's job for snapshot resources.
func (r *FlinkDeploymentReconciler) jobSnapshots(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf native.Config) jobSnapshots {
	j := jobSnapshots{owner: s.dep, kind: flinkv1beta1.JobKindFlinkDeployment, deployed: s.deployed.Job, desired: desired.Job,
		status: &s.status().JobStatus, conf: conf, operatorConf: r.Defaults.Operator, minPeriodic: MinPeriodicInterval(r.Intervals),
		shardLabels:  shard.Labels(r.Shard, s.dep.Labels),
		recordNonces: func() error { return s.recordNonces(desired) },
		persist:      func() error { return r.persist(ctx, s) }}
	if j.deployed == nil {
		j.deployed = &flinkv1beta1.JobSpec{}
	}
	if j.desired == nil {
		j.desired = &flinkv1beta1.JobSpec{}
	}
	return j
}

func nonceChanged(deployed, desired *int64) bool {
	return desired != nil && (deployed == nil || *deployed != *desired)
}

// recordNonces stores the trigger nonces of desired in the last reconciled spec, so the same
// nonce never triggers twice (the rest of the deployed spec is kept as it is).
func (s *scope) recordNonces(desired *flinkv1beta1.FlinkDeploymentSpec) error {
	spec := s.deployed.DeepCopy()
	spec.Job.SavepointTriggerNonce = desired.Job.SavepointTriggerNonce
	spec.Job.CheckpointTriggerNonce = desired.Job.CheckpointTriggerNonce
	ts := s.status().ReconciliationStatus.ReconciliationTimestamp
	state := s.status().ReconciliationStatus.State
	if err := s.writeReconciled(*spec, state); err != nil {
		return err
	}
	s.status().ReconciliationStatus.ReconciliationTimestamp = ts // the job id derives from it
	return nil
}

// awaitPendingSavepoint says whether a spec change waits for a manual or periodic savepoint in
// flight (legacy snapshot mode), as upstream's readyToReconcile does: the upgrade's stop records
// its trigger in the same savepointInfo, so going ahead would either take that savepoint for the
// stop (and the job for stopped while it runs) or lose it. While it waits the savepoint is
// followed to its end, so the change goes ahead in the reconcile that records the outcome. With
// kubernetes.operator.job.upgrade.ignore-pending-savepoint, or when the job no longer runs (the
// savepoint cannot complete), the savepoint is abandoned instead.
func (r *FlinkDeploymentReconciler) awaitPendingSavepoint(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf native.Config) (bool, error) {
	st := s.status()
	if snapshotResourcesEnabled(conf) || !pendingSnapshotSavepoint(&st.CommonStatus) {
		return false, nil
	}
	if options.IgnorePendingSavepoint.Get(conf) || !jobRunning(st) || st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerReady {
		abandonPendingSavepoint(r.Recorder, s.dep, &st.CommonStatus, "the spec change does not wait for it")
		return false, r.persist(ctx, s)
	}
	cl, err := r.restClient(ctx, s)
	if err != nil {
		return true, err
	}
	return r.savepoints(ctx, s, desired, conf, cl)
}

// pendingSnapshotSavepoint says a manual or periodic savepoint (legacy mode) was triggered and
// its outcome is not recorded yet.
func pendingSnapshotSavepoint(st *flinkv1beta1.CommonStatus) bool {
	info := st.JobStatus.SavepointInfo
	return info != nil && info.TriggerID != "" && info.TriggerType != flinkv1beta1.SnapshotTriggerUpgrade
}

// abandonPendingSavepoint forgets a manual or periodic savepoint in flight, with a warning: its
// outcome is never recorded (Flink may still write it to the savepoint directory).
func abandonPendingSavepoint(rec record.EventRecorder, obj runtime.Object, st *flinkv1beta1.CommonStatus, why string) {
	info := st.JobStatus.SavepointInfo
	rec.Eventf(obj, corev1.EventTypeWarning, ReasonSavepointError, "%s savepoint %s abandoned: %s", info.TriggerType, info.TriggerID, why)
	info.TriggerID, info.TriggerType, info.TriggerTimestamp = "", "", nil
}

// savepoints returns true while a savepoint is in flight (upstream's legacy mode: the trigger
// in status.jobStatus.savepointInfo, the result in lastSavepoint and savepointHistory).
func (r *FlinkDeploymentReconciler) savepoints(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf native.Config, cl *flink.Client) (bool, error) {
	st := s.status()
	if st.JobStatus.SavepointInfo == nil {
		st.JobStatus.SavepointInfo = &flinkv1beta1.SavepointInfo{}
	}
	info := st.JobStatus.SavepointInfo
	var kind flinkv1beta1.SnapshotTriggerType
	switch {
	case info.TriggerID != "" && info.TriggerType != flinkv1beta1.SnapshotTriggerUpgrade:
		kind = info.TriggerType
	case nonceChanged(s.deployed.Job.SavepointTriggerNonce, desired.Job.SavepointTriggerNonce):
		if err := s.recordNonces(desired); err != nil {
			return false, err
		}
		kind = flinkv1beta1.SnapshotTriggerManual
	case periodicDue(conf, options.PeriodicSavepoint.Key, info.LastPeriodicSavepointTimestamp, st.JobStatus.StartTime, MinPeriodicInterval(r.Intervals)):
		warnPeriodicBelowMinimum(r.Recorder, s.dep, conf, options.PeriodicSavepoint.Key, MinPeriodicInterval(r.Intervals))
		info.LastPeriodicSavepointTimestamp = time.Now().UnixMilli()
		kind = flinkv1beta1.SnapshotTriggerPeriodic
	default:
		return false, nil
	}
	op := flink.Operation{Kind: flink.OperationSavepoint, JobID: st.JobStatus.JobID, TriggerID: info.TriggerID, Format: savepointFormat(conf)}
	progress, err := r.trackSnapshot(ctx, s, cl, &op, operationTrigger{&info.TriggerID, &info.TriggerType, &info.TriggerTimestamp}, kind)
	if err != nil || progress.Outcome == flink.OutcomePending {
		return progress.Outcome == flink.OutcomePending, err
	}
	if progress.Outcome == flink.OutcomeFailed {
		r.snapshotFailed(s, ReasonSavepointError, fmt.Sprintf("%s savepoint failed: %s", kind, progress.Failure))
		return false, r.persist(ctx, s)
	}
	done := flinkv1beta1.Savepoint{TimeStamp: time.Now().UnixMilli(), Location: progress.Location, TriggerType: kind,
		FormatType: flinkv1beta1.SavepointFormatType(op.Format)}
	if kind == flinkv1beta1.SnapshotTriggerManual {
		done.TriggerNonce = s.deployed.Job.SavepointTriggerNonce
	}
	info.LastSavepoint = &done
	info.SavepointHistory = append(info.SavepointHistory, done)
	if keep := options.SavepointHistoryMaxCount.Get(conf); keep > 0 && len(info.SavepointHistory) > keep {
		info.SavepointHistory = info.SavepointHistory[len(info.SavepointHistory)-keep:]
	}
	r.Recorder.Eventf(s.dep, corev1.EventTypeNormal, ReasonSavepointDone, "%s savepoint completed: %s", kind, progress.Location)
	return false, r.persist(ctx, s)
}

// checkpoints returns true while a checkpoint is in flight (legacy mode, checkpointInfo).
func (r *FlinkDeploymentReconciler) checkpoints(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf native.Config, cl *flink.Client) (bool, error) {
	st := s.status()
	if st.JobStatus.CheckpointInfo == nil {
		st.JobStatus.CheckpointInfo = &flinkv1beta1.CheckpointInfo{}
	}
	info := st.JobStatus.CheckpointInfo
	var kind flinkv1beta1.SnapshotTriggerType
	switch {
	case info.TriggerID != "":
		kind = info.TriggerType
	case nonceChanged(s.deployed.Job.CheckpointTriggerNonce, desired.Job.CheckpointTriggerNonce):
		if err := s.recordNonces(desired); err != nil {
			return false, err
		}
		kind = flinkv1beta1.SnapshotTriggerManual
	case periodicDue(conf, options.PeriodicCheckpoint.Key, info.LastPeriodicCheckpointTimestamp, st.JobStatus.StartTime, MinPeriodicInterval(r.Intervals)):
		warnPeriodicBelowMinimum(r.Recorder, s.dep, conf, options.PeriodicCheckpoint.Key, MinPeriodicInterval(r.Intervals))
		info.LastPeriodicCheckpointTimestamp = time.Now().UnixMilli()
		kind = flinkv1beta1.SnapshotTriggerPeriodic
	default:
		return false, nil
	}
	op := flink.Operation{Kind: flink.OperationCheckpoint, JobID: st.JobStatus.JobID, TriggerID: info.TriggerID, CheckpointType: flink.CheckpointFull}
	progress, err := r.trackSnapshot(ctx, s, cl, &op, operationTrigger{&info.TriggerID, &info.TriggerType, &info.TriggerTimestamp}, kind)
	if err != nil || progress.Outcome == flink.OutcomePending {
		return progress.Outcome == flink.OutcomePending, err
	}
	if progress.Outcome == flink.OutcomeFailed {
		r.snapshotFailed(s, ReasonCheckpointError, fmt.Sprintf("%s checkpoint failed: %s", kind, progress.Failure))
		return false, r.persist(ctx, s)
	}
	done := flinkv1beta1.Checkpoint{TimeStamp: time.Now().UnixMilli(), TriggerType: kind, FormatType: flinkv1beta1.CheckpointTypeFull}
	if kind == flinkv1beta1.SnapshotTriggerManual {
		done.TriggerNonce = s.deployed.Job.CheckpointTriggerNonce
	}
	info.LastCheckpoint = &done
	r.Recorder.Eventf(s.dep, corev1.EventTypeNormal, ReasonCheckpointDone, "%s checkpoint %d completed", kind, progress.CheckpointID)
	return false, r.persist(ctx, s)
}

// trackSnapshot drives a legacy-mode snapshot through the tracker (trackOperation), with a
// Normal event when it is triggered.
func (r *FlinkDeploymentReconciler) trackSnapshot(ctx context.Context, s *scope, cl *flink.Client, op *flink.Operation,
	trigger operationTrigger, kind flinkv1beta1.SnapshotTriggerType) (flink.Progress, error) {
	progress, started, err := trackOperation(ctx, cl, op, trigger, kind, func(ctx context.Context) error { return r.persist(ctx, s) })
	if started && progress.Outcome == flink.OutcomePending {
		what, reason := ReasonSavepoint, "savepoint"
		if op.Kind == flink.OperationCheckpoint {
			what, reason = ReasonCheckpoint, "checkpoint"
		}
		r.Recorder.Eventf(s.dep, corev1.EventTypeNormal, what, "%s %s triggered", kind, reason)
	}
	return progress, err
}

// snapshotFailed records a failed legacy-mode snapshot in status.error and as an event.
func (r *FlinkDeploymentReconciler) snapshotFailed(s *scope, reason, msg string) {
	s.status().Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionSnapshot, flinkv1beta1.ErrorReasonSnapshotFailed, msg)
	r.Recorder.Event(s.dep, corev1.EventTypeWarning, reason, msg)
}

// periodicDue: a periodic option is set (a duration, or a Quartz cron expression as upstream
// accepts) and the next snapshot is due since the last periodic one (or the job's start).
//
// Snapshots are never taken more often than minInterval (the operator's reconcile interval,
// MinPeriodicInterval), whatever the option says: upstream has no minimum, and an interval of
// seconds would have the operator take a savepoint, and create a FlinkStateSnapshot, at every
// progress check. A shorter interval is clamped (periodicBelowMinimum tells the user), not
// refused, so resources written for upstream keep working.
func periodicDue(conf native.Config, key string, last int64, jobStart string, minInterval time.Duration) bool {
	raw := strings.TrimSpace(conf[key])
	if raw == "" {
		return false
	}
	since := last
	if since == 0 {
		if ms, err := parseMillis(jobStart); err == nil {
			since = ms
		}
	}
	elapsed := time.Since(time.UnixMilli(since))
	if interval, err := native.ParseFlinkDuration(raw); err == nil {
		return interval > 0 && elapsed >= max(interval, minInterval)
	}
	cron, err := schedule.ParseCron(raw)
	if err != nil {
		return false // rejected by validation with a message naming the option
	}
	next := cron.Next(time.UnixMilli(since))
	return !next.IsZero() && !time.Now().Before(next) && elapsed >= minInterval
}

// MinPeriodicInterval is the shortest interval of periodic snapshots: the reconcile interval
// (kubernetes.operator.reconcile.interval), since a settled job is looked at that often anyway.
func MinPeriodicInterval(intervals Intervals) time.Duration { return intervals.Reconcile }

// warnPeriodicBelowMinimum records a Warning event when a periodic option's duration is shorter
// than minInterval, as a periodic snapshot is taken: the user asked for more than is done.
func warnPeriodicBelowMinimum(rec record.EventRecorder, obj runtime.Object, conf native.Config, key string, minInterval time.Duration) {
	interval, err := native.ParseFlinkDuration(strings.TrimSpace(conf[key]))
	if err != nil || interval <= 0 || interval >= minInterval {
		return
	}
	rec.Eventf(obj, corev1.EventTypeWarning, ReasonPeriodicIntervalClamped,
		"%s %s is below the operator's minimum, its reconcile interval %s: periodic snapshots are taken every %s", key, interval, minInterval, minInterval)
}

func parseMillis(s string) (int64, error) {
	var v int64
	_, err := fmt.Sscan(s, &v)
	return v, err
}

// requeueSooner picks the earlier of two requeues (zero means none).
func requeueSooner(res ctrl.Result, d time.Duration) ctrl.Result {
	if d > 0 && (res.RequeueAfter == 0 || d < res.RequeueAfter) {
		res.RequeueAfter = d
	}
	return res
}
