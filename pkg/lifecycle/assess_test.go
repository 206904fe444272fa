package lifecycle

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// TestAssess is the specification of Progressing (= Reconciling) and Degraded for the job
// kinds: one row per case, with both columns' reasons. A row's message must name what a person
// can do where the reason is one a person must act on.
func TestAssess(t *testing.T) {
	stable := flinkv1beta1.ReconciliationStatus{LastReconciledSpec: "A", LastStableSpec: "A", State: flinkv1beta1.ReconciliationDeployed}
	deployed := flinkv1beta1.ReconciliationStatus{LastReconciledSpec: "B", LastStableSpec: "A", State: flinkv1beta1.ReconciliationDeployed}
	upgrading := flinkv1beta1.ReconciliationStatus{LastReconciledSpec: "B", LastStableSpec: "A", State: flinkv1beta1.ReconciliationUpgrading}
	running := flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusRunning}
	job := func(state flinkv1beta1.JobStatusState) flinkv1beta1.JobStatus {
		return flinkv1beta1.JobStatus{State: state}
	}
	upgradeSavepoint := flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusRunning, SavepointInfo: &flinkv1beta1.SavepointInfo{
		TriggerID: "7f1c", TriggerType: flinkv1beta1.SnapshotTriggerUpgrade}}
	manualSavepoint := flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusRunning, SavepointInfo: &flinkv1beta1.SavepointInfo{
		TriggerID: "7f1c", TriggerType: flinkv1beta1.SnapshotTriggerManual}}
	statusErr := func(r flinkv1beta1.StatusErrorReason, msg string) string {
		return flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionReconciliation, r, msg)
	}
	ready := flinkv1beta1.JobManagerReady

	tests := []struct {
		name        string
		s           flinkv1beta1.CommonStatus
		jm          flinkv1beta1.JobManagerDeploymentStatus
		target      flinkv1beta1.JobState
		rescale     *flinkv1beta1.Rescale
		progressing Reason // "" reads as not progressing, see settled below
		settled     Reason // Progressing False with this reason
		degraded    Reason // Degraded True with this reason; "" is Healthy
		message     string // a part of the message a person acts on (Degraded's if degraded, else Progressing's)
	}{
		{name: "running and stable", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: running, LifecycleState: flinkv1beta1.LifecycleStable},
			jm: ready, settled: ReasonSettled},
		{name: "deleting", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: running, LifecycleState: flinkv1beta1.LifecycleDeleting},
			jm: ready, progressing: ReasonDeleting},
		{name: "first deployment: JobManager starting", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, LifecycleState: flinkv1beta1.LifecycleDeployed},
			jm: flinkv1beta1.JobManagerDeploying, progressing: ReasonDeploying, message: "DEPLOYING"},
		{name: "JobManager deployed, not ready", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, LifecycleState: flinkv1beta1.LifecycleDeployed},
			jm: flinkv1beta1.JobManagerDeployedNotReady, progressing: ReasonDeploying},
		{name: "job being scheduled", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: job(flinkv1beta1.JobStatusInitializing), LifecycleState: flinkv1beta1.LifecycleDeployed},
			jm: ready, progressing: ReasonJobStarting},
		{name: "upgrading", s: flinkv1beta1.CommonStatus{ReconciliationStatus: upgrading, JobStatus: running, LifecycleState: flinkv1beta1.LifecycleUpgrading},
			jm: ready, target: flinkv1beta1.JobStateRunning, progressing: ReasonUpgrading},
		{name: "upgrading, the stop's savepoint in flight", s: flinkv1beta1.CommonStatus{ReconciliationStatus: upgrading, JobStatus: upgradeSavepoint, LifecycleState: flinkv1beta1.LifecycleUpgrading},
			jm: ready, target: flinkv1beta1.JobStateRunning, progressing: ReasonSavepointing, message: "trigger 7f1c"},
		{name: "a manual savepoint is not an action on the resource", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: manualSavepoint, LifecycleState: flinkv1beta1.LifecycleStable},
			jm: ready, settled: ReasonSettled},
		{name: "rescaling in place: from which to which parallelism", s: flinkv1beta1.CommonStatus{ReconciliationStatus: deployed, JobStatus: running,
			LifecycleState: flinkv1beta1.LifecycleDeployed}, rescale: &flinkv1beta1.Rescale{From: "a:2,b:2", To: "a:4,b:1", Reported: "a:3,b:1"},
			jm: ready, progressing: ReasonScaling, message: "from a:2,b:2 to a:4,b:1 (vertex:parallelism); Flink reports a:3,b:1 so far"},
		{name: "a rescale Flink did not carry out in time", s: flinkv1beta1.CommonStatus{ReconciliationStatus: deployed, JobStatus: running,
			LifecycleState: flinkv1beta1.LifecycleDeployed}, rescale: &flinkv1beta1.Rescale{From: "a:2", To: "a:4", Reported: "a:2", TimedOut: true},
			jm: ready, settled: ReasonSettled, degraded: ReasonScaleTimedOut, message: "asked for a:4, Flink reports a:2. The adaptive scheduler"},
		{name: "Flink restarts the job's tasks to rescale it: not a failure", s: flinkv1beta1.CommonStatus{ReconciliationStatus: deployed,
			JobStatus: job(flinkv1beta1.JobStatusRestarting), LifecycleState: flinkv1beta1.LifecycleDeployed}, rescale: &flinkv1beta1.Rescale{From: "a:2", To: "a:4"},
			jm: ready, progressing: ReasonScaling, message: "to a:4"},
		{name: "and schedules it again: still the rescale", s: flinkv1beta1.CommonStatus{ReconciliationStatus: deployed,
			JobStatus: job(flinkv1beta1.JobStatusCreated), LifecycleState: flinkv1beta1.LifecycleDeployed}, rescale: &flinkv1beta1.Rescale{From: "a:2", To: "a:4"},
			jm: ready, progressing: ReasonScaling, message: "to a:4"},
		{name: "a job failing during a rescale is Degraded", s: flinkv1beta1.CommonStatus{ReconciliationStatus: deployed,
			JobStatus: job(flinkv1beta1.JobStatusFailing), LifecycleState: flinkv1beta1.LifecycleDeployed}, rescale: &flinkv1beta1.Rescale{From: "a:2", To: "a:4"},
			jm: ready, progressing: ReasonScaling, degraded: ReasonJobRestarting},
		{name: "a JobManager lost during a rescale is deployed again first", s: flinkv1beta1.CommonStatus{ReconciliationStatus: deployed,
			LifecycleState: flinkv1beta1.LifecycleDeployed}, rescale: &flinkv1beta1.Rescale{From: "a:2", To: "a:4"},
			jm: flinkv1beta1.JobManagerDeploying, progressing: ReasonDeploying},
		{name: "an upgrade comes before a rescale left behind", s: flinkv1beta1.CommonStatus{ReconciliationStatus: upgrading, JobStatus: running,
			LifecycleState: flinkv1beta1.LifecycleUpgrading}, rescale: &flinkv1beta1.Rescale{To: "a:4"},
			jm: ready, target: flinkv1beta1.JobStateRunning, progressing: ReasonUpgrading},
		{name: "suspending", s: flinkv1beta1.CommonStatus{ReconciliationStatus: upgrading, JobStatus: upgradeSavepoint, LifecycleState: flinkv1beta1.LifecycleUpgrading},
			jm: ready, target: flinkv1beta1.JobStateSuspended, progressing: ReasonSuspending, message: "savepoint first"},
		{name: "suspended", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: job(flinkv1beta1.JobStatusSuspended), LifecycleState: flinkv1beta1.LifecycleSuspended},
			target: flinkv1beta1.JobStateSuspended, settled: ReasonSuspended, message: "set it to running"},
		{name: "rolling back", s: flinkv1beta1.CommonStatus{ReconciliationStatus: flinkv1beta1.ReconciliationStatus{LastReconciledSpec: "B", LastStableSpec: "A",
			State: flinkv1beta1.ReconciliationRollingBack}, LifecycleState: flinkv1beta1.LifecycleRollingBack},
			jm: flinkv1beta1.JobManagerDeploying, progressing: ReasonRollingBack, message: "readiness.timeout"},
		{name: "rolled back", s: flinkv1beta1.CommonStatus{ReconciliationStatus: flinkv1beta1.ReconciliationStatus{LastReconciledSpec: "B", LastStableSpec: "A",
			State: flinkv1beta1.ReconciliationRolledBack}, JobStatus: running, LifecycleState: flinkv1beta1.LifecycleRolledBack},
			jm: ready, settled: ReasonRolledBack, degraded: ReasonRolledBack, message: "change the spec"},
		{name: "job failed", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: job(flinkv1beta1.JobStatusFailed), LifecycleState: flinkv1beta1.LifecycleFailed},
			jm: ready, settled: ReasonWaitingForUser, degraded: ReasonJobFailed, message: "restartNonce"},
		{name: "job restarting", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: job(flinkv1beta1.JobStatusRestarting), LifecycleState: flinkv1beta1.LifecycleStable},
			jm: ready, settled: ReasonSettled, degraded: ReasonJobRestarting, message: "JobException events"},
		{name: "job failing", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: job(flinkv1beta1.JobStatusFailing), LifecycleState: flinkv1beta1.LifecycleStable},
			jm: ready, settled: ReasonSettled, degraded: ReasonJobRestarting},
		{name: "JobManager cannot start", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, LifecycleState: flinkv1beta1.LifecycleDeployed,
			Error: statusErr(flinkv1beta1.ErrorReasonDeploymentFailed, "back-off pulling image flink:nope")},
			jm: flinkv1beta1.JobManagerError, settled: ReasonWaitingForUser, degraded: ReasonDeploymentFailed, message: "flink:nope"},
		{name: "invalid spec, the last valid one runs", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: running, LifecycleState: flinkv1beta1.LifecycleStable,
			Error: statusErr(flinkv1beta1.ErrorReasonInvalidSpec, "spec.job.parallelism: must be positive")},
			jm: ready, settled: ReasonWaitingForUser, degraded: "InvalidSpec", message: "fix the spec"},
		{name: "an invalid change during an upgrade: the upgrade goes on, the person is told", s: flinkv1beta1.CommonStatus{ReconciliationStatus: upgrading, JobStatus: running,
			LifecycleState: flinkv1beta1.LifecycleUpgrading, Error: statusErr(flinkv1beta1.ErrorReasonInvalidSpec, "spec.job.parallelism: must be positive")},
			jm: ready, target: flinkv1beta1.JobStateRunning, progressing: ReasonUpgrading, degraded: "InvalidSpec", message: "fix the spec"},
		{name: "manual restore required", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, LifecycleState: flinkv1beta1.LifecycleFailed,
			Error: statusErr(flinkv1beta1.ErrorReasonManualRestoreRequired, "HA metadata not available")},
			jm: flinkv1beta1.JobManagerMissing, settled: ReasonWaitingForUser, degraded: "ManualRestoreRequired", message: "initialSavepointPath"},
		{name: "session job lost", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, LifecycleState: flinkv1beta1.LifecycleStable,
			Error: statusErr(flinkv1beta1.ErrorReasonJobNotFound, "job 1234 not found")},
			settled: ReasonWaitingForUser, degraded: "JobNotFound", message: "change the spec"},
		{name: "foreign object in the way", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, LifecycleState: flinkv1beta1.LifecycleDeployed,
			Error: statusErr(flinkv1beta1.ErrorReasonForeignObject, "Service x belongs to someone else")},
			jm: flinkv1beta1.JobManagerMissing, settled: ReasonWaitingForUser, degraded: "ForeignObject", message: "delete or rename"},
		{name: "upgrade step failed, retried", s: flinkv1beta1.CommonStatus{ReconciliationStatus: upgrading, JobStatus: running, LifecycleState: flinkv1beta1.LifecycleUpgrading,
			Error: statusErr(flinkv1beta1.ErrorReasonUpgradeFailed, "stop with savepoint timed out")},
			jm: ready, target: flinkv1beta1.JobStateRunning, progressing: ReasonUpgrading, degraded: "UpgradeFailed", message: "timed out"},
		{name: "lost JobManager being recovered", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: running, LifecycleState: flinkv1beta1.LifecycleStable,
			Error: statusErr(flinkv1beta1.ErrorReasonMissingJobManager, "Missing JobManager deployment")},
			jm: flinkv1beta1.JobManagerMissing, settled: ReasonSettled, degraded: "MissingJobManager"},
		{name: "failed savepoint", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: running, LifecycleState: flinkv1beta1.LifecycleStable,
			Error: statusErr(flinkv1beta1.ErrorReasonSnapshotFailed, "Savepoint failed: disk full")},
			jm: ready, settled: ReasonSettled, degraded: "SnapshotFailed", message: "disk full"},
		{name: "unhealthy job restarted", s: flinkv1beta1.CommonStatus{ReconciliationStatus: upgrading, JobStatus: running, LifecycleState: flinkv1beta1.LifecycleUpgrading,
			Error: statusErr(flinkv1beta1.ErrorReasonUnhealthyJob, "too many restarts")},
			jm: ready, target: flinkv1beta1.JobStateRunning, progressing: ReasonUpgrading, degraded: "UnhealthyJob"},
		{name: "an error the Apache operator wrote is mapped by its exception type", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: running, LifecycleState: flinkv1beta1.LifecycleStable,
			Error: `{"type":"org.apache.flink.kubernetes.operator.exception.ReconciliationException","message":"something"}`},
			jm: ready, settled: ReasonSettled, degraded: "ReconcileFailed", message: "something"},
		{name: "an error of a reason this version does not know (a newer operator wrote it)", s: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: running,
			LifecycleState: flinkv1beta1.LifecycleStable, Error: statusErr("SomethingNew", "something")},
			jm: ready, settled: ReasonSettled, degraded: ReasonError, message: "something"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := assess(input{s: &tt.s, jm: tt.jm, withJob: true, target: tt.target, rescale: tt.rescale})
			if tt.progressing != "" {
				assert.True(t, v.progressing, "progressing")
				assert.Equal(t, tt.progressing, v.progressingReason)
			} else {
				assert.False(t, v.progressing, "progressing: %s", v.progressingReason)
				assert.Equal(t, tt.settled, v.progressingReason)
			}
			if tt.degraded != "" {
				assert.True(t, v.degraded, "degraded")
				assert.Equal(t, tt.degraded, v.degradedReason)
			} else {
				assert.False(t, v.degraded, "degraded: %s %s", v.degradedReason, v.degradedMessage)
				assert.Equal(t, ReasonHealthy, v.degradedReason)
			}
			msg := v.progressingMessage
			if v.degraded {
				msg = v.degradedMessage
			}
			assert.Contains(t, msg, tt.message)

			// Progressing and Reconciling are one decision: never apart.
			conds := progress(input{s: &tt.s, jm: tt.jm, withJob: true, target: tt.target, rescale: tt.rescale}, 7)
			p, r := meta.FindStatusCondition(conds, ConditionProgressing), meta.FindStatusCondition(conds, ConditionReconciling)
			require.NotNil(t, p)
			require.NotNil(t, r)
			assert.Equal(t, p.Status, r.Status)
			assert.Equal(t, p.Reason, r.Reason)
			assert.Equal(t, p.Message, r.Message)
			// With nothing in flight, Stalled is true exactly when nothing is done until a person acts.
			st := meta.FindStatusCondition(conds, ConditionStalled)
			require.NotNil(t, st)
			if !v.progressing {
				assert.Equal(t, st.Status == metav1.ConditionTrue, v.progressingReason == ReasonWaitingForUser,
					"Stalled %s, Progressing %s", st.Reason, v.progressingReason)
			}
			for _, c := range conds {
				assert.Equal(t, int64(7), c.ObservedGeneration, c.Type)
				assert.NotEmpty(t, c.Reason, c.Type)
				assert.NotEmpty(t, c.Message, c.Type)
			}
		})
	}
}

