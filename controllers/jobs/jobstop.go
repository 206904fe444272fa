package jobs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink"
)

// JobStop carries out the stop step of an upgradePlan, or the stop before a deletion, for a job
// of either kind (a FlinkDeployment's application job, a FlinkSessionJob). It is the one place
// where a job is stopped with its state kept; every step is recorded in the status before Flink
// is asked (write-ahead), so an operator restarted at any moment continues the same stop:
//
//	stopSavepoint  stop-with-savepoint through pkg/flink's tracker (trigger id recorded first);
//	               its path becomes upgradeSavepointPath and the job FINISHED
//	stopCancel     the latest checkpoint recorded, the job cancelled; once CANCELED the latest
//	               checkpoint is read again (one completing during the cancel subsumes it)
//	stopStateless  cancel
//	stopLastState  HA metadata is the state: a recorded path is dropped so it is not restored
//	stopNone       nothing to stop; a CANCELED job's latest checkpoint is read again
//	stopWait       not yet
//	stopFail       the manual-restore failure is reported; nothing is touched
//
// A savepoint already triggered for an upgrade is followed to its end whatever the plan says
// now: it may have completed (the job is then FINISHED and its state is in that savepoint).
type JobStop struct {
	// Flink returns the client of the job's JobManager.
	Flink func(context.Context) (*flink.Client, error)
	// JobManager is the state of the JobManager the job runs on.
	JobManager flinkv1beta1.JobManagerDeploymentStatus
	Status     *flinkv1beta1.CommonStatus
	Owner      client.Object
	Recorder   record.EventRecorder
	Persist    func(context.Context) error
	Format     flink.SavepointFormat
	// CancelTimeout bounds the cancel call (kubernetes.operator.flink.client.cancel.timeout);
	// zero leaves the client's timeout.
	CancelTimeout time.Duration
	// OwnState: the job restores its own state (savepoint or last-state mode), not nothing or a
	// savepoint the user chose; only then is a cancelled job's latest checkpoint recorded.
	OwnState bool
	// UpgradeSnapshot records a completed upgrade savepoint as a FlinkStateSnapshot resource.
	UpgradeSnapshot func(ctx context.Context, path string, triggeredAt time.Time) error
}

// StopProgress is where a stop stands after one step.
type StopProgress string

const (
	// StopDone: the job is stopped, or there was nothing to stop; the upgrade goes on.
	StopDone StopProgress = "done"
	// StopPending: look again after the progress-check interval.
	StopPending StopProgress = "pending"
	// StopNeedsUser: only the user can say where the job's state is; look again later.
	StopNeedsUser StopProgress = "needs-user"
)

// Run takes the stop step of plan.
func (x *JobStop) Run(ctx context.Context, plan UpgradePlan) (StopProgress, error) {
	if UpgradeSavepointInFlight(x.Status) && x.JobManager != flinkv1beta1.JobManagerMissing {
		return x.WithSavepoint(ctx, false)
	}
	switch plan.Stop {
	case StopWait:
		return StopPending, nil
	case StopFail:
		x.fail(flinkv1beta1.ErrorReasonManualRestoreRequired, "Cannot upgrade: "+plan.Reason)
		return StopNeedsUser, nil
	case StopSavepoint:
		return x.WithSavepoint(ctx, false)
	case StopCancel:
		return x.cancelKeepingCheckpoint(ctx)
	case StopStateless:
		return x.Cancel(ctx, false)
	case stopLastState:
		if x.Status.JobStatus.UpgradeSavepointPath != "" {
			x.Status.JobStatus.UpgradeSavepointPath = ""
			return StopDone, x.Persist(ctx)
		}
	case StopNone:
		if x.OwnState && plan.Restore == RestoreSavepoint && x.Status.JobStatus.State == flinkv1beta1.JobStatusCanceled &&
			x.JobManager == flinkv1beta1.JobManagerReady {
			if err := x.refreshLatestCheckpoint(ctx); err != nil {
				return StopPending, err
			}
		}
	}
	return StopDone, nil
}

