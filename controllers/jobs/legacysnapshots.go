package jobs

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// LegacySnapshots takes a running job's manual (nonce) and periodic savepoints and checkpoints
// in upstream's legacy snapshot mode (kubernetes.operator.snapshot.resource.enabled: false),
// for either kind of job (a FlinkDeployment's application job, a FlinkSessionJob): the trigger
// is recorded in status.jobStatus.savepointInfo / checkpointInfo, the result in lastSavepoint,
// savepointHistory and lastCheckpoint. Each trigger id is written to the status before Flink is
// asked, and followed to its end on later reconciles, so nothing holds a worker and a restarted
// operator picks up where it left off.
//
// The caller decides that the job runs on a ready JobManager and that legacy mode is on.
type LegacySnapshots struct {
	Owner  client.Object
	Status *flinkv1beta1.CommonStatus
	// Deployed is the last reconciled job spec, whose nonces were taken already. A function:
	// recording a nonce replaces the owner's record of it.
	Deployed func() *flinkv1beta1.JobSpec
	Desired  *flinkv1beta1.JobSpec
	// Conf is the job's configuration (a session job's is its session's with its own over it).
	Conf flinkconf.Config
	// OperatorConf is the operator's own configuration, where the history caps
	// (kubernetes.operator.savepoint.history.max.*.threshold) are read; nil reads them from conf.
	OperatorConf flinkconf.Config
	// MinPeriodic is the shortest interval of periodic snapshots (MinPeriodicInterval).
	MinPeriodic time.Duration
	Recorder    record.EventRecorder
	// Flink returns the client of the JobManager the job runs on.
	Flink func(context.Context) (*flink.Client, error)
	// RecordNonces writes desired's trigger nonces into the last reconciled spec, so the same
	// nonce never triggers twice.
	RecordNonces func() error
	// Persist writes the status.
	Persist func(context.Context) error
}

// Run takes or follows the job's snapshots and trims its savepoint history; inFlight says a
// savepoint or checkpoint is not done yet (look again after the progress-check interval).
func (l *LegacySnapshots) Run(ctx context.Context) (inFlight bool, err error) {
	cl, err := l.Flink(ctx)
	if err != nil {
		return false, err
	}
	sp, err := l.savepoints(ctx, cl)
	if err != nil {
		return false, err
	}
	cp, err := l.checkpoints(ctx, cl)
	if err != nil {
		return false, err
	}
	if err := l.trimHistory(ctx, cl, time.Now()); err != nil {
		return false, err
	}
	return sp || cp, nil
}

// AwaitPending says whether a spec change waits for a manual or periodic savepoint in flight,
// as upstream's readyToReconcile does: the upgrade's stop records its trigger in the same
// savepointInfo, so going ahead would either take that savepoint for the stop (and the job for
// stopped while it runs) or lose it. While it waits the savepoint is followed to its end, so the
// change goes ahead in the reconcile that records the outcome. With
// kubernetes.operator.job.upgrade.ignore-pending-savepoint, or when the job no longer runs
// (jobRunning false: the savepoint cannot complete), the savepoint is abandoned instead.
func (l *LegacySnapshots) AwaitPending(ctx context.Context, jobRunning bool) (bool, error) {
	if !pendingSnapshotSavepoint(l.Status) {
		return false, nil
	}
	if options.IgnorePendingSavepoint.Get(l.Conf) || !jobRunning {
		abandonPendingSavepoint(l.Recorder, l.Owner, l.Status, "the spec change does not wait for it")
		return false, l.Persist(ctx)
	}
	cl, err := l.Flink(ctx)
	if err != nil {
		return true, err
	}
	return l.savepoints(ctx, cl)
}

func (l *LegacySnapshots) deployedJob() *flinkv1beta1.JobSpec {
	if job := l.Deployed(); job != nil {
		return job
	}
	return &flinkv1beta1.JobSpec{}
}

