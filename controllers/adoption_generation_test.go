package controllers

import (
	"bufio"
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/flinksessionjob"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
)

// TestAdoptsTheGenerationApache17Recorded: the Apache operator 1.7 records the generation it
// reconciled only inside lastReconciledSpec (resource_metadata.metadata.generation), never in
// status.observedGeneration. Adopted as they are, an unchanged running application and session
// job must be Ready at once (the migration test found them stuck at Ready=False: only a spec
// change wrote the observed generation).
func TestAdoptsTheGenerationApache17Recorded(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/upstream/apache-1.7.0-running.yaml")
	require.NoError(t, err)
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	dep, job := &flinkv1beta1.FlinkDeployment{}, &flinkv1beta1.FlinkSessionJob{}
	for _, into := range []any{dep, job} {
		doc, err := reader.Read()
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(doc, into))
	}
	require.Zero(t, dep.Status.ObservedGeneration, "the capture has no status.observedGeneration")
	require.Zero(t, job.Status.ObservedGeneration, "the capture has no status.observedGeneration")

	flinkdeployment.NewScope(dep)
	assert.Equal(t, dep.Generation, dep.Status.ObservedGeneration, "the application's reconciled generation is adopted")
	ready := meta.FindStatusCondition(lifecycle.Conditions(&dep.Status, true, dep.Generation, flinkv1beta1.JobStateRunning), lifecycle.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status, "the adopted running application is Ready: %+v", ready)

	flinksessionjob.NewJobScope(job, nil)
	assert.Equal(t, job.Generation, job.Status.ObservedGeneration, "the session job's reconciled generation is adopted")
	ready = meta.FindStatusCondition(lifecycle.SessionJobConditions(&job.Status.CommonStatus, job.Generation, flinkv1beta1.JobStateRunning), lifecycle.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status, "the adopted running session job is Ready: %+v", ready)

	t.Run("a spec changed after the Apache operator's last reconcile is not reported as observed", func(t *testing.T) {
		changed := dep.DeepCopy()
		changed.Generation++
		changed.Status.ObservedGeneration = 0
		flinkdeployment.NewScope(changed)
		assert.Equal(t, dep.Generation, changed.Status.ObservedGeneration, "the generation upstream reconciled, not the newer one")
	})
	t.Run("an observed generation the status has is kept", func(t *testing.T) {
		own := dep.DeepCopy()
		own.Status.ObservedGeneration = 7
		flinkdeployment.NewScope(own)
		assert.Equal(t, int64(7), own.Status.ObservedGeneration)
	})
}
