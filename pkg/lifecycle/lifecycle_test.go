package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

func TestState(t *testing.T) {
	deployed := flinkv1beta1.ReconciliationStatus{LastReconciledSpec: "A", LastStableSpec: "B", State: flinkv1beta1.ReconciliationDeployed}
	stable := flinkv1beta1.ReconciliationStatus{LastReconciledSpec: "A", LastStableSpec: "A", State: flinkv1beta1.ReconciliationDeployed}
	tests := []struct {
		name     string
		status   flinkv1beta1.CommonStatus
		jm       flinkv1beta1.JobManagerDeploymentStatus
		deleting bool
		jobState flinkv1beta1.JobState
		want     flinkv1beta1.LifecycleState
	}{
		{name: "new", want: flinkv1beta1.LifecycleCreated},
		{name: "new with an error", status: flinkv1beta1.CommonStatus{Error: "bad"}, want: flinkv1beta1.LifecycleFailed},
		{name: "deleting wins", status: flinkv1beta1.CommonStatus{ReconciliationStatus: stable}, deleting: true, want: flinkv1beta1.LifecycleDeleting},
		{name: "upgrading", status: flinkv1beta1.CommonStatus{ReconciliationStatus: flinkv1beta1.ReconciliationStatus{LastReconciledSpec: "A", State: flinkv1beta1.ReconciliationUpgrading}}, want: flinkv1beta1.LifecycleUpgrading},
		{name: "rolling back", status: flinkv1beta1.CommonStatus{ReconciliationStatus: flinkv1beta1.ReconciliationStatus{LastReconciledSpec: "A", State: flinkv1beta1.ReconciliationRollingBack}}, want: flinkv1beta1.LifecycleRollingBack},
		{name: "suspended", status: flinkv1beta1.CommonStatus{ReconciliationStatus: stable}, jobState: flinkv1beta1.JobStateSuspended, want: flinkv1beta1.LifecycleSuspended},
		{name: "job failed", status: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, JobStatus: flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusFailed}}, want: flinkv1beta1.LifecycleFailed},
		{name: "JobManager missing, HA data gone", status: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, Error: `{"message":"HA metadata is not available"}`}, jm: flinkv1beta1.JobManagerMissing, want: flinkv1beta1.LifecycleFailed},
		{name: "JobManager missing, recoverable", status: flinkv1beta1.CommonStatus{ReconciliationStatus: stable, Error: "Missing JobManager deployment"}, jm: flinkv1beta1.JobManagerMissing, want: flinkv1beta1.LifecycleStable},
		{name: "rolled back", status: flinkv1beta1.CommonStatus{ReconciliationStatus: flinkv1beta1.ReconciliationStatus{LastReconciledSpec: "A", State: flinkv1beta1.ReconciliationRolledBack}}, want: flinkv1beta1.LifecycleRolledBack},
		{name: "stable", status: flinkv1beta1.CommonStatus{ReconciliationStatus: stable}, want: flinkv1beta1.LifecycleStable},
		{name: "deployed, not yet stable", status: flinkv1beta1.CommonStatus{ReconciliationStatus: deployed}, want: flinkv1beta1.LifecycleDeployed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, State(&tt.status, tt.jm, tt.deleting, tt.jobState))
		})
	}
}

func TestConditions(t *testing.T) {
	s := &flinkv1beta1.FlinkDeploymentStatus{
		CommonStatus:               flinkv1beta1.CommonStatus{JobStatus: flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusRunning}, LifecycleState: flinkv1beta1.LifecycleStable, ObservedGeneration: 4},
		JobManagerDeploymentStatus: flinkv1beta1.JobManagerReady,
	}
	got := Conditions(s, true, 4, "")
	assert.Equal(t, metav1.Condition{Type: "Running", Status: metav1.ConditionTrue, Reason: "Running", Message: "Job status RUNNING", ObservedGeneration: 4}, got[0])
	assert.Equal(t, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Stable", Message: "Lifecycle state STABLE", ObservedGeneration: 4}, got[1])

	got = Conditions(s, true, 5, "") // a newer generation has not been reconciled yet
	assert.Equal(t, metav1.ConditionFalse, got[1].Status)

	s.JobManagerDeploymentStatus = flinkv1beta1.JobManagerDeploying
	got = Conditions(s, false, 4, "")
	assert.Equal(t, metav1.Condition{Type: "Running", Status: metav1.ConditionFalse, Reason: "JobManagerIsDeploying", Message: "JobManager process is starting up", ObservedGeneration: 4}, got[0])

	s.JobStatus.State = flinkv1beta1.JobStatusFailing
	assert.Equal(t, "Failing", Conditions(s, true, 4, "")[0].Reason)
	assert.Equal(t, "RolledBack", camel("ROLLED_BACK"))
}

