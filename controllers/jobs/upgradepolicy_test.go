package jobs

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
		in   UpgradeSituation
		stop StopMode
		from RestoreMode
	}{
		{"first deployment interrupted", UpgradeSituation{Mode: savepoint, Job: reconciling, JobManager: missing, NothingRan: true}, StopNone, RestoreNothing},
		{"first deployment from initialSavepointPath interrupted", UpgradeSituation{Mode: lastState, Job: reconciling, JobManager: missing, NothingRan: true, RestorePath: "file:///sp/init"}, StopNone, RestoreSavepoint},
		{"stateless, running", UpgradeSituation{Mode: stateless, Job: running, JobManager: ready}, StopStateless, RestoreNothing},
		{"stateless, failed", UpgradeSituation{Mode: stateless, Job: failed, JobManager: ready}, StopNone, RestoreNothing},
		{"stateless, JobManager missing", UpgradeSituation{Mode: stateless, Job: reconciling, JobManager: missing}, StopNone, RestoreNothing},
		{"stateless, savepoint redeploy of a running job", UpgradeSituation{Mode: stateless, Job: running, JobManager: ready, RestorePath: "file:///sp/chosen"}, StopStateless, RestoreSavepoint},
		{"last-state, HA, checkpoint too old: savepoint", UpgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, SavepointDir: true, Checkpoint: CheckpointTooOld}, StopSavepoint, RestoreSavepoint},
		{"last-state, HA, checkpoint too old, one in progress: wait", UpgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, SavepointDir: true, Checkpoint: CheckpointPending}, StopWait, ""},
		{"last-state, HA, checkpoint fresh", UpgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, SavepointDir: true}, stopLastState, RestoreLastState},

		{"any, cancelling: wait", UpgradeSituation{Mode: lastState, Job: cancelling, JobManager: ready, HAEnabled: true, HAMetadata: true}, StopWait, ""},

		{"savepoint, running", UpgradeSituation{Mode: savepoint, Job: running, JobManager: ready, SavepointDir: true}, StopSavepoint, RestoreSavepoint},
		{"savepoint, finished after stop-with-savepoint", UpgradeSituation{Mode: savepoint, Job: finished, JobManager: ready, RestorePath: "file:///sp/1"}, StopNone, RestoreSavepoint},
		{"savepoint, failed with a recorded checkpoint", UpgradeSituation{Mode: savepoint, Job: failed, JobManager: ready, RestorePath: "file:///cp/7"}, StopNone, RestoreSavepoint},
		{"savepoint, failed, nothing known: manual restore", UpgradeSituation{Mode: savepoint, Job: failed, JobManager: ready}, StopFail, ""},
		{"savepoint, canceled, nothing known: manual restore", UpgradeSituation{Mode: savepoint, Job: canceled, JobManager: missing, HAEnabled: true, HAMetadata: true}, StopFail, ""},
		{"savepoint, not running, fallback: HA", UpgradeSituation{Mode: savepoint, Job: restarting, JobManager: ready, HAEnabled: true, HAMetadata: true, LastStateFallback: true}, stopLastState, RestoreLastState},
		{"savepoint, not running, fallback, no HA: cancel", UpgradeSituation{Mode: savepoint, Job: restarting, JobManager: ready, LastStateFallback: true}, StopCancel, RestoreSavepoint},
		{"savepoint, not running, no fallback: wait", UpgradeSituation{Mode: savepoint, Job: restarting, JobManager: ready, HAEnabled: true, HAMetadata: true}, StopWait, ""},
		{"savepoint, not running, no fallback, Flink version changed: as last-state", UpgradeSituation{Mode: savepoint, Job: restarting, JobManager: ready, FlinkVersionChanged: true}, StopCancel, RestoreSavepoint},

		{"last-state, running with HA", UpgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true}, stopLastState, RestoreLastState},
		{"last-state, running without HA: latest checkpoint", UpgradeSituation{Mode: lastState, Job: running, JobManager: ready}, StopCancel, RestoreSavepoint},
		{"last-state, running, job-cancel enabled", UpgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, CancelForLastState: true}, StopCancel, RestoreSavepoint},
		{"last-state, Flink version changed: savepoint", UpgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, FlinkVersionChanged: true, SavepointDir: true}, StopSavepoint, RestoreSavepoint},
		{"last-state, Flink version changed, no savepoint dir: cancel", UpgradeSituation{Mode: lastState, Job: running, JobManager: ready, HAEnabled: true, HAMetadata: true, FlinkVersionChanged: true}, StopCancel, RestoreSavepoint},
		{"last-state, not running, cancellable", UpgradeSituation{Mode: lastState, Job: restarting, JobManager: ready}, StopCancel, RestoreSavepoint},
		{"last-state, JobManager gone, HA metadata", UpgradeSituation{Mode: lastState, Job: running, JobManager: missing, HAEnabled: true, HAMetadata: true}, stopLastState, RestoreLastState},
		{"last-state, suspended (finished) with HA metadata", UpgradeSituation{Mode: lastState, Job: finished, JobManager: missing, HAEnabled: true, HAMetadata: true}, stopLastState, RestoreLastState},
		{"last-state, JobManager missing, no HA: manual restore", UpgradeSituation{Mode: lastState, Job: reconciling, JobManager: missing}, StopFail, ""},
		{"last-state, JobManager in error, no HA: manual restore", UpgradeSituation{Mode: lastState, Job: reconciling, JobManager: errored}, StopFail, ""},
		{"last-state, JobManager missing, path recorded", UpgradeSituation{Mode: lastState, Job: reconciling, JobManager: missing, RestorePath: "file:///cp/3"}, StopNone, RestoreSavepoint},
		{"last-state, JobManager starting: wait", UpgradeSituation{Mode: lastState, Job: reconciling, JobManager: flinkv1beta1.JobManagerDeploying}, StopWait, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanUpgrade(tt.in)
			assert.Equal(t, tt.stop, got.Stop, got.Reason)
			if tt.from != "" {
				assert.Equal(t, tt.from, got.Restore, got.Reason)
			}
			if got.Stop == StopFail {
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
					in := UpgradeSituation{Mode: mode, Job: job, JobManager: jm, HAEnabled: bits&1 != 0, HAMetadata: bits&2 != 0,
						SavepointDir: bits&4 != 0, FlinkVersionChanged: bits&8 != 0, LastStateFallback: bits&16 != 0, CancelForLastState: bits&32 != 0,
						Checkpoint: []CheckpointFreshness{CheckpointFresh, CheckpointPending, CheckpointTooOld}[bits/64]}
					plan := PlanUpgrade(in)
					if plan.Stop == StopWait || plan.Stop == StopFail {
						continue
					}
					assert.NotEqual(t, RestoreNothing, plan.Restore, "%+v → %+v", in, plan)
					assert.NotEqual(t, StopStateless, plan.Stop, "%+v → %+v", in, plan)
					if plan.Restore == RestoreLastState {
						assert.True(t, in.HAEnabled && in.HAMetadata, "%+v → %+v", in, plan)
					}
					if plan.Stop == StopNone && plan.Restore == RestoreSavepoint {
						assert.NotEmpty(t, in.RestorePath, "%+v → %+v", in, plan)
					}
				}
			}
		}
	}
}
