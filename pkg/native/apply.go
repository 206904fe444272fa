package native

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Apply creates or updates the objects of a cluster with server-side apply under the
// operator's field manager. The JobManager Deployment goes first; every dependent is then
// owned by it, so deleting the Deployment garbage-collects the cluster. Objects the spec no
// longer asks for (the Ingress, the internal Service once HA is on, the TaskManager pod
// template) are deleted.
//
// Server-side apply of an unchanged object is a no-op for the API server: nothing is written
// and no resourceVersion changes, so reconciling an unchanged spec costs no etcd writes while
// still correcting drift (a field someone edited is set back).
func Apply(ctx context.Context, c client.Client, cluster *Cluster) error {
	jm := cluster.JobManager
	if err := apply(ctx, c, jm); err != nil {
		return err
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: jm.Name, UID: jm.UID,
		Controller: ptr(true), BlockOwnerDeletion: ptr(true)}
	for _, obj := range cluster.Dependents() {
		obj.SetOwnerReferences([]metav1.OwnerReference{owner})
		if err := apply(ctx, c, obj); err != nil {
			return err
		}
	}
	ns, name := jm.Namespace, clusterName(jm)
	if cluster.Ingress != nil {
		if err := apply(ctx, c, cluster.Ingress); err != nil {
			return err
		}
	} else if err := deleteIfOurs(ctx, c, &networkingv1.Ingress{}, ns, IngressName(name)); err != nil {
		return err
	}
	if cluster.InternalService == nil {
		if err := deleteIfOurs(ctx, c, &corev1.Service{}, ns, InternalServiceName(name)); err != nil {
			return err
		}
	}
	if cluster.PodTemplate == nil {
		if err := deleteIfOurs(ctx, c, &corev1.ConfigMap{}, ns, PodTemplateConfigMapName(name)); err != nil {
			return err
		}
	}
	if attempt := jm.Annotations[AnnotationDeployAttempt]; attempt != "" {
		// Everything is in place: only now is the attempt marked complete (the Deployment's own
		// metadata changes, its pods do not).
		jm.Annotations[AnnotationDeployComplete] = attempt
		if err := apply(ctx, c, jm); err != nil {
			return err
		}
	}
	return nil
}

func clusterName(jm *appsv1.Deployment) string { return jm.Labels[LabelApp] }

func apply(ctx context.Context, c client.Client, obj client.Object) error {
	obj.SetManagedFields(nil)
	obj.SetResourceVersion("")
	if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// deleteIfOurs deletes an object this operator applied (it carries our app label), leaving
// alone a same-named object someone else made.
func deleteIfOurs(ctx context.Context, c client.Client, obj client.Object, ns, name string) error {
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if _, ours := obj.GetLabels()[LabelApp]; !ours || !managedByUs(obj) {
		return nil
	}
	if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s/%s: %w", ns, name, err)
	}
	return nil
}

func managedByUs(obj client.Object) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == FieldManager {
			return true
		}
	}
	return false
}

// HALabels are the labels Flink 1.x's Kubernetes HA services put on a cluster's HA ConfigMaps
// (leader election, checkpoint pointers, job graphs). Flink 2.x leaves configmap-type out, so
// the operator finds HA ConfigMaps with HAConfigMaps, never by these labels alone. They are not
// owned by anything, so they survive the cluster: that is what makes last-state upgrades possible.
func HALabels(cluster string) client.MatchingLabels {
	return client.MatchingLabels{LabelApp: cluster, LabelConfigMapType: ConfigMapTypeHA}
}

// HasHAData reports whether a cluster's HA metadata exists: a job's "<cluster>-<jobid>-config-map"
// (checkpoint pointers), or a legacy "-jobmanager-leader" ConfigMap. The cluster-wide
// "<cluster>-cluster-config-map" alone holds no job state.
func HasHAData(ctx context.Context, c client.Client, namespace, cluster string) (bool, error) {
	list, err := HAConfigMaps(ctx, c, namespace, cluster)
	if err != nil {
		return false, err
	}
	for _, cm := range list {
		switch {
		case cm.Name == cluster+"-cluster-config-map":
		case strings.HasSuffix(cm.Name, "-config-map"), strings.HasSuffix(cm.Name, "-jobmanager-leader"):
			return true, nil
		}
	}
	return false, nil
}

// DeleteOptions tune DeleteCluster.
type DeleteOptions struct {
	// KeepHAData leaves the HA ConfigMaps (last-state upgrade, suspend); otherwise they go too.
	KeepHAData bool
	// WaitAtMost bounds how long the JobManager Deployment may stay in its foreground deletion
	// (kubernetes.operator.resource.cleanup.timeout): past it, the wait for its pods is given
	// up and they are left to the garbage collector, so a pod stuck terminating on a lost node
	// never blocks a deletion or an upgrade forever. Zero waits without a bound.
	WaitAtMost time.Duration
	// Now is the current time (time.Now when zero).
	Now time.Time
}

// DeleteCluster starts deleting a cluster and reports whether it is gone. The JobManager
// Deployment is deleted with foreground propagation, so it disappears only after its pods and
// the objects it owns; the Ingress goes too. It never waits: the caller calls again (requeue)
// until gone, and decides how long that may take.
func DeleteCluster(ctx context.Context, c client.Client, namespace, cluster string, opts DeleteOptions) (gone bool, err error) {
	jm := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: JobManagerDeploymentName(cluster)}}
	if err := c.Delete(ctx, jm, client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("delete JobManager deployment %s/%s: %w", namespace, jm.Name, err)
	}
	if err := deleteIfOurs(ctx, c, &networkingv1.Ingress{}, namespace, IngressName(cluster)); err != nil {
		return false, err
	}
	if !opts.KeepHAData {
		if err := deleteHAConfigMaps(ctx, c, namespace, cluster); err != nil {
			return false, err
		}
	}
	err = c.Get(ctx, client.ObjectKeyFromObject(jm), jm)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("get JobManager deployment %s/%s: %w", namespace, jm.Name, err)
	default:
		return false, giveUpForegroundDeletion(ctx, c, jm, opts)
	}
	if opts.KeepHAData {
		return true, nil
	}
	left, err := HAConfigMaps(ctx, c, namespace, cluster)
	if err != nil {
		return false, err
	}
	return len(left) == 0, nil
}

// giveUpForegroundDeletion lets a JobManager Deployment that has waited for its dependents
// longer than opts.WaitAtMost go: without its foregroundDeletion finalizer the object is
// removed at once and its pods and ReplicaSets are collected in the background.
func giveUpForegroundDeletion(ctx context.Context, c client.Client, jm *appsv1.Deployment, opts DeleteOptions) error {
	if opts.WaitAtMost <= 0 || jm.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(jm, metav1.FinalizerDeleteDependents) {
		return nil
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	if now.Sub(jm.DeletionTimestamp.Time) < opts.WaitAtMost {
		return nil
	}
	before := jm.DeepCopy()
	controllerutil.RemoveFinalizer(jm, metav1.FinalizerDeleteDependents)
	if err := c.Patch(ctx, jm, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("stop waiting for the dependents of JobManager deployment %s/%s: %w", jm.Namespace, jm.Name, err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
