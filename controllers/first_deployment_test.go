package controllers

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
)

// resource_metadata.firstDeployment in lastReconciledSpec stays true until
// the first upgrade, as upstream writes it; taking a trigger nonce deploys nothing.

func recordedFirstDeployment(t *testing.T, raw string, spec any) bool {
	t.Helper()
	found, first, err := flinkv1beta1.DecodeReconciledSpec(raw, spec)
	require.NoError(t, err)
	require.True(t, found, "a last reconciled spec is recorded")
	return first
}

func TestFirstDeploymentSurvivesANonce(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, _, k, _ := newScenario(t, "first-deployment")
	d := stableDeployment(t, c, k, fixtures.NewDeployment(t, ns, "job"))
	oldJob := d.Status.JobStatus.JobID
	assert.True(t, recordedFirstDeployment(t, d.Status.ReconciliationStatus.LastReconciledSpec, &flinkv1beta1.FlinkDeploymentSpec{}))

	update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.SavepointTriggerNonce = fixtures.Ptr(int64(1)) })
	d = waitFor(t, c, ns, "job", "the nonce recorded", func(d *flinkv1beta1.FlinkDeployment) bool {
		return strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, `"savepointTriggerNonce":1`)
	})
	assert.True(t, recordedFirstDeployment(t, d.Status.ReconciliationStatus.LastReconciledSpec, &flinkv1beta1.FlinkDeploymentSpec{}),
		"a nonce is no deployment")

	update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 3 })
	k.collect(ns, "job")
	d = redeployed(t, c, k, ns, "job", oldJob)
	assert.False(t, recordedFirstDeployment(t, d.Status.ReconciliationStatus.LastReconciledSpec, &flinkv1beta1.FlinkDeploymentSpec{}),
		"an upgrade is not the first deployment")
}

func TestSessionJobFirstDeploymentSurvivesANonce(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "first-deployment-job", false, "session")
	key, _ := e.runLegacySessionJob("orders", nil)
	spec := &flinkv1beta1.FlinkSessionJobSpec{}
	assert.True(t, recordedFirstDeployment(t, e.get(key).Status.ReconciliationStatus.LastReconciledSpec, spec))

	e.update(key, savepointNonce(1))
	j := e.waitSessionJob(key, "manual savepoint recorded", lastSavepointNonce(1))
	assert.Contains(t, j.Status.ReconciliationStatus.LastReconciledSpec, `"savepointTriggerNonce":1`)
	assert.True(t, recordedFirstDeployment(t, j.Status.ReconciliationStatus.LastReconciledSpec, spec), "a nonce is no deployment")
}
