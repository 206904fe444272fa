package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The cluster's storage: PersistentVolumeClaims are bound as on a real cluster, by the
// controller manager's persistentvolume-binder and a real dynamic provisioner, Rancher's
// local-path-provisioner, run out of cluster on the machine with the admin kubeconfig. Its
// volumes are directories under NodePath on the node, made and removed by helper pods of
// HelperImage that it starts on the node; the node agent runs them (busybox) and mounts a
// bound claim's volume from the same directory.
const (
	// LocalPathProvisionerVersion is the release `make cluster-assets` builds into BinDir, as
	// local-path-provisioner-<version>. Keep in step with LOCAL_PATH_PROVISIONER_VERSION in
	// the Makefile.
	LocalPathProvisionerVersion = "v0.0.30"
	// StorageClassName is the default StorageClass: claims without a class get it. Volumes
	// are provisioned once a pod uses the claim (WaitForFirstConsumer), on that pod's node, and
	// deleted with their claim.
	StorageClassName = "local-path"
	// Provisioner is the provisioner name the StorageClass names.
	Provisioner = "rancher.io/local-path"
	// StorageNamespace holds the provisioner's configuration and its helper pods.
	StorageNamespace = "local-path-storage"
	// NodePath is the node's directory the volumes are made in (the node agent keeps hostPath
	// directories under its own directory).
	NodePath = "/opt/local-path-provisioner"
	// HelperImage is what the helper pods run.
	HelperImage = "busybox:1.35.0"

	storageConfigMap      = "local-path-config"
	storageServiceAccount = "local-path-provisioner-service-account"
)

// localPathProvisioner is the provisioner's binary in BinDir.
const localPathProvisioner = "local-path-provisioner-" + LocalPathProvisionerVersion

// The helper pods' scripts get the volume's directory as it is mounted in the helper pod in
// VOL_DIR. Claims are file systems only (VOL_MODE Block is not supported here). The directory
// is open to every user, as pods of any user share it.
const (
	setupScript = `#!/bin/sh
set -eu
mkdir -m 0777 -p "$VOL_DIR"
`
	teardownScript = `#!/bin/sh
set -eu
rm -rf "$VOL_DIR"
`
)

// storageConfig is the provisioner's configuration (config.json): every node makes volumes
// under NodePath.
var storageConfig = fmt.Sprintf(`{"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [%q]}]}`, NodePath)

// helperPod is the template of the helper pods; the provisioner adds their command, the
// scripts, the node directory's volume and the node. They do not talk to the API server.
var helperPod = fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: helper-pod
spec:
  automountServiceAccountToken: false
  containers:
  - name: helper-pod
    image: %s
    imagePullPolicy: IfNotPresent
`, HelperImage)

// startStorage creates the provisioner's namespace, ServiceAccount and ConfigMap and the
// default StorageClass, then starts the provisioner.
func (c *Cluster) startStorage(ctx context.Context) error {
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", what, err)
		}
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: StorageNamespace}}
	_, err = kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err := create("namespace "+StorageNamespace, err); err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: storageServiceAccount, Namespace: StorageNamespace}}
	_, err = kube.CoreV1().ServiceAccounts(StorageNamespace).Create(ctx, sa, metav1.CreateOptions{})
	if err := create("serviceaccount "+storageServiceAccount, err); err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: storageConfigMap, Namespace: StorageNamespace},
		Data: map[string]string{"config.json": storageConfig, "setup": setupScript, "teardown": teardownScript, "helperPod.yaml": helperPod}}
	_, err = kube.CoreV1().ConfigMaps(StorageNamespace).Create(ctx, cm, metav1.CreateOptions{})
	if err := create("configmap "+storageConfigMap, err); err != nil {
		return err
	}
	_, err = kube.StorageV1().StorageClasses().Create(ctx, defaultStorageClass(), metav1.CreateOptions{})
	if err := create("storageclass "+StorageClassName, err); err != nil {
		return err
	}
	// The provisioner finds its configuration in the ConfigMap; --debug logs each volume's
	// helper pod. It runs with the admin kubeconfig: it creates PersistentVolumes and pods.
	return c.run(localPathProvisioner, "--debug", "start", "--kubeconfig="+c.Kubeconfig,
		"--namespace="+StorageNamespace, "--provisioner-name="+Provisioner, "--configmap-name="+storageConfigMap,
		"--service-account-name="+storageServiceAccount, "--helper-image="+HelperImage)
}

// defaultStorageClass is the cluster's only StorageClass, marked default so that the API
// server's DefaultStorageClass admission gives it to claims that name none.
func defaultStorageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: StorageClassName, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       Provisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}