// savepoints returns true while a savepoint is in flight (the trigger in savepointInfo, the
// result in lastSavepoint and savepointHistory).
func (l *LegacySnapshots) savepoints(ctx context.Context, cl *flink.Client) (bool, error) {
	js := &l.Status.JobStatus
	if js.SavepointInfo == nil {
		js.SavepointInfo = &flinkv1beta1.SavepointInfo{}
	}
	info := js.SavepointInfo
	var kind flinkv1beta1.SnapshotTriggerType
	switch {
	case info.TriggerID != "" && info.TriggerType != flinkv1beta1.SnapshotTriggerUpgrade:
		kind = info.TriggerType
	case info.TriggerID != "":
		return false, nil // an upgrade's stop-with-savepoint: jobStop follows it
	case nonceChanged(l.deployedJob().SavepointTriggerNonce, l.Desired.SavepointTriggerNonce):
		if err := l.RecordNonces(); err != nil {
			return false, err
		}
		kind = flinkv1beta1.SnapshotTriggerManual
	case periodicDue(l.Conf, options.PeriodicSavepoint.Key, info.LastPeriodicSavepointTimestamp, js.StartTime, l.MinPeriodic):
		warnPeriodicBelowMinimum(l.Recorder, l.Owner, l.Conf, options.PeriodicSavepoint.Key, l.MinPeriodic)
		info.LastPeriodicSavepointTimestamp = time.Now().UnixMilli()
		kind = flinkv1beta1.SnapshotTriggerPeriodic
	default:
		return false, nil
	}
	op := flink.Operation{Kind: flink.OperationSavepoint, JobID: js.JobID, TriggerID: info.TriggerID, Format: SavepointFormat(l.Conf)}
	triggeredAt := triggerTime(info.TriggerTimestamp)
	progress, err := l.track(ctx, cl, &op, operationTrigger{&info.TriggerID, &info.TriggerType, &info.TriggerTimestamp}, kind)
	if err != nil || progress.Outcome == flink.OutcomePending {
		return progress.Outcome == flink.OutcomePending, err
	}
	if progress.Outcome == flink.OutcomeFailed {
		msg := fmt.Sprintf("%s savepoint failed: %s", kind, progress.Failure)
		if kind == flinkv1beta1.SnapshotTriggerManual && withinGracePeriod(triggeredAt, options.SavepointTriggerGracePeriod.Get(l.Conf)) {
			if err := l.retryNonce(true); err != nil {
				return false, err
			}
			msg += "; failed within kubernetes.operator.savepoint.trigger.grace-period of its trigger, so it is triggered again"
		}
		l.failed(reconciler.ReasonSavepointError, msg)
		return false, l.Persist(ctx)
	}
	done := flinkv1beta1.Savepoint{TimeStamp: time.Now().UnixMilli(), Location: progress.Location, TriggerType: kind,
		FormatType: flinkv1beta1.SavepointFormatType(op.Format)}
	if kind == flinkv1beta1.SnapshotTriggerManual {
		done.TriggerNonce = l.deployedJob().SavepointTriggerNonce
	}
	info.LastSavepoint = &done
	// The history is trimmed by trimHistory, with the disposal of what it drops.
	info.SavepointHistory = append(info.SavepointHistory, done)
	l.Recorder.Eventf(l.Owner, corev1.EventTypeNormal, ReasonSavepointDone, "%s savepoint completed: %s", kind, progress.Location)
	return false, l.Persist(ctx)
}

