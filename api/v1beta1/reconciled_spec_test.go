package v1beta1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReconciledSpecRoundTrip(t *testing.T) {
	spec := FlinkDeploymentSpec{FlinkVersion: FlinkVersion1_20, Job: &JobSpec{JarURI: "local:///a.jar", State: JobStateRunning},
		FlinkConfiguration: NewFlinkConfiguration(map[string]string{"a": "b"})}
	raw, err := EncodeReconciledSpec(spec, true)
	require.NoError(t, err)
	assert.Contains(t, raw, `"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}`)

	var back FlinkDeploymentSpec
	found, first, err := DecodeReconciledSpec(raw, &back)
	require.NoError(t, err)
	assert.True(t, found)
	assert.True(t, first)
	assert.Equal(t, spec.Job, back.Job)
	assert.JSONEq(t, `{"a":"b"}`, string(back.FlinkConfiguration.Raw))
}

func TestDecodeReconciledSpecFormats(t *testing.T) {
	var spec FlinkDeploymentSpec
	found, _, err := DecodeReconciledSpec("", &spec)
	require.NoError(t, err)
	assert.False(t, found)

	// Upstream's older format: the bare spec.
	found, first, err := DecodeReconciledSpec(`{"flinkVersion":"v1_17","job":{"state":"suspended","upgradeMode":"last-state"}}`, &spec)
	require.NoError(t, err)
	assert.True(t, found)
	assert.False(t, first)
	assert.Equal(t, JobStateSuspended, spec.Job.State)

	_, _, err = DecodeReconciledSpec(`{not json`, &spec)
	assert.ErrorContains(t, err, "decode reconciled spec")
}
