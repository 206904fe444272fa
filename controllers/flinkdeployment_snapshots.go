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
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
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
// status-field mode (status.jobStatus.savepointInfo / checkpointInfo, legacysnapshots.go) when
// kubernetes.operator.snapshot.resource.enabled is false. It returns a requeue when a snapshot
// is in flight.
func (r *FlinkDeploymentReconciler) snapshots(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) (time.Duration, error) {
	st := s.status()
	if desired.Job == nil || !jobRunning(st) || st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerReady {
		return 0, nil
	}
	if snapshotResourcesEnabled(conf) {
		return 0, requestSnapshots(ctx, r.Client, r.Recorder, r.jobSnapshots(ctx, s, desired, conf), time.Now())
	}
	inFlight, err := r.legacySnapshots(s, desired, conf).run(ctx)
	if inFlight {
		return r.Intervals.ProgressCheck, err
	}
	return 0, err
}

// legacySnapshots is the deployment's job for legacy-mode snapshots (legacysnapshots.go).
func (r *FlinkDeploymentReconciler) legacySnapshots(s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) *legacySnapshots {
	return &legacySnapshots{owner: s.dep, status: &s.status().CommonStatus,
		deployed: func() *flinkv1beta1.JobSpec { return s.deployed.Job }, desired: desired.Job,
		conf: conf, operatorConf: r.Defaults.Operator, minPeriodic: MinPeriodicInterval(r.Intervals), recorder: r.Recorder,
		flink:        func(ctx context.Context) (*flink.Client, error) { return r.restClient(ctx, s) },
		recordNonces: func() error { return s.recordNonces(desired) },
		persist:      func(ctx context.Context) error { return r.persist(ctx, s) }}
}

// jobSnapshots describes the deployment's job for snapshot resources.
func (r *FlinkDeploymentReconciler) jobSnapshots(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) jobSnapshots {
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
	// Taking a nonce deploys nothing: the first deployment stays the first until an upgrade,
	// as upstream records it.
	if err := s.writeReconciled(*spec, state, s.firstDeployment); err != nil {
		return err
	}
	s.status().ReconciliationStatus.ReconciliationTimestamp = ts // the job id derives from it
	return nil
}

// awaitPendingSavepoint says whether a spec change waits for a manual or periodic savepoint in
// flight (legacy snapshot mode; legacySnapshots.awaitPending).
func (r *FlinkDeploymentReconciler) awaitPendingSavepoint(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) (bool, error) {
	if snapshotResourcesEnabled(conf) || desired.Job == nil {
		return false, nil
	}
	st := s.status()
	return r.legacySnapshots(s, desired, conf).awaitPending(ctx, jobRunning(st) && st.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady)
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

// periodicDue: a periodic option is set (a duration, or a Quartz cron expression as upstream
// accepts) and the next snapshot is due since the last periodic one (or the job's start).
//
// Snapshots are never taken more often than minInterval (the operator's reconcile interval,
// MinPeriodicInterval), whatever the option says: upstream has no minimum, and an interval of
// seconds would have the operator take a savepoint, and create a FlinkStateSnapshot, at every
// progress check. A shorter interval is clamped (periodicBelowMinimum tells the user), not
// refused, so resources written for upstream keep working.
func periodicDue(conf flinkconf.Config, key string, last int64, jobStart string, minInterval time.Duration) bool {
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
	if interval, err := flinkconf.ParseFlinkDuration(raw); err == nil {
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
func warnPeriodicBelowMinimum(rec record.EventRecorder, obj runtime.Object, conf flinkconf.Config, key string, minInterval time.Duration) {
	interval, err := flinkconf.ParseFlinkDuration(strings.TrimSpace(conf[key]))
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
