//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
