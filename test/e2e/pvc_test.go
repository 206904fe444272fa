//go:build e2e

package e2e

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/test/localcluster"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestPersistentVolumeClaimOutlivesItsPods: a claim that names no StorageClass gets the local
// cluster's default one and is bound, once a pod uses it, to a volume the provisioner made;
// what one pod writes there the next pod on the claim reads; deleting the claim deletes the
// volume and its directory on the node (reclaim policy Delete).
func TestPersistentVolumeClaimOutlivesItsPods(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const ns = "e2e-pvc"
	require.NoError(t, env.Namespace(ctx, ns))

	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "flink-example-statemachine", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:  ptr(corev1.PersistentVolumeFilesystem),
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
	require.NoError(t, env.Client.Create(ctx, claim))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), claim) })
	require.NotNil(t, claim.Spec.StorageClassName, "the API server gave the claim the default StorageClass")
	require.Equal(t, localcluster.StorageClassName, *claim.Spec.StorageClassName)

	message := "written by the first pod at " + time.Now().Format(time.RFC3339Nano) + "\n"
	writer := claimPod(ns, "writer", claim.Name, `printf '%s' "$MESSAGE" > /opt/flink/volume/state.txt`)
	writer.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MESSAGE", Value: message}}
	require.NoError(t, env.Client.Create(ctx, writer))
	podSucceeds(t, writer)

	bound := wait.Object(t, env.Client, client.ObjectKeyFromObject(claim), time.Minute, "the claim Bound",
		func(c *corev1.PersistentVolumeClaim) bool { return c.Status.Phase == corev1.ClaimBound })
	pv := &corev1.PersistentVolume{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: bound.Spec.VolumeName}, pv))
	require.Equal(t, localcluster.Provisioner, pv.Annotations["pv.kubernetes.io/provisioned-by"], "the provisioner made the volume")
	require.Equal(t, corev1.PersistentVolumeReclaimDelete, pv.Spec.PersistentVolumeReclaimPolicy)
	require.NotNil(t, pv.Spec.HostPath, "a hostPath volume: %+v", pv.Spec.PersistentVolumeSource)
	require.Equal(t, localcluster.NodePath, filepath.Dir(pv.Spec.HostPath.Path))
	// The node agent keeps the node's hostPath directories under its own directory.
	onNode := filepath.Join(env.Dir, "node", "hostpath", pv.Spec.HostPath.Path)
	written, err := os.ReadFile(filepath.Join(onNode, "state.txt"))
	require.NoError(t, err, "the pod wrote into the volume's directory on the node")
	require.Equal(t, message, string(written))

	deletePod(t, writer)
	reader := claimPod(ns, "reader", claim.Name, "cat /opt/flink/volume/state.txt")
	require.NoError(t, env.Client.Create(ctx, reader))
	podSucceeds(t, reader)
	logs, err := env.Kube.CoreV1().Pods(ns).GetLogs(reader.Name, &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
	require.NoError(t, err)
	require.Equal(t, message, string(logs), "the second pod read what the first wrote")
	deletePod(t, reader)

	require.NoError(t, env.Client.Delete(ctx, claim))
	wait.Until(t, ctx, 2*time.Minute, "persistentvolume "+pv.Name+" deleted with its claim", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pv), &corev1.PersistentVolume{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	_, err = os.Stat(onNode)
	require.True(t, errors.Is(err, fs.ErrNotExist), "the volume's directory is removed from the node: %v", err)
}

// claimPod is a busybox pod that runs script once with the claim mounted where upstream's
// examples mount theirs.
func claimPod(ns, name, claim, script string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "main", Image: "busybox:1.35.0", Command: []string{"sh", "-c", script},
			VolumeMounts: []corev1.VolumeMount{{Name: "flink-volume", MountPath: "/opt/flink/volume"}}}},
		Volumes: []corev1.Volume{{Name: "flink-volume", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
	}}
}

// podSucceeds waits until the pod has run to completion, fails the test if it failed, and
// returns it as it ended.
func podSucceeds(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	done := wait.Object(t, env.Client, client.ObjectKeyFromObject(pod), 2*time.Minute, pod.Name+" ran to completion",
		func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
	require.Equal(t, corev1.PodSucceeded, done.Status.Phase, "%s: status %+v", pod.Name, done.Status)
	return done
}

// deletePod deletes the pod and waits until it is gone, as a claim's next user would.
func deletePod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, pod)))
	wait.Until(t, ctx, time.Minute, pod.Name+" deleted", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