// fail reports a stop that cannot go on, once per distinct failure.
func (x *JobStop) fail(reason flinkv1beta1.StatusErrorReason, msg string) {
	if failure := flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionUpgradeFailure, reason, msg); x.Status.Error != failure {
		x.Status.Error = failure
		x.Recorder.Event(x.Owner, corev1.EventTypeWarning, reconciler.ReasonError, msg)
	}
}

// WithSavepoint stops the job with a savepoint. drain emits MAX_WATERMARK first (deletion with
// kubernetes.operator.job.drain-on-savepoint-deletion).
func (x *JobStop) WithSavepoint(ctx context.Context, drain bool) (StopProgress, error) {
	if x.JobManager != flinkv1beta1.JobManagerReady {
		return StopPending, nil
	}
	cl, err := x.Flink(ctx)
	if err != nil {
		return StopPending, err
	}
	js := &x.Status.JobStatus
	if js.SavepointInfo == nil {
		js.SavepointInfo = &flinkv1beta1.SavepointInfo{}
	}
	info := js.SavepointInfo
	if pendingSnapshotSavepoint(x.Status) {
		// A manual or periodic savepoint's trigger is not this stop's: following it would
		// take the job for stopped while it still runs.
		abandonPendingSavepoint(x.Recorder, x.Owner, x.Status, "the job is being stopped with a savepoint of its own")
	}
	// No target directory: the cluster's own savepoint directory, which its JobManager
	// resolves (a path of its file system, not of the operator's).
	op := flink.Operation{Kind: flink.OperationStopWithSavepoint, JobID: js.JobID, TriggerID: info.TriggerID, Format: x.Format, Drain: drain}
	if !UpgradeSavepointInFlight(x.Status) {
		info.FormatType = flinkv1beta1.SavepointFormatType(op.Format)
	}
	triggeredAt := triggerTime(info.TriggerTimestamp)
	progress, _, err := trackOperation(ctx, cl, &op, operationTrigger{&info.TriggerID, &info.TriggerType, &info.TriggerTimestamp},
		flinkv1beta1.SnapshotTriggerUpgrade, x.Persist)
	if err != nil {
		return StopPending, err
	}
	switch progress.Outcome {
	case flink.OutcomePending:
		return StopPending, nil
	case flink.OutcomeFailed:
		// The job keeps running; the next step takes a new decision (a new spec or upgradeMode
		// may have arrived meanwhile).
		msg := "Savepoint for the upgrade failed: " + progress.Failure
		x.Status.Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionUpgradeFailure, flinkv1beta1.ErrorReasonUpgradeFailed, msg)
		x.Recorder.Event(x.Owner, corev1.EventTypeWarning, reconciler.ReasonSavepointError, msg)
		return StopPending, x.Persist(ctx)
	}
	sp := flinkv1beta1.Savepoint{TimeStamp: time.Now().UnixMilli(), Location: progress.Location,
		TriggerType: flinkv1beta1.SnapshotTriggerUpgrade, FormatType: info.FormatType}
	info.LastSavepoint = &sp
	info.SavepointHistory = append(info.SavepointHistory, sp)
	js.UpgradeSavepointPath = progress.Location
	SetJobState(js, flinkv1beta1.JobStatusFinished)
	if err := x.UpgradeSnapshot(ctx, progress.Location, triggeredAt); err != nil {
		return StopPending, err
	}
	x.Recorder.Eventf(x.Owner, corev1.EventTypeNormal, ReasonSavepointDone, "Upgrade savepoint completed: %s", progress.Location)
	log.FromContext(ctx).Info("job stopped with a savepoint", "job", op.JobID, "path", progress.Location)
	return StopDone, x.Persist(ctx)
}

// cancelKeepingCheckpoint is last-state without HA of the job's own: the latest completed
// checkpoint is what the next deployment restores. It is recorded before the cancel, and read
// again once the job is CANCELED. A job with no completed checkpoint is not cancelled: it could
// not be restored.
func (x *JobStop) cancelKeepingCheckpoint(ctx context.Context) (StopProgress, error) {
	cl, err := x.Flink(ctx)
	if err != nil {
		return StopPending, err
	}
	js := &x.Status.JobStatus
	path, err := cl.LatestCheckpointPath(ctx, js.JobID)
	if err != nil {
		log.FromContext(ctx).Info("cannot read the latest checkpoint before cancelling; retrying", "job", js.JobID, "error", err.Error())
		return StopPending, nil
	}
	if path == "" {
		x.fail(flinkv1beta1.ErrorReasonUpgradeFailed, "Cannot upgrade: a last-state upgrade without HA metadata needs a completed checkpoint; none yet")
		return StopPending, nil
	}
	if path != js.UpgradeSavepointPath {
		js.UpgradeSavepointPath = path
		if err := x.Persist(ctx); err != nil {
			return StopPending, err
		}
	}
	return x.Cancel(ctx, true)
}