// TestEveryErrorReasonIsADegradedReason: a new typed reason of status.error must be given a
// Degraded reason, rather than falling back to the untyped one.
func TestEveryErrorReasonIsADegradedReason(t *testing.T) {
	for _, r := range []flinkv1beta1.StatusErrorReason{
		flinkv1beta1.ErrorReasonInvalidSpec, flinkv1beta1.ErrorReasonManualRestoreRequired, flinkv1beta1.ErrorReasonUpgradeFailed,
		flinkv1beta1.ErrorReasonDeploymentFailed, flinkv1beta1.ErrorReasonMissingJobManager, flinkv1beta1.ErrorReasonRollbackFailed,
		flinkv1beta1.ErrorReasonUnhealthyJob, flinkv1beta1.ErrorReasonSnapshotFailed, flinkv1beta1.ErrorReasonJobSubmissionFailed,
		flinkv1beta1.ErrorReasonJobNotFound, flinkv1beta1.ErrorReasonArtifactFailed, flinkv1beta1.ErrorReasonForeignObject,
		flinkv1beta1.ErrorReasonReconcileFailed,
	} {
		assert.Equal(t, Reason(r), errorReasons[r], "status.error reason %s", r)
	}
}

// TestReadyExplainsItself: a resource that is not Ready says why, from what is wrong first,
// then what is being done, and a generation not reconciled yet says so.
func TestReadyExplainsItself(t *testing.T) {
	s := &flinkv1beta1.FlinkDeploymentStatus{JobManagerDeploymentStatus: flinkv1beta1.JobManagerReady, CommonStatus: flinkv1beta1.CommonStatus{
		JobStatus: flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusRunning}, LifecycleState: flinkv1beta1.LifecycleStable, ObservedGeneration: 4}}
	ready := func(generation int64) metav1.Condition {
		return *meta.FindStatusCondition(Conditions(s, true, generation, flinkv1beta1.JobStateRunning), ConditionReady)
	}
	assert.Equal(t, metav1.ConditionTrue, ready(4).Status)
	assert.Equal(t, "Lifecycle state STABLE", ready(4).Message)
	assert.Equal(t, "Lifecycle state STABLE: generation 5 is not reconciled yet (observed 4)", ready(5).Message)

	s.JobStatus.State = flinkv1beta1.JobStatusRestarting
	assert.Equal(t, metav1.ConditionFalse, ready(4).Status)
	assert.Contains(t, ready(4).Message, "Flink is restarting the job after a failure")

	s.JobStatus.State, s.LifecycleState = flinkv1beta1.JobStatusSuspended, flinkv1beta1.LifecycleSuspended
	assert.Equal(t, "Suspended", ready(4).Reason)
	assert.Contains(t, ready(4).Message, "set it to running to resume")

	s.JobStatus.State, s.LifecycleState, s.JobManagerDeploymentStatus = flinkv1beta1.JobStatusReconciling, flinkv1beta1.LifecycleDeployed, flinkv1beta1.JobManagerDeploying
	assert.Contains(t, ready(4).Message, "The JobManager is starting")

	s.JobStatus.State, s.LifecycleState, s.JobManagerDeploymentStatus = flinkv1beta1.JobStatusFinished, flinkv1beta1.LifecycleStable, flinkv1beta1.JobManagerReady
	assert.Equal(t, "Lifecycle state STABLE: Job status FINISHED", ready(4).Message, "a finished batch job")
}

