//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestInPlaceScalingAndRecovery on real Flink 1.20 (native mode, adaptive scheduler, Kubernetes
// HA): a per-vertex parallelism override is applied to the running job without a restart, and
// a JobManager Deployment deleted behind the operator's back is recovered from HA metadata,
// resuming the same job from its checkpoints.
func TestInPlaceScalingAndRecovery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dep := example(t, "examples/checkpoint-ha/checkpoint-ha.yaml", "e2e-scaling")
	dep.Spec.FlinkConfiguration = setConfig(t, dep.Spec.FlinkConfiguration, "jobmanager.scheduler", "adaptive")
	key := client.ObjectKeyFromObject(dep)
	jobID, jmPod := deployRunning(t, dep)

	t.Run("per-vertex parallelism in place", func(t *testing.T) {
		details, err := flinkREST(t, key).JobDetails(ctx, jobID)
		require.NoError(t, err)
		vertex := details.Vertices[len(details.Vertices)-1]
		require.Equal(t, 1, vertex.Parallelism)
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) {
			d.Spec.FlinkConfiguration = setConfig(t, d.Spec.FlinkConfiguration, "pipeline.jobvertex-parallelism-overrides", vertex.ID+":2")
		})
		wait.For(t, 2*time.Minute, "vertex "+vertex.ID+" running at parallelism 2", func() bool {
			details, err := flinkREST(t, key).JobDetails(ctx, jobID)
			return err == nil && details.AllTasksRunning() && parallelismOf(details.Vertices, vertex.ID) == 2
		})
		logf(t, "vertex %s rescaled to 2 in place", vertex.Name)
		d := waitFor(t, key, "recorded", time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.ObservedGeneration == d.Generation && readyAndRunning(d)
		})
		assert.Equal(t, jobID, d.Status.JobStatus.JobID, "same job")
		assert.Equal(t, jmPod.UID, jobManagerPod(t, key).UID, "same JobManager pod: no restart")
	})

	t.Run("a deleted JobManager Deployment is recovered from HA", func(t *testing.T) {
		before := completedCheckpoint(t, key, jobID)
		jm := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: native.JobManagerDeploymentName(key.Name)}}
		require.NoError(t, env.Client.Delete(ctx, jm, client.PropagationPolicy(metav1.DeletePropagationForeground)))
		waitFor(t, key, "recovering", time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.JobStatus.State != flinkv1beta1.JobStatusRunning
		})
		d := waitFor(t, key, "Ready and RUNNING again", 3*time.Minute, readyAndRunning)
		assert.Equal(t, jobID, d.Status.JobStatus.JobID, "the same job resumes through HA")
		restored := restoredFrom(t, key, jobID)
		assert.GreaterOrEqual(t, restored.ID, before.ID, "restored a checkpoint at least as new as the last one seen")
		logf(t, "recovered from checkpoint %d (last seen before: %d)", restored.ID, before.ID)
	})

	deleteAndWait(t, dep)
}

func parallelismOf(vertices []flink.JobVertex, id string) int {
	for _, v := range vertices {
		if v.ID == id {
			return v.Parallelism
		}
	}
	return 0
}

// TestReactiveScaling on real Flink 2 in standalone mode with the reactive scheduler: a
// parallelism change scales the TaskManager Deployment and the running job adapts to the new
// slots without being restarted.
func TestReactiveScaling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dep := example(t, "examples/basic/basic.yaml", "e2e-reactive")
	dep.Spec.Mode = flinkv1beta1.DeploymentModeStandalone
	dep.Spec.FlinkConfiguration = setConfig(t, dep.Spec.FlinkConfiguration, "scheduler-mode", "reactive")
	// Flink's standalone application entrypoint finds a job without an entry class only in usrlib
	// or on the system classpath, not in pipeline.classpaths where a local:// jar goes.
	dep.Spec.Job.EntryClass = "org.apache.flink.streaming.examples.windowing.TopSpeedWindowing"
	key := client.ObjectKeyFromObject(dep)
	jobID, jmPod := deployRunning(t, dep)

	patch(t, key, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 4 })
	var err error
	wait.For(t, 3*time.Minute, "the job running at parallelism 4", func() bool {
		var details *flink.JobDetails
		details, err = flinkREST(t, key).JobDetails(ctx, jobID)
		return err == nil && details.AllTasksRunning() && len(details.Vertices) > 0 && details.Vertices[0].Parallelism == 4
	}, func() string { return fmt.Sprintf("last error %v", err) })
	d := waitFor(t, key, "recorded", time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ObservedGeneration == d.Generation && readyAndRunning(d)
	})
	assert.Equal(t, jobID, d.Status.JobStatus.JobID, "same job")
	assert.Equal(t, jmPod.UID, jobManagerPod(t, key).UID, "same JobManager pod")
	tm := &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: native.TaskManagerDeploymentName(key.Name)}, tm))
	assert.Equal(t, int32(2), *tm.Spec.Replicas, "two TaskManagers of two slots")
	logf(t, "reactive mode: parallelism 2 → 4 with two TaskManagers, same job")

	deleteAndWait(t, dep)
}

// deployRunning creates a FlinkDeployment and waits until it is Ready with every task running;
// it returns the job id and the JobManager pod.
func deployRunning(t *testing.T, dep *flinkv1beta1.FlinkDeployment) (string, *corev1.Pod) {
	t.Helper()
	key := client.ObjectKeyFromObject(dep)
	require.NoError(t, env.Client.Create(context.Background(), dep))
	d := waitFor(t, key, "Ready and RUNNING", 3*time.Minute, readyAndRunning)
	allTasksRunning(t, key, d.Status.JobStatus.JobID)
	return d.Status.JobStatus.JobID, jobManagerPod(t, key)
}

// deleteAndWait deletes a FlinkDeployment and waits until it is gone (finalizer done).
func deleteAndWait(t *testing.T, dep *flinkv1beta1.FlinkDeployment) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, env.Client.Delete(ctx, dep))
	wait.For(t, 2*time.Minute, dep.Name+" gone", func() bool {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(dep), &flinkv1beta1.FlinkDeployment{}) != nil
	})
}
