package nodeagent

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// claimDir is the directory of the PersistentVolume a pod's claim is bound to, on this node:
// a hostPath or local volume's path under the agent's hostPath directory, where hostPath
// volumes of pods are too (the storage provisioner's helper pods create and remove it there).
// A claim that is not bound yet is an error, so the pod waits in ContainerCreating as on a
// kubelet; the scheduler holds back pods with unbound claims, but a pod can name its node.
func (a *Agent) claimDir(ctx context.Context, namespace, claim string) (string, error) {
	pvc, err := a.client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q: %w", claim, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("persistentvolumeclaim %q is not bound (phase %q)", claim, pvc.Status.Phase)
	}
	pv, err := a.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q: persistentvolume %q: %w", claim, pvc.Spec.VolumeName, err)
	}
	switch {
	case pv.Spec.HostPath != nil:
		dir := a.hostPathDir(pv.Spec.HostPath.Path)
		if t := pv.Spec.HostPath.Type; t == nil || *t == corev1.HostPathDirectoryOrCreate || *t == corev1.HostPathUnset {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return "", err
			}
		}
		return existingDir(dir, pv.Name)
	case pv.Spec.Local != nil:
		return existingDir(a.hostPathDir(pv.Spec.Local.Path), pv.Name)
	default:
		return "", fmt.Errorf("persistentvolume %q: only hostPath and local volumes can be mounted by the local node agent", pv.Name)
	}
}

// existingDir returns dir if it is a directory; a volume whose path is missing cannot be
// mounted, as kubelet reports it.
func existingDir(dir, volume string) (string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("persistentvolume %q: %w", volume, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("persistentvolume %q: %s is not a directory", volume, dir)
	}
	return dir, nil
}
