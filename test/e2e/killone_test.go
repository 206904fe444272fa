//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/test/wait"
)

// TestKubectlExecKillOneRestartsTheJobManager kills a JobManager as Apache's e2e suite does,
// `kubectl exec <jm> -c flink-main-container -- /bin/sh -c "kill 1"`: PID 1 of the container
// is the JobManager's java process, so the container exits and restarts in the same pod, and
// Flink restores the same job from its latest checkpoint through Kubernetes HA.
func TestKubectlExecKillOneRestartsTheJobManager(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	dep := example(t, "examples/checkpoint-ha/checkpoint-ha.yaml", "e2e-kill-one")
	dep.Name = "kill-one" // its own HA directory in the hostPath volume the example's users share
	key := client.ObjectKeyFromObject(dep)
	jobID, jm := deployRunning(t, dep)
	kubectl := kubectlIn(ctx, t, key.Namespace)
	const container = "flink-main-container"

	// Proven harmlessly first: the exec'd shell is in the container's own PID namespace.
	var pid int
	_, err := fmt.Sscanf(jm.Status.ContainerStatuses[0].ContainerID, "nodeagent://%d", &pid)
	require.NoError(t, err)
	containerNS, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	require.NoError(t, err)
	hostNS, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)
	require.NotEqual(t, hostNS, containerNS, "the container has a PID namespace of its own")
	out, err := kubectl("exec", jm.Name, "-c", container, "--", "/bin/sh", "-c", "readlink /proc/self/ns/pid")
	require.NoError(t, err)
	require.Equal(t, containerNS, strings.TrimSpace(out), "kubectl exec enters the container's PID namespace")

	before := completedCheckpoint(t, key, jobID)
	_, err = kubectl("exec", jm.Name, "-c", container, "--", "/bin/sh", "-c", "kill 1")
	require.NoError(t, err)
	logf(t, "kill 1 sent to %s", jm.Name)
	waitContainerRestarted(t, jm)
	d := waitFor(t, key, "Ready and RUNNING after kill 1", 3*time.Minute, readyAndRunning)
	require.Equal(t, jobID, d.Status.JobStatus.JobID, "the same job")
	restored := restoredFrom(t, key, jobID)
	assert.False(t, restored.IsSavepoint, "restored from a checkpoint")
	assert.GreaterOrEqual(t, restored.ID, before.ID, "at least as new as the last one seen before the kill")

	p := &corev1.Pod{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(jm), p))
	assert.Equal(t, jm.UID, jobManagerPod(t, key).UID, "the same pod")
	assert.Equal(t, int32(1), p.Status.ContainerStatuses[0].RestartCount)
	want := "Restoring job " + jobID + " from Checkpoint"
	wait.Until(t, ctx, time.Minute, "kubectl logs shows "+want, func() (bool, error) {
		logs, err := kubectl("logs", jm.Name, "-c", container)
		return strings.Contains(logs, want), err
	})
	previous, err := kubectl("logs", jm.Name, "-c", container, "--previous")
	require.NoError(t, err)
	assert.Contains(t, previous, "RECEIVED SIGNAL 15: SIGTERM", "the killed run got kill 1's SIGTERM")
	logf(t, "restored checkpoint %d (last seen before the kill: %d)", restored.ID, before.ID)

	deleteAndWait(t, dep)
}
