package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// TestRollbackDue is the rollback decision's table, the one FlinkDeployment and
// FlinkSessionJob both follow.
func TestRollbackDue(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	changed := func(state flinkv1beta1.ReconciliationState, ago time.Duration) flinkv1beta1.ReconciliationStatus {
		return flinkv1beta1.ReconciliationStatus{State: state, LastReconciledSpec: `{"spec":{"b":1}}`, LastStableSpec: `{"spec":{"a":1}}`,
			ReconciliationTimestamp: now.Add(-ago).UnixMilli()}
	}
	for _, tc := range []struct {
		name string
		o    RollbackObserved
		due  bool
		left time.Duration
	}{
		{"disabled", RollbackObserved{Reconciliation: changed(flinkv1beta1.ReconciliationDeployed, time.Hour), Timeout: time.Minute}, false, 0},
		{"past the timeout, not healthy", RollbackObserved{Enabled: true, Reconciliation: changed(flinkv1beta1.ReconciliationDeployed, 2*time.Minute), Timeout: time.Minute}, true, 0},
		{"within the timeout: look again when it ends", RollbackObserved{Enabled: true, Reconciliation: changed(flinkv1beta1.ReconciliationDeployed, 20*time.Second), Timeout: time.Minute}, false, 40 * time.Second},
		{"healthy", RollbackObserved{Enabled: true, Healthy: true, Reconciliation: changed(flinkv1beta1.ReconciliationDeployed, time.Hour), Timeout: time.Minute}, false, 0},
		{"still upgrading", RollbackObserved{Enabled: true, Reconciliation: changed(flinkv1beta1.ReconciliationUpgrading, time.Hour), Timeout: time.Minute}, false, 0},
		{"rolling back already", RollbackObserved{Enabled: true, Reconciliation: changed(flinkv1beta1.ReconciliationRollingBack, time.Hour), Timeout: time.Minute}, false, 0},
		{"rolled back: not again", RollbackObserved{Enabled: true, Reconciliation: changed(flinkv1beta1.ReconciliationRolledBack, time.Hour), Timeout: time.Minute}, false, 0},
		{"never stable", RollbackObserved{Enabled: true, Reconciliation: flinkv1beta1.ReconciliationStatus{State: flinkv1beta1.ReconciliationDeployed,
			LastReconciledSpec: `{"spec":{"b":1}}`}, Timeout: time.Minute}, false, 0},
		{"the stable spec is the reconciled one", RollbackObserved{Enabled: true, Reconciliation: flinkv1beta1.ReconciliationStatus{State: flinkv1beta1.ReconciliationDeployed,
			LastReconciledSpec: `{"spec":{"a":1}}`, LastStableSpec: `{"spec":{"a":1}}`}, Timeout: time.Minute}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Now = now
			due, left := RollbackDue(tc.o)
			assert.Equal(t, tc.due, due)
			assert.Equal(t, tc.left, left)
		})
	}
}

func TestJobHealthy(t *testing.T) {
	for state, want := range map[flinkv1beta1.JobStatusState]bool{
		flinkv1beta1.JobStatusRunning: true, flinkv1beta1.JobStatusFinished: true,
		flinkv1beta1.JobStatusReconciling: false, flinkv1beta1.JobStatusFailed: false, flinkv1beta1.JobStatusRestarting: false,
		flinkv1beta1.JobStatusCreated: false, flinkv1beta1.JobStatusCanceled: false,
	} {
		assert.Equal(t, want, JobHealthy(state), string(state))
	}
}

// TestRollbackMode: the failed spec decides; only a stateless one rolls back without state.
func TestRollbackMode(t *testing.T) {
	for _, tc := range []struct {
		failed *flinkv1beta1.JobSpec
		want   flinkv1beta1.UpgradeMode
	}{
		{nil, flinkv1beta1.UpgradeModeLastState},
		{&flinkv1beta1.JobSpec{}, flinkv1beta1.UpgradeModeStateless},
		{&flinkv1beta1.JobSpec{UpgradeMode: flinkv1beta1.UpgradeModeStateless}, flinkv1beta1.UpgradeModeStateless},
		{&flinkv1beta1.JobSpec{UpgradeMode: flinkv1beta1.UpgradeModeSavepoint}, flinkv1beta1.UpgradeModeLastState},
		{&flinkv1beta1.JobSpec{UpgradeMode: flinkv1beta1.UpgradeModeLastState}, flinkv1beta1.UpgradeModeLastState},
	} {
		assert.Equal(t, tc.want, RollbackMode(tc.failed))
	}
}
