package flinksessionjob

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// TestSessionJobRollbackPreconditions: what a session job is rolled back to, and when it is
// not: a stable spec that is suspended, on another session or unreadable is refused with the
// reason; ROLLED_BACK runs the stable spec while the failed one stays the last reconciled one.
func TestSessionJobRollbackPreconditions(t *testing.T) {
	base := deployedSessionJob(t, flinkv1beta1.UpgradeModeSavepoint, map[string]string{
		"kubernetes.operator.deployment.rollback.enabled": "true", "kubernetes.operator.deployment.readiness.timeout": "1 min"})
	stableSpec := func(change func(*flinkv1beta1.FlinkSessionJobSpec)) string {
		spec := base.Spec.DeepCopy()
		change(spec)
		raw, err := flinkv1beta1.EncodeReconciledSpec(*spec, false)
		require.NoError(t, err)
		return raw
	}
	failed := base.Spec.DeepCopy()
	failed.Job.Parallelism = 4
	failedRaw, err := flinkv1beta1.EncodeReconciledSpec(*failed, false)
	require.NoError(t, err)
	scopeWith := func(stable string, state flinkv1beta1.ReconciliationState) *jobScope {
		job := base.DeepCopy()
		job.Spec = *failed
		job.Status.ReconciliationStatus.LastReconciledSpec = failedRaw
		job.Status.ReconciliationStatus.LastStableSpec = stable
		job.Status.ReconciliationStatus.State = state
		job.Status.JobStatus.State = flinkv1beta1.JobStatusReconciling
		return NewJobScope(job, nil)
	}
	for _, tc := range []struct {
		name, stable, why string
	}{
		{"the stable spec", stableSpec(func(*flinkv1beta1.FlinkSessionJobSpec) {}), ""},
		{"suspended", stableSpec(func(s *flinkv1beta1.FlinkSessionJobSpec) { s.Job.State = flinkv1beta1.JobStateSuspended }), "the last stable spec is suspended"},
		{"another session", stableSpec(func(s *flinkv1beta1.FlinkSessionJobSpec) { s.DeploymentName = "other" }), "the last stable spec runs on another session"},
		{"unreadable", "{", "the last stable spec cannot be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.why, scopeWith(tc.stable, flinkv1beta1.ReconciliationDeployed).rollbackImpossible())
		})
	}

	stable := stableSpec(func(*flinkv1beta1.FlinkSessionJobSpec) {})
	// Due once the readiness timeout has passed since the failed spec was recorded.
	s := scopeWith(stable, flinkv1beta1.ReconciliationDeployed)
	recorded := time.UnixMilli(s.status().ReconciliationStatus.ReconciliationTimestamp)
	due, left := s.rollbackDue(recorded.Add(30 * time.Second))
	assert.False(t, due)
	assert.Equal(t, 30*time.Second, left)
	due, _ = s.rollbackDue(recorded.Add(time.Minute))
	assert.True(t, due)
	s.status().JobStatus.State = flinkv1beta1.JobStatusRunning
	due, _ = s.rollbackDue(recorded.Add(time.Hour))
	assert.False(t, due, "a RUNNING job is healthy")

	// What runs: the failed spec until ROLLED_BACK, then the stable one.
	assert.Equal(t, int32(4), scopeWith(stable, flinkv1beta1.ReconciliationRollingBack).running().Job.Parallelism)
	rolledBack := scopeWith(stable, flinkv1beta1.ReconciliationRolledBack)
	assert.Equal(t, int32(2), rolledBack.running().Job.Parallelism)
	assert.Equal(t, int32(4), rolledBack.Deployed.Job.Parallelism, "the failed spec stays the last reconciled one")
}
