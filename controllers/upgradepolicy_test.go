package controllers

import (
	"testing"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// TestPlanUpgrade is the upgradeMode × job-state table of upstream's AbstractJobReconciler#getJobUpgrade, one row each.
func TestPlanUpgrade(t *testing.T) {
	const (
		stateless = flinkv1beta1.UpgradeModeStateless
		savepoint = flinkv1beta1.UpgradeModeSavepoint
		lastState = flinkv1beta1.UpgradeModeLastState

		running     = flinkv1beta1.JobStatusRunning
		failed      = flinkv1beta1.JobStatusFailed
		finished    = flinkv1beta1.JobStatusFinished
		canceled    = flinkv1beta1.JobStatusCanceled
		cancelling  = flinkv1beta1.JobStatusCancelling
		restarting  = flinkv1beta1.JobStatusState("RESTARTING")
		reconciling = flinkv1beta1.JobStatusReconciling

		ready   = flinkv1beta1.JobManagerReady
		missing = flinkv1beta1.JobManagerMissing
		errored = flinkv1beta1.JobManagerError
	)
	tests := []struct {
		name string
		in   upgradeSituation
		stop stopMode
		from restoreMode
	}{
		{"first deployment interrupted", upgradeSituation{Mode: savepoint, Job: reconciling, JobManager: missing, NothingRan: true}, stopNone, restoreNothing},
		{"first deployment from initialSavepointPath interrupted", upgradeSituation{Mode: lastState, Job: reconciling, JobManager: missing, NothingRan: true, RestorePath: "file:///sp/init"}, stopNone, restoreSavepoint},
		{"stateless, running", upgradeSituation{Mode: stateless, Job: running, JobManager: ready}, stopStateless, restoreNothing},
		{"stateless, failed", upgradeSituation{Mode: stateless, Job: failed, JobManager: ready}, stopNone, restoreNothing},
		{"stateless, JobManager missing", upgradeSituation{Mode: stateless, Job: reconciling, JobManager: missing}, stopNone, restoreNothing},
		{"stateless, savepoint redeploy of a running job", upgradeSituation{Mode: stateless, Job: running, JobManager: ready, RestorePath: "file:///sp/chosen"}, stopStateless, restoreSavepoint},
		{"last-state, HA, checkpoint too old: savepoint", upgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, SavepointDir: true, Checkpoint: checkpointTooOld}, stopSavepoint, restoreSavepoint},
		{"last-state, HA, checkpoint too old, one in progress: wait", upgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, SavepointDir: true, Checkpoint: checkpointPending}, stopWait, ""},
		{"last-state, HA, checkpoint fresh", upgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, SavepointDir: true}, stopLastState, restoreLastState},

		{"any, cancelling: wait", upgradeSituation{Mode: lastState, Job: cancelling, JobManager: ready, HAEnabled: true, HAMetadata: true}, stopWait, ""},

		{"savepoint, running", upgradeSituation{Mode: savepoint, Job: running, JobManager: ready, SavepointDir: true}, stopSavepoint, restoreSavepoint},
		{"savepoint, finished after stop-with-savepoint", upgradeSituation{Mode: savepoint, Job: finished, JobManager: ready, RestorePath: "file:///sp/1"}, stopNone, restoreSavepoint},
		{"savepoint, failed with a recorded checkpoint", upgradeSituation{Mode: savepoint, Job: failed, JobManager: ready, RestorePath: "file:///cp/7"}, stopNone, restoreSavepoint},
		{"savepoint, failed, nothing known: manual restore", upgradeSituation{Mode: savepoint, Job: failed, JobManager: ready}, stopFail, ""},
		{"savepoint, canceled, nothing known: manual restore", upgradeSituation{Mode: savepoint, Job: canceled, JobManager: missing, HAEnabled: true, HAMetadata: true}, stopFail, ""},
		{"savepoint, not running, fallback: HA", upgradeSituation{Mode: savepoint, Job: restarting, JobManager: ready, HAEnabled: true, HAMetadata: true, LastStateFallback: true}, stopLastState, restoreLastState},
		{"savepoint, not running, fallback, no HA: cancel", upgradeSituation{Mode: savepoint, Job: restarting, JobManager: ready, LastStateFallback: true}, stopCancel, restoreSavepoint},
		{"savepoint, not running, no fallback: wait", upgradeSituation{Mode: savepoint, Job: restarting, JobManager: ready, HAEnabled: true, HAMetadata: true}, stopWait, ""},
		{"savepoint, not running, no fallback, Flink version changed: as last-state", upgradeSituation{Mode: savepoint, Job: restarting, JobManager: ready, FlinkVersionChanged: true}, stopCancel, restoreSavepoint},

		{"last-state, running with HA", upgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true}, stopLastState, restoreLastState},
		{"last-state, running without HA: latest checkpoint", upgradeSituation{Mode: lastState, Job: running, JobManager: ready}, stopCancel, restoreSavepoint},
		{"last-state, running, job-cancel enabled", upgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, CancelForLastState: true}, stopCancel, restoreSavepoint},
		{"last-state, Flink version changed: savepoint", upgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, FlinkVersionChanged: true, SavepointDir: true}, stopSavepoint, restoreSavepoint},
		{"last-state, Flink version changed, no savepoint dir: cancel", upgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, FlinkVersionChanged: true}, stopCancel, restoreSavepoint},
		{"last-state, not running, cancellable", upgradeSituation{Mode: lastState, Job: restarting, JobManager: ready}, stopCancel, restoreSavepoint},
		{"last-state, JobManager gone, HA metadata", upgradeSituation{Mode: lastState, Job: running, JobManager: missing, HAEnabled: true, HAMetadata: true}, stopLastState, restoreLastState},
		{"last-state, suspended (finished) with HA metadata", upgradeSituation{Mode: lastState, Job: finished, JobManager: missing, HAEnabled: true, HAMetadata: true}, stopLastState, restoreLastState},
		{"last-state, JobManager missing, no HA: manual restore", upgradeSituation{Mode: lastState, Job: reconciling, JobManager: missing}, stopFail, ""},
		{"last-state, JobManager in error, no HA: manual restore", upgradeSituation{Mode: lastState, Job: reconciling, JobManager: errored}, stopFail, ""},
		{"last-state, JobManager missing, path recorded", upgradeSituation{Mode: lastState, Job: reconciling, JobManager: missing, RestorePath: "file:///cp/3"}, stopNone, restoreSavepoint},
		{"last-state, JobManager starting: wait", upgradeSituation{Mode: lastState, Job: reconciling, JobManager: flinkv1beta1.JobManagerDeploying}, stopWait, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planUpgrade(tt.in)
			assert.Equal(t, tt.stop, got.Stop, got.Reason)
			if tt.from != "" {
				assert.Equal(t, tt.from, got.Restore, got.Reason)
			}
			if got.Stop == stopFail {
				assert.Contains(t, got.Reason, "Manual restore required")
			}
		})
	}
}

