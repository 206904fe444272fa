package flinksessionjob

import (
	"testing"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
)

func TestSessionJobPlanSpecChange(t *testing.T) {
	job := func(mode flinkv1beta1.UpgradeMode, state flinkv1beta1.JobState, nonce *int64, initial string) *flinkv1beta1.JobSpec {
		return &flinkv1beta1.JobSpec{UpgradeMode: mode, State: state, SavepointRedeployNonce: nonce, InitialSavepointPath: initial}
	}
	const (
		running   = flinkv1beta1.JobStateRunning
		suspended = flinkv1beta1.JobStateSuspended
		sp        = flinkv1beta1.UpgradeModeSavepoint
		ls        = flinkv1beta1.UpgradeModeLastState
		stateless = flinkv1beta1.UpgradeModeStateless
	)
	tests := []struct {
		name   string
		change specChange
		want   specChangePlan
	}{
		{"running savepoint job: the stop records its state afresh",
			specChange{Deployed: job(sp, running, nil, ""), Desired: job(sp, running, nil, ""), Job: flinkv1beta1.JobStatusRunning, RestorePath: "file:/old"},
			specChangePlan{Action: specChangeUpgrade, RestorePath: ""}},
		{"failed job with its latest checkpoint recorded",
			specChange{Deployed: job(ls, running, nil, ""), Desired: job(ls, running, nil, ""), Job: flinkv1beta1.JobStatusFailed, RestorePath: "file:/chk-7"},
			specChangePlan{Action: specChangeUpgrade, RestorePath: "file:/chk-7"}},
		{"failed job with no state known: manual restore",
			specChange{Deployed: job(sp, running, nil, ""), Desired: job(sp, running, nil, ""), Job: flinkv1beta1.JobStatusFailed},
			specChangePlan{Action: specChangeManualRestore}},
		{"suspending a finished job with no state known: manual restore",
			specChange{Deployed: job(sp, running, nil, ""), Desired: job(sp, suspended, nil, ""), Job: flinkv1beta1.JobStatusFinished},
			specChangePlan{Action: specChangeManualRestore}},
		{"lost job: wait for the user",
			specChange{Deployed: job(sp, running, nil, ""), Desired: job(sp, running, nil, ""), Job: flinkv1beta1.JobStatusReconciling, RestorePath: "file:/stale", Lost: true},
			specChangePlan{Action: specChangeWait}},
		{"lost job, savepoint redeploy: the user's savepoint",
			specChange{Deployed: job(sp, running, nil, ""), Desired: job(sp, running, fixtures.Ptr[int64](1), "file:/backup"), Job: flinkv1beta1.JobStatusReconciling, RestorePath: "file:/stale", Lost: true},
			specChangePlan{Action: specChangeUpgrade, RestorePath: "file:/backup", Answered: true}},
		{"lost job, made stateless: starts over",
			specChange{Deployed: job(sp, running, nil, ""), Desired: job(stateless, running, nil, ""), Job: flinkv1beta1.JobStatusReconciling, RestorePath: "file:/stale", Lost: true},
			specChangePlan{Action: specChangeUpgrade, RestorePath: "", Answered: true}},
		{"never seen running: what it was submitted with",
			specChange{Deployed: job(sp, running, nil, "file:/initial"), Desired: job(sp, running, nil, "file:/initial"), Job: flinkv1beta1.JobStatusReconciling, RestorePath: "file:/initial"},
			specChangePlan{Action: specChangeUpgrade, RestorePath: "file:/initial"}},
		{"resume: the state kept at the suspension",
			specChange{Deployed: job(sp, suspended, nil, ""), Desired: job(sp, running, nil, ""), Job: flinkv1beta1.JobStatusFinished, RestorePath: "file:/sp-1"},
			specChangePlan{Action: specChangeUpgrade, RestorePath: "file:/sp-1"}},
		{"resume after a stateless suspension: nothing was kept",
			specChange{Deployed: job(stateless, suspended, nil, ""), Desired: job(sp, running, nil, ""), Job: flinkv1beta1.JobStatusCanceled},
			specChangePlan{Action: specChangeUpgrade, RestorePath: ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planSpecChange(tt.change)
			got.Reason = ""
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestPlanUpgradeOfSessionJobs: a session job's upgrade takes the same decision table as a
// deployment's, in the situations a session job can be in (its session's JobManager reachable,
// no HA metadata of its own).
func TestPlanUpgradeOfSessionJobs(t *testing.T) {
	const (
		stateless = flinkv1beta1.UpgradeModeStateless
		savepoint = flinkv1beta1.UpgradeModeSavepoint
		lastState = flinkv1beta1.UpgradeModeLastState
		ready     = flinkv1beta1.JobManagerReady
	)
	tests := []struct {
		name string
		in   jobs.UpgradeSituation
		stop jobs.StopMode
		from jobs.RestoreMode
	}{
		{"running, savepoint", jobs.UpgradeSituation{Mode: savepoint, Job: flinkv1beta1.JobStatusRunning, JobManager: ready, SavepointDir: true}, jobs.StopSavepoint, jobs.RestoreSavepoint},
		{"running, last-state: cancel keeping the latest checkpoint", jobs.UpgradeSituation{Mode: lastState, Job: flinkv1beta1.JobStatusRunning, JobManager: ready}, jobs.StopCancel, jobs.RestoreSavepoint},
		{"running, stateless", jobs.UpgradeSituation{Mode: stateless, Job: flinkv1beta1.JobStatusRunning, JobManager: ready}, jobs.StopStateless, jobs.RestoreNothing},
		{"restarting, savepoint with fallback: cancel keeping the latest checkpoint", jobs.UpgradeSituation{Mode: savepoint, Job: "RESTARTING", JobManager: ready, LastStateFallback: true}, jobs.StopCancel, jobs.RestoreSavepoint},
		{"restarting, savepoint without fallback: wait", jobs.UpgradeSituation{Mode: savepoint, Job: "RESTARTING", JobManager: ready}, jobs.StopWait, ""},
		{"stateless, cancelled: starts over", jobs.UpgradeSituation{Mode: stateless, Job: flinkv1beta1.JobStatusCanceled, JobManager: ready}, jobs.StopNone, jobs.RestoreNothing},
		{"the user's savepoint, whatever the mode", jobs.UpgradeSituation{Mode: stateless, Job: flinkv1beta1.JobStatusCanceled, JobManager: ready, RestorePath: "file:/backup"}, jobs.StopNone, jobs.RestoreSavepoint},
		{"stopped with its state recorded", jobs.UpgradeSituation{Mode: savepoint, Job: flinkv1beta1.JobStatusFinished, JobManager: ready, RestorePath: "file:/sp-1"}, jobs.StopNone, jobs.RestoreSavepoint},
		{"resumed after a stateless suspension: nothing was kept", jobs.UpgradeSituation{Mode: savepoint, Job: flinkv1beta1.JobStatusCanceled, JobManager: ready, NothingRan: true}, jobs.StopNone, jobs.RestoreNothing},
		{"a submission Flink never saw: what it was submitted with", jobs.UpgradeSituation{Mode: lastState, Job: flinkv1beta1.JobStatusReconciling, JobManager: ready, NothingRan: true, RestorePath: "file:/initial"}, jobs.StopNone, jobs.RestoreSavepoint},
		{"ended with no state known: manual restore", jobs.UpgradeSituation{Mode: savepoint, Job: flinkv1beta1.JobStatusFailed, JobManager: ready}, jobs.StopFail, ""},
		{"cancelling: wait", jobs.UpgradeSituation{Mode: lastState, Job: flinkv1beta1.JobStatusCancelling, JobManager: ready}, jobs.StopWait, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := jobs.PlanUpgrade(tt.in)
			assert.Equal(t, tt.stop, got.Stop, got.Reason)
			assert.Equal(t, tt.from, got.Restore, got.Reason)
		})
	}
}

func TestSessionJobLostError(t *testing.T) {
	assert.True(t, JobLost(jobNotFoundError()))
	assert.True(t, JobLost("Job Not Found"), "upstream's bare error on an adopted resource")
	assert.Equal(t, "Job Not Found", flinkv1beta1.ErrorMessage(jobNotFoundError()))
	assert.False(t, JobLost(manualRestoreError()))
	assert.True(t, waitsForUser(manualRestoreError()))
	assert.Equal(t, flinkv1beta1.ErrorReasonManualRestoreRequired, flinkv1beta1.ErrorReason(manualRestoreError()))
}
