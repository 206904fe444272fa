package crd

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// TestKubectl shows what a user does with kubectl against these CRDs: list everything Flink
// with the category, read field documentation, scale TaskManagers through the scale
// subresource, and wait for a condition.
func TestKubectl(t *testing.T) {
	ctx := context.Background()
	const ns = "kubectl"
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for _, doc := range []string{validDeployment, validSessionJob, validSnapshot} {
		obj := mustObject(t, doc)
		obj.SetNamespace(ns)
		require.NoError(t, env.Client.Create(ctx, obj))
	}

	// The operator would write this status; the printer columns and kubectl wait read it.
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dep"}, dep))
	dep.Status.JobStatus.State = flinkv1beta1.JobStatusRunning
	dep.Status.LifecycleState = flinkv1beta1.LifecycleStable
	dep.Status.TaskManager = &flinkv1beta1.TaskManagerInfo{LabelSelector: "component=taskmanager,app=dep", Replicas: 1}
	meta.SetStatusCondition(&dep.Status.Conditions, metav1.Condition{
		Type: "Running", Status: metav1.ConditionTrue, Reason: "Running", Message: "Job status RUNNING",
		ObservedGeneration: dep.Generation,
	})
	require.NoError(t, env.Client.Status().Update(ctx, dep))

	t.Run("get flink lists all three kinds with printer columns", func(t *testing.T) {
		out, err := env.Kubectl("get", "flink", "-n", ns)
		require.NoError(t, err, out)
		for _, want := range []string{
			"flinkdeployment.flink.apache.org/dep", "flinksessionjob.flink.apache.org/job",
			"flinkstatesnapshot.flink.apache.org/snap", "JOB STATUS", "LIFECYCLE STATE", "RUNNING", "STABLE",
			"SNAPSHOT STATE", "RESULT TIMESTAMP",
		} {
			assert.Contains(t, out, want)
		}
		t.Logf("kubectl get flink:\n%s", out)
	})

	t.Run("short names", func(t *testing.T) {
		for _, short := range []string{"flinkdep", "sessionjob", "flinksnp"} {
			out, err := env.Kubectl("get", short, "-n", ns, "-o", "name")
			require.NoError(t, err, out)
			assert.NotEmpty(t, strings.TrimSpace(out), short)
		}
	})

	t.Run("explain documents the job spec", func(t *testing.T) {
		out, err := env.Kubectl("explain", "flinkdeployment.spec.job")
		require.NoError(t, err, out)
		for _, want := range []string{"jarURI", "upgradeMode", "savepointRedeployNonce", "autoscalerResetNonce",
			"initialSavepointPath", "allowNonRestoredState", "upgradeMode says how the job is stopped"} {
			assert.Contains(t, out, want)
		}
	})

	t.Run("scale sets taskManager replicas", func(t *testing.T) {
		out, err := env.Kubectl("scale", "-n", ns, "flinkdep/dep", "--replicas=3")
		require.NoError(t, err, out)
		got := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dep"}, got))
		require.NotNil(t, got.Spec.TaskManager.Replicas)
		assert.Equal(t, int32(3), *got.Spec.TaskManager.Replicas)

		out, err = env.Kubectl("get", "-n", ns, "flinkdep/dep", "--subresource=scale",
			"-o", "jsonpath={.spec.replicas} {.status.replicas} {.status.selector}")
		require.NoError(t, err, out)
		assert.Equal(t, "3 1 component=taskmanager,app=dep", out)
	})

	t.Run("wait for a condition of the current generation", func(t *testing.T) {
		// The scale above bumped the generation: kubectl wait ignores the condition written for
		// the previous one, which is why conditions carry observedGeneration.
		out, err := env.Kubectl("wait", "-n", ns, "flinkdep/dep", "--for=condition=Running", "--timeout=1s")
		require.Error(t, err, out)

		got := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dep"}, got))
		meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{
			Type: "Running", Status: metav1.ConditionTrue, Reason: "Running", Message: "Job status RUNNING",
			ObservedGeneration: got.Generation,
		})
		require.NoError(t, env.Client.Status().Update(ctx, got))

		out, err = env.Kubectl("wait", "-n", ns, "flinkdep/dep", "--for=condition=Running", "--timeout=10s")
		require.NoError(t, err, out)
		assert.Contains(t, out, "condition met")
	})

	t.Run("jsonpath reads the autoscaler's decision", func(t *testing.T) {
		got := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dep"}, got))
		every := []flinkv1beta1.ScalingBound{flinkv1beta1.ScalingBoundMaxFactor, flinkv1beta1.ScalingBoundMinParallelism,
			flinkv1beta1.ScalingBoundMaxParallelism, flinkv1beta1.ScalingBoundKeyGroups, flinkv1beta1.ScalingBoundScaleDownInterval,
			flinkv1beta1.ScalingBoundIneffectiveScaling, flinkv1beta1.ScalingBoundMemory, flinkv1beta1.ScalingBoundExcluded}
		got.Status.Scaling = &flinkv1beta1.ScalingDecision{EvaluatedAt: metav1.Unix(1764990120, 0), Generation: got.Generation,
			Outcome: flinkv1beta1.ScalingHeld, Message: "Held",
			Vertices: []flinkv1beta1.VertexScaling{{VertexID: "0a448493b4782967b150582570326227", Name: "busy map",
				CurrentParallelism: 4, NewParallelism: 2, BusyRatio: "0.08", BoundBy: every}}}
		require.NoError(t, env.Client.Status().Update(ctx, got), "the CRD accepts every outcome's shape and every bound")

		out, err := env.Kubectl("get", "-n", ns, "flinkdeployment", "dep", "-o",
			"jsonpath={.status.scaling.outcome} {.status.scaling.vertices[0].currentParallelism}->{.status.scaling.vertices[0].newParallelism} {.status.scaling.vertices[0].boundBy[0]}")
		require.NoError(t, err, out)
		assert.Equal(t, "Held 4->2 MaxFactor", out)

		bad := got.DeepCopy()
		bad.Status.Scaling.Vertices[0].BoundBy = []flinkv1beta1.ScalingBound{"Whatever"}
		assert.Error(t, env.Client.Status().Update(ctx, bad), "an unknown bound is refused")
		bad = got.DeepCopy()
		bad.Status.Scaling.Outcome = "Done"
		assert.Error(t, env.Client.Status().Update(ctx, bad), "an unknown outcome is refused")
	})
}
