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

// TestReconciledGeneration: upstream 1.7 writes the reconciled generation into the envelope's
// resource_metadata; other formats carry none.
func TestReconciledGeneration(t *testing.T) {
	assert.Equal(t, int64(2), ReconciledGeneration(`{"spec":{},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","metadata":{"generation":2},"firstDeployment":true}}`))
	assert.Zero(t, ReconciledGeneration(`{"spec":{},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}`))
	assert.Zero(t, ReconciledGeneration(`{"flinkVersion":"v1_17"}`), "the older bare spec")
	assert.Zero(t, ReconciledGeneration(""))
	assert.Zero(t, ReconciledGeneration(`{not json`))
}