// checkpoints returns true while a checkpoint is in flight (checkpointInfo).
func (l *LegacySnapshots) checkpoints(ctx context.Context, cl *flink.Client) (bool, error) {
	js := &l.Status.JobStatus
	if js.CheckpointInfo == nil {
		js.CheckpointInfo = &flinkv1beta1.CheckpointInfo{}
	}
	info := js.CheckpointInfo
	var kind flinkv1beta1.SnapshotTriggerType
	switch {
	case info.TriggerID != "":
		kind = info.TriggerType
	case nonceChanged(l.deployedJob().CheckpointTriggerNonce, l.Desired.CheckpointTriggerNonce):
		if err := l.RecordNonces(); err != nil {
			return false, err
		}
		kind = flinkv1beta1.SnapshotTriggerManual
	case periodicDue(l.Conf, options.PeriodicCheckpoint.Key, info.LastPeriodicCheckpointTimestamp, js.StartTime, l.MinPeriodic):
		warnPeriodicBelowMinimum(l.Recorder, l.Owner, l.Conf, options.PeriodicCheckpoint.Key, l.MinPeriodic)
		info.LastPeriodicCheckpointTimestamp = time.Now().UnixMilli()
		kind = flinkv1beta1.SnapshotTriggerPeriodic
	default:
		return false, nil
	}
	op := flink.Operation{Kind: flink.OperationCheckpoint, JobID: js.JobID, TriggerID: info.TriggerID, CheckpointType: flink.CheckpointFull}
	triggeredAt := triggerTime(info.TriggerTimestamp)
	progress, err := l.track(ctx, cl, &op, operationTrigger{&info.TriggerID, &info.TriggerType, &info.TriggerTimestamp}, kind)
	if err != nil || progress.Outcome == flink.OutcomePending {
		return progress.Outcome == flink.OutcomePending, err
	}
	if progress.Outcome == flink.OutcomeFailed {
		msg := fmt.Sprintf("%s checkpoint failed: %s", kind, progress.Failure)
		if kind == flinkv1beta1.SnapshotTriggerManual && withinGracePeriod(triggeredAt, options.CheckpointTriggerGracePeriod.Get(l.Conf)) {
			if err := l.retryNonce(false); err != nil {
				return false, err
			}
			msg += "; failed within kubernetes.operator.checkpoint.trigger.grace-period of its trigger, so it is triggered again"
		}
		l.failed(ReasonCheckpointError, msg)
		return false, l.Persist(ctx)
	}
	done := flinkv1beta1.Checkpoint{TimeStamp: time.Now().UnixMilli(), TriggerType: kind, FormatType: flinkv1beta1.CheckpointTypeFull}
	if kind == flinkv1beta1.SnapshotTriggerManual {
		done.TriggerNonce = l.deployedJob().CheckpointTriggerNonce
	}
	info.LastCheckpoint = &done
	l.Recorder.Eventf(l.Owner, corev1.EventTypeNormal, ReasonCheckpointDone, "%s checkpoint %d completed", kind, progress.CheckpointID)
	return false, l.Persist(ctx)
}

// track drives a snapshot through the tracker (trackOperation), with a Normal event when it is
// triggered.
func (l *LegacySnapshots) track(ctx context.Context, cl *flink.Client, op *flink.Operation,
	trigger operationTrigger, kind flinkv1beta1.SnapshotTriggerType) (flink.Progress, error) {
	progress, started, err := trackOperation(ctx, cl, op, trigger, kind, l.Persist)
	if started && progress.Outcome == flink.OutcomePending {
		reason, what := ReasonSavepoint, "savepoint"
		if op.Kind == flink.OperationCheckpoint {
			reason, what = ReasonCheckpoint, "checkpoint"
		}
		l.Recorder.Eventf(l.Owner, corev1.EventTypeNormal, reason, "%s %s triggered", kind, what)
	}
	return progress, err
}

// withinGracePeriod says a snapshot triggered at triggeredAt that failed now is asked for again
// (upstream's SnapshotUtils.gracePeriodEnded, in SnapshotObserver): Flink refuses a trigger
// while, for example, the job's tasks are still starting. A manual snapshot that fails later
// is not retried; a new nonce asks again.
func withinGracePeriod(triggeredAt time.Time, grace time.Duration) bool {
	return time.Since(triggeredAt) < grace
}

