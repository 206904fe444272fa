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

func TestSessionJobPlanRestore(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name     string
		job      replacedJob
		want     restoreDecision
		wantPath string
	}{
		{"stateless starts over", replacedJob{Mode: flinkv1beta1.UpgradeModeStateless, JobID: id, Job: flinkv1beta1.JobStatusCanceled, RestorePath: "file:/chk-7"}, restoreNow, ""},
		{"the user's savepoint, whatever the mode", replacedJob{Mode: flinkv1beta1.UpgradeModeStateless, UsersPath: true, JobID: id, Job: flinkv1beta1.JobStatusCanceled, RestorePath: "file:/backup"}, restoreNow, "file:/backup"},
		{"recorded state", replacedJob{Mode: flinkv1beta1.UpgradeModeSavepoint, JobID: id, Job: flinkv1beta1.JobStatusFinished, RestorePath: "file:/sp-1"}, restoreNow, "file:/sp-1"},
		{"resumed stateless suspension", replacedJob{Mode: flinkv1beta1.UpgradeModeSavepoint, Job: flinkv1beta1.JobStatusCanceled}, restoreNow, ""},
		{"a submission Flink never saw", replacedJob{Mode: flinkv1beta1.UpgradeModeLastState, JobID: id, Job: flinkv1beta1.JobStatusReconciling}, restoreNow, ""},
		{"ended, latest state not read yet", replacedJob{Mode: flinkv1beta1.UpgradeModeLastState, JobID: id, Job: flinkv1beta1.JobStatusFailed}, restoreReadLatest, ""},
		{"ended with no state at all", replacedJob{Mode: flinkv1beta1.UpgradeModeSavepoint, JobID: id, Job: flinkv1beta1.JobStatusFailed, LatestKnown: true}, restoreRefused, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, path := planRestore(tt.job)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantPath, path)
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
