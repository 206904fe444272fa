package controllers

import (
	"testing"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
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
			specChange{Deployed: job(sp, running, nil, ""), Desired: job(sp, running, ptr[int64](1), "file:/backup"), Job: flinkv1beta1.JobStatusReconciling, RestorePath: "file:/stale", Lost: true},
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
		in   upgradeSituation
		stop stopMode
		from restoreMode
	}{
		{"running, savepoint", upgradeSituation{Mode: savepoint, Job: flinkv1beta1.JobStatusRunning, JobManager: ready, SavepointDir: true}, stopSavepoint, restoreSavepoint},
		{"running, last-state: cancel keeping the latest checkpoint", upgradeSituation{Mode: lastState, Job: flinkv1beta1.JobStatusRunning, JobManager: ready}, stopCancel, restoreSavepoint},
		{"running, stateless", upgradeSituation{Mode: stateless, Job: flinkv1beta1.JobStatusRunning, JobManager: ready}, stopStateless, restoreNothing},
		{"restarting, savepoint with fallback: cancel keeping the latest checkpoint", upgradeSituation{Mode: savepoint, Job: "RESTARTING", JobManager: ready, LastStateFallback: true}, stopCancel, restoreSavepoint},
		{"restarting, savepoint without fallback: wait", upgradeSituation{Mode: savepoint, Job: "RESTARTING", JobManager: ready}, stopWait, ""},
		{"stateless, cancelled: starts over", upgradeSituation{Mode: stateless, Job: flinkv1beta1.JobStatusCanceled, JobManager: ready}, stopNone, restoreNothing},
		{"the user's savepoint, whatever the mode", upgradeSituation{Mode: stateless, Job: flinkv1beta1.JobStatusCanceled, JobManager: ready, RestorePath: "file:/backup"}, stopNone, restoreSavepoint},
		{"stopped with its state recorded", upgradeSituation{Mode: savepoint, Job: flinkv1beta1.JobStatusFinished, JobManager: ready, RestorePath: "file:/sp-1"}, stopNone, restoreSavepoint},
		{"resumed after a stateless suspension: nothing was kept", upgradeSituation{Mode: savepoint, Job: flinkv1beta1.JobStatusCanceled, JobManager: ready, NothingRan: true}, stopNone, restoreNothing},
		{"a submission Flink never saw: what it was submitted with", upgradeSituation{Mode: lastState, Job: flinkv1beta1.JobStatusReconciling, JobManager: ready, NothingRan: true, RestorePath: "file:/initial"}, stopNone, restoreSavepoint},
		{"ended with no state known: manual restore", upgradeSituation{Mode: savepoint, Job: flinkv1beta1.JobStatusFailed, JobManager: ready}, stopFail, ""},
		{"cancelling: wait", upgradeSituation{Mode: lastState, Job: flinkv1beta1.JobStatusCancelling, JobManager: ready}, stopWait, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planUpgrade(tt.in)
			assert.Equal(t, tt.stop, got.Stop, got.Reason)
			assert.Equal(t, tt.from, got.Restore, got.Reason)
		})
	}
}

func TestSessionJobLostError(t *testing.T) {
	assert.True(t, jobLost(jobNotFoundError()))
	assert.True(t, jobLost("Job Not Found"), "upstream's bare error on an adopted resource")
	assert.Equal(t, "Job Not Found", flinkv1beta1.ErrorMessage(jobNotFoundError()))
	assert.False(t, jobLost(manualRestoreError()))
	assert.True(t, waitsForUser(manualRestoreError()))
	assert.Equal(t, flinkv1beta1.ErrorReasonManualRestoreRequired, flinkv1beta1.ErrorReason(manualRestoreError()))
}
