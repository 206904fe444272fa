//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/test/wait"
)

// TestBusyboxInitContainerFetchesIntoEmptyDir: busybox containers run on the local node, init
// containers too, as upstream's e2e manifests use them: an init container wgets a file from a
// server on loopback into an emptyDir, and the main container reads it at its own mount path.
func TestBusyboxInitContainerFetchesIntoEmptyDir(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "e2e-busybox"
	require.NoError(t, env.Namespace(ctx, ns))

	artifact := "job jar stand-in " + time.Now().Format(time.RFC3339Nano) + "\n"
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/artifact.txt" {
			http.NotFound(w, r)
			return
		}
		fetches.Add(1)
		_, _ = w.Write([]byte(artifact))
	}))
	defer srv.Close()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fetch", Namespace: ns}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		InitContainers: []corev1.Container{{Name: "artifacts-fetcher", Image: "busybox:1.35.0", ImagePullPolicy: corev1.PullIfNotPresent,
			Command:      []string{"wget", srv.URL + "/artifact.txt", "-O", "/flink-artifact/myjob.jar"},
			VolumeMounts: []corev1.VolumeMount{{Name: "flink-artifact", MountPath: "/flink-artifact"}}}},
		Containers: []corev1.Container{{Name: "main", Image: "docker.io/library/busybox:latest",
			Command:      []string{"sh", "-c", "cat /opt/flink/usrlib/myjob.jar"},
			VolumeMounts: []corev1.VolumeMount{{Name: "flink-artifact", MountPath: "/opt/flink/usrlib"}}}},
		Volumes: []corev1.Volume{{Name: "flink-artifact", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}}
	require.NoError(t, env.Client.Create(ctx, pod))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pod) })

	done := podSucceeds(t, pod)
	require.Len(t, done.Status.InitContainerStatuses, 1)
	fetcher := done.Status.InitContainerStatuses[0].State.Terminated
	require.NotNil(t, fetcher, "the init container has terminated")
	require.Zero(t, fetcher.ExitCode, "wget exited with %d", fetcher.ExitCode)
	require.Equal(t, int32(1), fetches.Load(), "the init container fetched the file once")

	logs, err := env.Kube.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
	require.NoError(t, err)
	require.Equal(t, artifact, string(logs), "the main container printed what the init container fetched")
}

// TestKubectlExecKillOneInABusyboxContainer: a container the node agent runs as a process
// (busybox here, as the operator's own image) is PID 1 of a PID namespace of its own, as a
// Flink container is, and kubectl exec enters it: `kill 1` reaches the container's program,
// which exits and is restarted in the same pod, and never the machine's init.
func TestKubectlExecKillOneInABusyboxContainer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "e2e-busybox-kill-one"
	require.NoError(t, env.Namespace(ctx, ns))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "loop", Namespace: ns}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "main", Image: "busybox:1.35.0",
			Command: []string{"sh", "-c", `trap 'echo got TERM; exit 143' TERM; echo started; while true; do sleep 1; done`}}},
	}}
	require.NoError(t, env.Client.Create(ctx, pod))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pod) })
	running := wait.Object(t, env.Client, client.ObjectKeyFromObject(pod), 2*time.Minute, "loop running",
		func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		})
	kubectl := kubectlIn(ctx, t, ns)

	// Proven harmlessly first: the exec'd shell is in a PID namespace that is not the machine's.
	hostNS, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)
	out, err := kubectl("exec", pod.Name, "--", "readlink", "/proc/self/ns/pid")
	require.NoError(t, err)
	require.NotEqual(t, hostNS, strings.TrimSpace(out), "kubectl exec runs in the container's PID namespace")
	initStat, err := os.ReadFile("/proc/1/stat")
	require.NoError(t, err)

	_, err = kubectl("exec", pod.Name, "--", "sh", "-c", "kill 1")
	require.NoError(t, err)
	waitContainerRestarted(t, running)
	previous, err := kubectl("logs", pod.Name, "--previous")
	require.NoError(t, err)
	assert.Contains(t, previous, "got TERM", "the container's program got kill 1's SIGTERM")
	after, err := os.ReadFile("/proc/1/stat")
	require.NoError(t, err)
	assert.Equal(t, strings.Fields(string(initStat))[21], strings.Fields(string(after))[21], "the machine's init is the one that ran before")
}