// TestSessionJobConditions: a session job has the same Progressing, Degraded, Reconciling and
// Stalled as a deployment, without a JobManager of its own.
func TestSessionJobConditions(t *testing.T) {
	s := &flinkv1beta1.CommonStatus{ReconciliationStatus: flinkv1beta1.ReconciliationStatus{LastReconciledSpec: "B", LastStableSpec: "A",
		State: flinkv1beta1.ReconciliationUpgrading}, JobStatus: flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusRunning},
		LifecycleState: flinkv1beta1.LifecycleUpgrading, ObservedGeneration: 2}
	conds := SessionJobConditions(s, 2, flinkv1beta1.JobStateSuspended)
	var types []string
	for _, c := range conds {
		types = append(types, c.Type)
	}
	assert.Equal(t, []string{"Running", "Ready", "Reconciling", "Progressing", "Stalled", "Degraded"}, types)
	assert.Equal(t, string(ReasonSuspending), meta.FindStatusCondition(conds, ConditionProgressing).Reason)
	assert.True(t, meta.IsStatusConditionTrue(conds, ConditionReconciling))
	assert.True(t, meta.IsStatusConditionFalse(conds, ConditionDegraded))
}

func TestSnapshotConditions(t *testing.T) {
	savepoint := flinkv1beta1.FlinkStateSnapshotSpec{Savepoint: &flinkv1beta1.SavepointSpec{}}
	checkpoint := flinkv1beta1.FlinkStateSnapshotSpec{Checkpoint: &flinkv1beta1.CheckpointSpec{}}
	tests := []struct {
		spec                            flinkv1beta1.FlinkStateSnapshotSpec
		status                          flinkv1beta1.FlinkStateSnapshotStatus
		ready                           metav1.ConditionStatus
		readyReason                     string
		progressing, progressingReason  string
		degraded                        metav1.ConditionStatus
		degradedReason, degradedMessage string
	}{
		{spec: savepoint, ready: "False", readyReason: "TriggerPending", progressing: "True", progressingReason: "Savepointing",
			degraded: "False", degradedReason: "Healthy"},
		{spec: checkpoint, status: flinkv1beta1.FlinkStateSnapshotStatus{State: flinkv1beta1.SnapshotInProgress, TriggerID: "ab12"},
			ready: "False", readyReason: "InProgress", progressing: "True", progressingReason: "Checkpointing", degraded: "False", degradedReason: "Healthy"},
		{spec: savepoint, status: flinkv1beta1.FlinkStateSnapshotStatus{State: flinkv1beta1.SnapshotTriggerPending, Failures: 2, Error: "disk full"},
			ready: "False", readyReason: "TriggerPending", progressing: "True", progressingReason: "Savepointing",
			degraded: "True", degradedReason: "SnapshotRetrying", degradedMessage: "Savepoint attempt 2 failed, retried after a back-off: disk full"},
		{spec: savepoint, status: flinkv1beta1.FlinkStateSnapshotStatus{State: flinkv1beta1.SnapshotCompleted, Path: "s3://b/sp-1", Failures: 1},
			ready: "True", readyReason: "Completed", progressing: "False", progressingReason: "Done", degraded: "False", degradedReason: "Healthy"},
		{spec: savepoint, status: flinkv1beta1.FlinkStateSnapshotStatus{State: flinkv1beta1.SnapshotFailed, Failures: 3, Error: "disk full"},
			ready: "False", readyReason: "Failed", progressing: "False", progressingReason: "Done",
			degraded: "True", degradedReason: "SnapshotFailed", degradedMessage: "Savepoint failed 3 times, past spec.backoffLimit: disk full. Create a new FlinkStateSnapshot to try again"},
		{spec: savepoint, status: flinkv1beta1.FlinkStateSnapshotStatus{State: flinkv1beta1.SnapshotAbandoned, Error: "job not running"},
			ready: "False", readyReason: "Abandoned", progressing: "False", progressingReason: "Done", degraded: "True", degradedReason: "SnapshotAbandoned"},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%d-%s", i, tt.readyReason), func(t *testing.T) {
			snap := &flinkv1beta1.FlinkStateSnapshot{Spec: tt.spec, Status: tt.status}
			snap.Generation = 3
			conds := SnapshotConditions(snap)
			r, p, d := meta.FindStatusCondition(conds, "Ready"), meta.FindStatusCondition(conds, "Progressing"), meta.FindStatusCondition(conds, "Degraded")
			require.NotNil(t, r)
			require.NotNil(t, p)
			require.NotNil(t, d)
			assert.Equal(t, tt.ready, r.Status)
			assert.Equal(t, tt.readyReason, r.Reason)
			assert.Equal(t, metav1.ConditionStatus(tt.progressing), p.Status)
			assert.Equal(t, tt.progressingReason, p.Reason)
			assert.Equal(t, tt.degraded, d.Status)
			assert.Equal(t, tt.degradedReason, d.Reason)
			if tt.degradedMessage != "" {
				assert.Equal(t, tt.degradedMessage, d.Message)
			}
			for _, c := range conds {
				assert.Equal(t, int64(3), c.ObservedGeneration, c.Type)
			}
		})
	}
}