// Cancel cancels the job and reports it stopped once Flink says it is terminal (or no longer
// knows it). keepCheckpoint reads its latest checkpoint again then.
//
// As upstream (AbstractFlinkService.cancelJobOrError), a cancel Flink accepted is recorded as
// CANCELLING and is a step of its own, never asked for twice. The job is looked at again only
// once CANCELLING has been visible for CancellingVisible (PendingRecheck), so status.jobStatus.state
// shows the cancellation however fast Flink is, and users and upstream's scripts that poll for
// CANCELLING see it.
func (x *JobStop) Cancel(ctx context.Context, keepCheckpoint bool) (StopProgress, error) {
	js := &x.Status.JobStatus
	if age, known := stateAge(js, time.Now()); js.State == flinkv1beta1.JobStatusCancelling && known && age < CancellingVisible {
		return StopPending, nil
	}
	cl, err := x.Flink(ctx)
	if err != nil {
		return StopPending, err
	}
	if js.State != flinkv1beta1.JobStatusCancelling {
		canceller := cl
		if x.CancelTimeout > 0 {
			canceller = cl.WithTimeout(x.CancelTimeout)
		}
		err := canceller.CancelJob(ctx, js.JobID)
		switch {
		case err == nil:
			SetJobState(js, flinkv1beta1.JobStatusCancelling)
			return StopPending, x.Persist(ctx)
		case !flink.IsConflict(err) && !flink.IsNotFound(err):
			return StopPending, fmt.Errorf("cancel job %s: %w", js.JobID, err)
		}
		// Already terminal, or unknown to Flink: what it says of the job now decides.
	}
	state, err := cl.JobStatus(ctx, js.JobID)
	switch {
	case flink.IsNotFound(err):
	case err != nil:
		return StopPending, nil // asked again on the next step
	case !reconciler.IsTerminal(flinkv1beta1.JobStatusState(state)):
		SetJobState(js, ObservedJobState(js, flinkv1beta1.JobStatusState(state), time.Now()))
		return StopPending, nil
	}
	SetJobState(js, flinkv1beta1.JobStatusCanceled)
	if keepCheckpoint {
		if err := x.refreshLatestCheckpoint(ctx); err != nil {
			return StopPending, err
		}
	}
	return StopDone, nil
}

// refreshLatestCheckpoint records the latest completed checkpoint of a cancelled job as what it
// restores (write-ahead: before its cluster is deleted or its successor submitted). With the
// default num-retained of 1, a checkpoint that completed while the job was being cancelled
// deleted the one recorded before the cancel.
func (x *JobStop) refreshLatestCheckpoint(ctx context.Context) error {
	cl, err := x.Flink(ctx)
	if err != nil {
		return err
	}
	js := &x.Status.JobStatus
	path, err := cl.LatestCheckpointPath(ctx, js.JobID)
	if err != nil && !flink.IsNotFound(err) {
		return fmt.Errorf("read the latest checkpoint of the cancelled job %s: %w", js.JobID, err)
	}
	if path == "" || path == js.UpgradeSavepointPath {
		return nil
	}
	log.FromContext(ctx).Info("the cancelled job's latest checkpoint is what it restores", "job", js.JobID, "recorded", js.UpgradeSavepointPath, "latest", path)
	js.UpgradeSavepointPath = path
	return x.Persist(ctx)
}

// operationTrigger is where a status records one asynchronous operation's trigger.
type operationTrigger struct {
	ID        *string
	Type      *flinkv1beta1.SnapshotTriggerType
	Timestamp **int64
}