func TestReconcilingAndStalled(t *testing.T) {
	cond := func(conds []metav1.Condition, typ string) metav1.Condition {
		for _, c := range conds {
			if c.Type == typ {
				return c
			}
		}
		t.Fatalf("no %s condition", typ)
		return metav1.Condition{}
	}
	tests := []struct {
		name                      string
		status                    flinkv1beta1.FlinkDeploymentStatus
		reconciling, stalled      metav1.ConditionStatus
		reconcilingReason, reason string
	}{
		{name: "settled", status: flinkv1beta1.FlinkDeploymentStatus{JobManagerDeploymentStatus: flinkv1beta1.JobManagerReady,
			CommonStatus: flinkv1beta1.CommonStatus{LifecycleState: flinkv1beta1.LifecycleStable, JobStatus: flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusRunning}}},
			reconciling: "False", stalled: "False", reconcilingReason: "Settled", reason: "NotStalled"},
		{name: "upgrading", status: flinkv1beta1.FlinkDeploymentStatus{CommonStatus: flinkv1beta1.CommonStatus{
			ReconciliationStatus: flinkv1beta1.ReconciliationStatus{State: flinkv1beta1.ReconciliationUpgrading}}},
			reconciling: "True", stalled: "False", reconcilingReason: "Upgrading", reason: "NotStalled"},
		{name: "JobManager starting", status: flinkv1beta1.FlinkDeploymentStatus{JobManagerDeploymentStatus: flinkv1beta1.JobManagerDeploying},
			reconciling: "True", stalled: "False", reconcilingReason: "Deploying", reason: "NotStalled"},
		{name: "invalid spec", status: flinkv1beta1.FlinkDeploymentStatus{CommonStatus: flinkv1beta1.CommonStatus{
			Error: `{"type":"org.apache.flink.kubernetes.operator.exception.ValidationError","message":"spec.job.jarURI: Required value"}`}},
			reconciling: "False", stalled: "True", reconcilingReason: "WaitingForUser", reason: "InvalidSpec"},
		{name: "invalid spec, typed", status: flinkv1beta1.FlinkDeploymentStatus{CommonStatus: flinkv1beta1.CommonStatus{
			Error: flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionValidation, flinkv1beta1.ErrorReasonInvalidSpec, "spec.job.jarURI: Required value")}},
			reconciling: "False", stalled: "True", reconcilingReason: "WaitingForUser", reason: "InvalidSpec"},
		{name: "manual restore required, typed, whatever the message says", status: flinkv1beta1.FlinkDeploymentStatus{
			JobManagerDeploymentStatus: flinkv1beta1.JobManagerMissing, CommonStatus: flinkv1beta1.CommonStatus{
				Error: flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionUpgradeFailure, flinkv1beta1.ErrorReasonManualRestoreRequired, "spec.job.jarURI: Required value")}},
			reconciling: "False", stalled: "True", reconcilingReason: "WaitingForUser", reason: "ManualRestoreRequired"},
		{name: "an upgrade failure is not a validation error, whatever the message says", status: flinkv1beta1.FlinkDeploymentStatus{
			JobManagerDeploymentStatus: flinkv1beta1.JobManagerReady, CommonStatus: flinkv1beta1.CommonStatus{LifecycleState: flinkv1beta1.LifecycleStable,
				JobStatus: flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusRunning},
				Error:     flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionUpgradeFailure, flinkv1beta1.ErrorReasonUpgradeFailed, "exception.ValidationError: Manual restore required")}},
			reconciling: "False", stalled: "False", reconcilingReason: "Settled", reason: "NotStalled"},
		{name: "failed job", status: flinkv1beta1.FlinkDeploymentStatus{JobManagerDeploymentStatus: flinkv1beta1.JobManagerReady,
			CommonStatus: flinkv1beta1.CommonStatus{LifecycleState: flinkv1beta1.LifecycleFailed, JobStatus: flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusFailed}}},
			reconciling: "False", stalled: "True", reconcilingReason: "WaitingForUser", reason: "Failed"},
		{name: "deployment error", status: flinkv1beta1.FlinkDeploymentStatus{JobManagerDeploymentStatus: flinkv1beta1.JobManagerError},
			reconciling: "False", stalled: "True", reconcilingReason: "WaitingForUser", reason: "DeploymentFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Conditions(&tt.status, true, 3, "")
			r, s := cond(got, "Reconciling"), cond(got, "Stalled")
			assert.Equal(t, tt.reconciling, r.Status)
			assert.Equal(t, tt.reconcilingReason, r.Reason)
			assert.Equal(t, tt.stalled, s.Status)
			assert.Equal(t, tt.reason, s.Reason)
			assert.Equal(t, int64(3), s.ObservedGeneration)
		})
	}
	got := cond(Conditions(&tests[3].status, true, 3, ""), "Stalled")
	assert.Equal(t, "spec.job.jarURI: Required value", got.Message, "the message of status.error")
}