func TestBlueGreenDegraded(t *testing.T) {
	child := &flinkv1beta1.FlinkDeployment{}
	child.Name = "bg-blue"
	assert.Equal(t, metav1.Condition{Type: "Degraded", Status: "False", Reason: "Healthy", Message: "Nothing wrong observed", ObservedGeneration: 2},
		BlueGreenDegraded(false, "", child, 2))
	assert.Equal(t, "Healthy", BlueGreenDegraded(false, "", nil, 2).Reason)

	c := BlueGreenDegraded(true, "spec.template: invalid", nil, 2)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, "InvalidSpec", c.Reason)
	assert.Contains(t, c.Message, "spec.template: invalid: fix the spec")

	c = BlueGreenDegraded(false, "Aborting deployment 'bg-green'", child, 2)
	assert.Equal(t, "SwitchFailed", c.Reason)
	assert.Contains(t, c.Message, "a spec change is")

	child.Status.Conditions = []metav1.Condition{{Type: "Degraded", Status: "True", Reason: "JobRestarting", Message: "Flink is restarting the job"}}
	c = BlueGreenDegraded(false, "", child, 2)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, "ChildDegraded", c.Reason)
	assert.Equal(t, "The active FlinkDeployment bg-blue is Degraded (JobRestarting): Flink is restarting the job", c.Message)
}