// trackOperation is the one trigger → poll → outcome step of Flink's asynchronous operations
// recorded in a resource's status (upgrade stops, legacy savepoints and checkpoints): with no
// trigger recorded, a new id is recorded and persisted before Flink sees it (write-ahead), then
// the operation is started; with one, its outcome is asked for (pkg/flink's tracker sends a
// trigger the JobManager forgot again under the same id). Once there is an outcome the record is
// cleared. started says this call sent a new trigger.
func trackOperation(ctx context.Context, cl *flink.Client, op *flink.Operation, trigger operationTrigger,
	kind flinkv1beta1.SnapshotTriggerType, persist func(context.Context) error) (progress flink.Progress, started bool, err error) {
	if *trigger.ID != "" {
		op.TriggerID = *trigger.ID
		progress = cl.Advance(ctx, *op)
	} else {
		now := time.Now().UnixMilli()
		*trigger.ID, *trigger.Type, *trigger.Timestamp = flink.NewTriggerID(), kind, &now
		if err := persist(ctx); err != nil {
			return flink.Progress{}, false, err
		}
		op.TriggerID, started = *trigger.ID, true
		progress = cl.Start(ctx, *op)
	}
	if progress.Outcome == flink.OutcomePending {
		reconciler.LogUnknownOutcome(ctx, *op, progress)
	} else {
		*trigger.ID, *trigger.Type, *trigger.Timestamp = "", "", nil
	}
	return progress, started, nil
}

// UpgradeSavepointInFlight says a stop-with-savepoint of an upgrade (or deletion) was
// triggered and its outcome is not recorded yet.
func UpgradeSavepointInFlight(st *flinkv1beta1.CommonStatus) bool {
	info := st.JobStatus.SavepointInfo
	return info != nil && info.TriggerID != "" && info.TriggerType == flinkv1beta1.SnapshotTriggerUpgrade
}

// SetJobState records a new job state; updateTime is the time of the last state change
// (upstream's meaning), so an unchanged job costs no status write.
// staleAnswerWindow bounds how long after a recorded cancel a non-terminal answer from Flink
// is taken for a stale one: Flink's job details are cached for web.refresh-interval (3 s by
// default), so right after a cancel they may still say RUNNING. Past it the answer is believed
// (a JobManager that failed over during the cancel recovers the job, RUNNING again), and the
// stop cancels again instead of waiting for ever.
const staleAnswerWindow = 10 * time.Second

// CancellingVisible is how long a recorded cancel stays CANCELLING in status at least, whatever
// Flink answers meanwhile. Upstream looks at a cancelled job again only after the progress-check
// interval (10 s by default), so its CANCELLING lasts that long, and scripts poll for it once a
// second (upstream's test_sessionjob_operations.sh waits for it after a last-state upgrade of a
// session job). Flink cancels a small job in well under a second; recorded only that long, the
// state was missed by such a poll on a loaded machine. 5 s is two polls with room for a slow
// kubectl, and half of what upstream costs an upgrade.
const CancellingVisible = 5 * time.Second

// stateAge is how long js has recorded its current state (updateTime: a cancel, when
// CANCELLING), and whether that time is readable; a clock behind it makes the state new.
func stateAge(js *flinkv1beta1.JobStatus, now time.Time) (time.Duration, bool) {
	since, err := strconv.ParseInt(js.UpdateTime, 10, 64)
	if err != nil {
		return 0, false
	}
	return max(now.Sub(time.UnixMilli(since)), 0), true
}

// ObservedJobState is the state to record when Flink answers observed for a job recorded in
// js. A job being cancelled only ends: for CancellingVisible any answer leaves CANCELLING
// recorded, and within staleAnswerWindow a non-terminal one does.
func ObservedJobState(js *flinkv1beta1.JobStatus, observed flinkv1beta1.JobStatusState, now time.Time) flinkv1beta1.JobStatusState {
	if js.State != flinkv1beta1.JobStatusCancelling {
		return observed
	}
	age, known := stateAge(js, now)
	if known && (age < CancellingVisible || (!reconciler.IsTerminal(observed) && age <= staleAnswerWindow)) {
		return js.State
	}
	return observed
}

func SetJobState(js *flinkv1beta1.JobStatus, state flinkv1beta1.JobStatusState) {
	if state == js.State {
		return
	}
	js.State = state
	js.UpdateTime = fmt.Sprint(time.Now().UnixMilli())
}