// retryNonce makes the manual savepoint (or checkpoint) be triggered again: its nonce,
// recorded as handled when it was triggered, is recorded as none; the other nonce stays as
// recorded. recordNonces writes the desired job's nonces, and the constructors give l.desired
// that same job, so the nonces are set there for the write only.
func (l *LegacySnapshots) retryNonce(savepoint bool) error {
	d, recorded := l.Desired, l.deployedJob()
	sp, cp := d.SavepointTriggerNonce, d.CheckpointTriggerNonce
	defer func() { d.SavepointTriggerNonce, d.CheckpointTriggerNonce = sp, cp }()
	d.SavepointTriggerNonce, d.CheckpointTriggerNonce = recorded.SavepointTriggerNonce, recorded.CheckpointTriggerNonce
	if savepoint {
		d.SavepointTriggerNonce = nil
	} else {
		d.CheckpointTriggerNonce = nil
	}
	return l.RecordNonces()
}

// failed records a failed snapshot in status.error and as an event.
func (l *LegacySnapshots) failed(reason, msg string) {
	l.Status.Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionSnapshot, flinkv1beta1.ErrorReasonSnapshotFailed, msg)
	l.Recorder.Event(l.Owner, corev1.EventTypeWarning, reason, msg)
}

// trimHistory bounds savepointInfo.savepointHistory, as upstream's
// SnapshotObserver.cleanupSavepointHistoryLegacy does while the job runs. Every entry counts,
// whatever took it (manual, periodic, upgrade). Oldest first, an entry goes while the history
// holds more than kubernetes.operator.savepoint.history.max.count, and whenever it is older than
// .max.age (both capped by their .threshold in the operator's configuration, see
// snapshotHistoryLimitsFrom); the newest entry always stays, however old, since it may be the
// only state the job can be restored from.
//
// With kubernetes.operator.savepoint.cleanup.enabled (the default) an entry's savepoint is
// disposed through its JobManager (POST /savepoint-disposal) and the entry leaves the history
// only once Flink accepted that: an entry whose disposal failed stays, to be disposed on a later
// reconcile, since nothing else remembers its path. After such a failure no newer entry goes
// for the count (the oldest would be orphaned); the age still applies to each one. A reconcile
// of a stale copy of the resource may dispose a savepoint again before its status write fails
// on the conflict; Flink's disposal of a path already gone just fails. With cleanup disabled
// the entries go and their data stays where it is.
func (l *LegacySnapshots) trimHistory(ctx context.Context, cl *flink.Client, now time.Time) error {
	info := l.Status.JobStatus.SavepointInfo
	if info == nil || len(info.SavepointHistory) < 2 {
		return nil
	}
	limits := snapshotHistoryLimitsFrom(l.Conf, l.OperatorConf)
	dispose := options.SavepointCleanup.Get(l.Conf)
	history := info.SavepointHistory
	newest := len(history) - 1
	kept := make([]flinkv1beta1.Savepoint, 0, len(history))
	remaining, countBlocked := len(history), false
	for i, sp := range history {
		tooMany := !countBlocked && remaining > limits.savepointMaxCount
		tooOld := now.Sub(time.UnixMilli(sp.TimeStamp)) > limits.savepointMaxAge
		if i == newest || (!tooMany && !tooOld) {
			kept = append(kept, sp)
			continue
		}
		if dispose && sp.Location != "" {
			if _, err := cl.DisposeSavepoint(ctx, sp.Location); err != nil {
				log.FromContext(ctx).Error(err, "cannot dispose a savepoint trimmed from the history; retrying on a later reconcile",
					"path", sp.Location)
				countBlocked = countBlocked || tooMany
				kept = append(kept, sp)
				continue
			}
		}
		log.FromContext(ctx).Info("trimmed savepoint history", "path", sp.Location, "trigger", sp.TriggerType,
			"disposed", dispose, "tooMany", tooMany, "tooOld", tooOld)
		remaining--
	}
	if len(kept) == len(history) {
		return nil
	}
	info.SavepointHistory = kept
	return l.Persist(ctx)
}
