package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestForeignAutoscalerConfigMapPausesAutoscaling: with an autoscaler-<name> ConfigMap someone
// else owns, the deployment is still deployed and upgraded (the reconcile does not fail); the
// autoscaler only warns, collects nothing and never writes that ConfigMap.
func TestForeignAutoscalerConfigMapPausesAutoscaling(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "autoscale-foreign")
	fl := fakeflink.New(t)
	k := &cluster{t: t, c: c, flink: fl}
	const name = "job"
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: jobs.AutoscalerConfigMapName(name)},
		Data: map[string]string{"parallelismOverrides": string(fixtures.VertexMap) + ":9"}}
	require.NoError(t, c.Create(ctx, foreign))
	source := &scriptedMetrics{flink: fl, busy: 1800, rate: 1000}
	clock := &stepClock{now: time.Now(), step: 20 * time.Second}
	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: autoscalingController(fl, source, clock.Now)})
	jobID := autoscaled(t, c, k, ns, name, nil)
	events.seen(t, "Autoscaling paused: ConfigMap "+ns+"/"+jobs.AutoscalerConfigMapName(name)+" is not owned by the resource")

	before := len(fl.Requests())
	update(t, c, ns, name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Args = []string{"--new"} })
	wait.For(t, 30*time.Second, "the upgrade's stop-with-savepoint at Flink", func() bool {
		return slices.Contains(fl.Requests()[before:], "POST /jobs/"+jobID+"/stop")
	}, func() string { return fmt.Sprintf("requests since the spec change %v", fl.Requests()[before:]) })
	assert.Zero(t, source.samples(), "no metrics collected while paused")
	var after corev1.ConfigMap
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(foreign), &after))
	assert.Equal(t, foreign.ResourceVersion, after.ResourceVersion, "the foreign ConfigMap is never written")
	d := get(t, c, ns, name)
	assert.NotContains(t, d.Status.ReconciliationStatus.LastReconciledSpec, string(fixtures.VertexMap)+":9", "its overrides are not applied")
}
