package nodeagent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func claim(name string, phase corev1.PersistentVolumeClaimPhase, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
}

func volume(name string, src corev1.PersistentVolumeSource) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: src}}
}

// A claim's volume is the directory of the PersistentVolume it is bound to, where the node's
// hostPath directories are (the provisioner's helper pods made it there); a pod whose claim is
// not bound has no volume yet.
func TestClaimDirIsTheBoundVolumesPath(t *testing.T) {
	dir := t.TempDir()
	a := &Agent{opts: Options{Dir: dir}}
	localPath := "/mnt/disks/vol1"
	require.NoError(t, os.MkdirAll(a.hostPathDir(localPath), 0o755))
	a.client = fake.NewClientset(
		claim("pending", corev1.ClaimPending, ""),
		claim("provisioned", corev1.ClaimBound, "pvc-1"),
		claim("local", corev1.ClaimBound, "local-1"),
		claim("local-missing", corev1.ClaimBound, "local-2"),
		claim("nfs", corev1.ClaimBound, "nfs-1"),
		claim("volume-gone", corev1.ClaimBound, "pvc-gone"),
		volume("pvc-1", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: "/opt/local-path-provisioner/pvc-1_ns_provisioned", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}),
		volume("local-1", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: localPath}}),
		volume("local-2", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/none"}}),
		volume("nfs-1", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}}),
	)
	ctx := context.Background()

	got, err := a.claimDir(ctx, "ns", "provisioned")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "hostpath", "opt", "local-path-provisioner", "pvc-1_ns_provisioned"), got)
	assert.DirExists(t, got, "a hostPath volume of type DirectoryOrCreate is created")
	got, err = a.claimDir(ctx, "ns", "local")
	require.NoError(t, err)
	assert.Equal(t, a.hostPathDir(localPath), got)

	for name, want := range map[string]string{
		"pending":       `persistentvolumeclaim "pending" is not bound (phase "Pending")`,
		"missing":       `persistentvolumeclaim "missing": persistentvolumeclaims "missing" not found`,
		"volume-gone":   `persistentvolume "pvc-gone": persistentvolumes "pvc-gone" not found`,
		"local-missing": `persistentvolume "local-2": stat`,
		"nfs":           "only hostPath and local volumes",
	} {
		_, err := a.claimDir(ctx, "ns", name)
		assert.ErrorContains(t, err, want, name)
	}
	assert.NoDirExists(t, filepath.Join(dir, "claims"), "no directory is named after a claim")
}

// The pod waits (prepareVolumes fails, and is retried) until its claim is bound; then the
// claim's volume is the bound PersistentVolume's directory.
func TestPodVolumesWaitForTheClaimToBeBound(t *testing.T) {
	ctx := context.Background()
	a := &Agent{opts: Options{Dir: t.TempDir()}}
	a.client = fake.NewClientset(claim("data", corev1.ClaimPending, ""))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID("0123456789")}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "flink-volume", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	r := &podRunner{a: a, pod: pod, dir: a.podDir(pod), ctx: ctx}

	require.ErrorContains(t, r.prepareVolumes(), `volume flink-volume: persistentvolumeclaim "data" is not bound`)

	_, err := a.client.CoreV1().PersistentVolumes().Create(ctx, volume("pvc-1", corev1.PersistentVolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/opt/local-path-provisioner/pvc-1_ns_data"}}), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = a.client.CoreV1().PersistentVolumeClaims("ns").Update(ctx, claim("data", corev1.ClaimBound, "pvc-1"), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, r.prepareVolumes())
	assert.Equal(t, map[string]string{"flink-volume": a.hostPathDir("/opt/local-path-provisioner/pvc-1_ns_data")}, r.mounts)
}