// TestBlueGreenProgressing is the specification of a FlinkBlueGreenDeployment's Progressing
// condition (BlueGreenProgressing), and of the operations its transitions record.
func TestBlueGreenProgressing(t *testing.T) {
	child := func(name, restore string, progressing *metav1.Condition) *flinkv1beta1.FlinkDeployment {
		d := &flinkv1beta1.FlinkDeployment{Spec: flinkv1beta1.FlinkDeploymentSpec{Job: &flinkv1beta1.JobSpec{InitialSavepointPath: restore}}}
		d.Name = name
		if progressing != nil {
			d.Status.Conditions = []metav1.Condition{*progressing}
		}
		return d
	}
	blue, green := child("bg-blue", "", nil), child("bg-green", "file:/sp/savepoint-1", nil)
	suspending := child("bg-blue", "", &metav1.Condition{Type: ConditionProgressing, Status: metav1.ConditionTrue, Reason: string(ReasonSuspending), Message: "Suspending the job"})
	tests := []struct {
		name    string
		v       BlueGreenView
		status  metav1.ConditionStatus
		reason  Reason
		message string
	}{
		{"first child", BlueGreenView{State: flinkv1beta1.BlueGreenTransitioningToBlue, Target: blue, AbortAt: "2026-12-06T12:10:00Z"},
			metav1.ConditionTrue, ReasonDeploying, "Deploying the first child bg-blue; it becomes active once its job runs; it is aborted at 2026-12-06T12:10:00Z"},
		{"a switch's savepoint", BlueGreenView{State: flinkv1beta1.BlueGreenSavepointingBlue, Active: blue, Savepoint: "bg-blue-sp-2"},
			metav1.ConditionTrue, ReasonSavepointing, "Taking a savepoint of bg-blue (FlinkStateSnapshot bg-blue-sp-2)"},
		{"a switch", BlueGreenView{State: flinkv1beta1.BlueGreenTransitioningToGreen, Active: blue, Target: green},
			metav1.ConditionTrue, ReasonSwitching, "Starting bg-green from file:/sp/savepoint-1 to replace bg-blue"},
		{"a switch goes on whatever an earlier one's error says", BlueGreenView{State: flinkv1beta1.BlueGreenTransitioningToGreen, Active: blue, Target: green, Error: "Aborting"},
			metav1.ConditionTrue, ReasonSwitching, "to replace bg-blue"},
		{"an aborted switch waits for a spec change", BlueGreenView{State: flinkv1beta1.BlueGreenActiveBlue, Active: blue, Error: "Aborting deployment 'bg-green'"},
			metav1.ConditionFalse, ReasonWaitingForUser, "until the spec changes: Aborting deployment 'bg-green'"},
		{"the active child suspending", BlueGreenView{State: flinkv1beta1.BlueGreenActiveBlue, Active: suspending, Suspended: true},
			metav1.ConditionTrue, ReasonSuspending, "The active FlinkDeployment bg-blue is Suspending: Suspending the job"},
		{"suspended", BlueGreenView{State: flinkv1beta1.BlueGreenActiveBlue, Active: blue, Suspended: true}, metav1.ConditionFalse, ReasonSuspended, "set it to running"},
		{"asked to run, the active child not resuming yet", BlueGreenView{State: flinkv1beta1.BlueGreenActiveBlue, Active: child("bg-blue", "",
			&metav1.Condition{Type: ConditionProgressing, Status: metav1.ConditionFalse, Reason: string(ReasonSuspended)})},
			metav1.ConditionFalse, ReasonSuspended, "bg-blue is still suspended"},
		{"created suspended", BlueGreenView{State: flinkv1beta1.BlueGreenInitializingBlue, Suspended: true}, metav1.ConditionFalse, ReasonSuspended, "set it to running"},
		{"at rest", BlueGreenView{State: flinkv1beta1.BlueGreenActiveGreen, Active: green}, metav1.ConditionFalse, ReasonSettled, "No switch in progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := BlueGreenProgressing(tt.v, 4)
			assert.Equal(t, ConditionProgressing, c.Type)
			assert.Equal(t, tt.status, c.Status)
			assert.Equal(t, string(tt.reason), c.Reason)
			assert.Contains(t, c.Message, tt.message)
			assert.Equal(t, int64(4), c.ObservedGeneration)
		})
	}

	// The history of a switch that was aborted, then of one that succeeded.
	var ops []flinkv1beta1.Operation
	var before *metav1.Condition
	now := metav1.NewTime(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	for _, s := range []struct {
		v          BlueGreenView
		generation int64
	}{
		{BlueGreenView{State: flinkv1beta1.BlueGreenTransitioningToBlue, Target: blue}, 1},
		{BlueGreenView{State: flinkv1beta1.BlueGreenActiveBlue, Active: blue}, 1},
		{BlueGreenView{State: flinkv1beta1.BlueGreenSavepointingBlue, Active: blue}, 2},
		{BlueGreenView{State: flinkv1beta1.BlueGreenTransitioningToGreen, Active: blue, Target: green}, 2},
		{BlueGreenView{State: flinkv1beta1.BlueGreenActiveBlue, Active: blue, Error: "Aborting deployment 'bg-green'"}, 2},
		{BlueGreenView{State: flinkv1beta1.BlueGreenTransitioningToGreen, Active: blue, Target: green}, 3},
		{BlueGreenView{State: flinkv1beta1.BlueGreenActiveGreen, Active: green}, 3},
	} {
		after := BlueGreenProgressing(s.v, s.generation)
		degraded := BlueGreenDegraded(false, s.v.Error, s.v.Active, s.generation)
		ops = RecordOperations(ops, BlueGreenStep(s.v, before, after, degraded, s.generation, now))
		before = &after
	}
	var got []string
	for _, op := range ops {
		got = append(got, fmt.Sprintf("%s %s %d %s", op.Type, op.Outcome, op.Generation, op.Snapshot))
	}
	assert.Equal(t, []string{"Deploy Succeeded 1 ", "Upgrade Failed 2 file:/sp/savepoint-1", "Upgrade Succeeded 3 file:/sp/savepoint-1"}, got)
	assert.Contains(t, ops[1].Message, "Aborting deployment 'bg-green': the same spec is not tried again", "an abort says why, as Degraded does")
}