// TestPlanUpgradeNeverDropsState: whatever the situation, a stateful mode never restores nothing.
func TestPlanUpgradeNeverDropsState(t *testing.T) {
	jobs := []flinkv1beta1.JobStatusState{"", flinkv1beta1.JobStatusRunning, flinkv1beta1.JobStatusFailed, flinkv1beta1.JobStatusFinished,
		flinkv1beta1.JobStatusCanceled, flinkv1beta1.JobStatusCancelling, flinkv1beta1.JobStatusReconciling, "RESTARTING", "CREATED"}
	jms := []flinkv1beta1.JobManagerDeploymentStatus{flinkv1beta1.JobManagerReady, flinkv1beta1.JobManagerMissing, flinkv1beta1.JobManagerError,
		flinkv1beta1.JobManagerDeploying, flinkv1beta1.JobManagerDeployedNotReady}
	for _, mode := range []flinkv1beta1.UpgradeMode{flinkv1beta1.UpgradeModeSavepoint, flinkv1beta1.UpgradeModeLastState} {
		for _, job := range jobs {
			for _, jm := range jms {
				for bits := 0; bits < 64*3; bits++ {
					in := upgradeSituation{Mode: mode, Job: job, JobManager: jm, HAEnabled: bits&1 != 0, HAMetadata: bits&2 != 0,
						SavepointDir: bits&4 != 0, FlinkVersionChanged: bits&8 != 0, LastStateFallback: bits&16 != 0, CancelForLastState: bits&32 != 0,
						Checkpoint: []checkpointFreshness{checkpointFresh, checkpointPending, checkpointTooOld}[bits/64]}
					plan := planUpgrade(in)
					if plan.Stop == stopWait || plan.Stop == stopFail {
						continue
					}
					assert.NotEqual(t, restoreNothing, plan.Restore, "%+v → %+v", in, plan)
					assert.NotEqual(t, stopStateless, plan.Stop, "%+v → %+v", in, plan)
					if plan.Restore == restoreLastState {
						assert.True(t, in.HAEnabled && in.HAMetadata, "%+v → %+v", in, plan)
					}
					if plan.Stop == stopNone && plan.Restore == restoreSavepoint {
						assert.NotEmpty(t, in.RestorePath, "%+v → %+v", in, plan)
					}
				}
			}
		}
	}
}
