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
// Flink's type label is on them in every version, and the operator's caches hold only objects
// that carry it (pkg/cachescope).
func HALabels(cluster string) client.MatchingLabels {
	return client.MatchingLabels{LabelApp: cluster, LabelConfigMapType: ConfigMapTypeHA, LabelType: TypeNative}
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
		case !cm.DeletionTimestamp.IsZero():
			// Being deleted: no longer metadata a job can be recovered from (upstream skips it too).
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
	// (kubernetes.operator.resource.cleanup.timeout), counted from Since: past it, the wait
	// for its pods is given up and they are left to the garbage collector, so a pod stuck
	// terminating on a lost node never blocks a deletion or an upgrade forever. Zero waits
	// without a bound.
	WaitAtMost time.Duration
	// Since is when the caller started deleting the cluster. Zero counts from the Deployment's
	// deletionTimestamp, the moment the API server started deleting it, which needs no
	// bookkeeping and survives an operator restart.
	Since time.Time
	// Now is the current time (time.Now when zero).
	Now time.Time
	// Propagation is how the JobManager Deployment's dependents (its ReplicaSet and pods, the
	// TaskManagers, the cluster's Services and ConfigMaps) are deleted: the value of
	// kubernetes.operator.resource.deletion.propagation (ParseDeletionPropagation). Empty is
	// Foreground, upstream's default: the Deployment is gone only once they are.
	Propagation metav1.DeletionPropagation
}

// DeletionPropagationKey is the operator option choosing DeleteOptions.Propagation.
const DeletionPropagationKey = "kubernetes.operator.resource.deletion.propagation"

// ParseDeletionPropagation reads kubernetes.operator.resource.deletion.propagation: Foreground
// (also when empty), Background or Orphan, in any letter case, as upstream accepts them.
func ParseDeletionPropagation(value string) (metav1.DeletionPropagation, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return metav1.DeletePropagationForeground, nil
	}
	for _, p := range []metav1.DeletionPropagation{metav1.DeletePropagationForeground, metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan} {
		if strings.EqualFold(value, string(p)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %q, want Foreground, Background or Orphan", DeletionPropagationKey, value)
}

// DeleteCluster starts deleting a cluster and reports whether it is gone. The JobManager
// Deployment is deleted with opts.Propagation (foreground by default, so it disappears only
// after its pods and the objects it owns); the Ingress goes too. It never waits: the caller
// calls again (requeue) until gone, and bounds the wait with opts.WaitAtMost.
func DeleteCluster(ctx context.Context, c client.Client, namespace, cluster string, opts DeleteOptions) (gone bool, err error) {
	propagation := opts.Propagation
	if propagation == "" {
		propagation = metav1.DeletePropagationForeground
	}
	jm := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: JobManagerDeploymentName(cluster)}}
	if err := c.Delete(ctx, jm, client.PropagationPolicy(propagation)); client.IgnoreNotFound(err) != nil {
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
	jmGone, err := jobManagerGone(ctx, c, jm)
	if err != nil {
		return false, err
	}
	if !jmGone {
		released, err := giveUpForegroundDeletion(ctx, c, jm, opts)
		if err != nil || !released {
			return false, err
		}
		// Without the finalizer the API server removes the Deployment at once, unless
		// someone else's finalizer still holds it: then it is not gone, and a new cluster
		// must not be applied onto it.
		if jmGone, err = jobManagerGone(ctx, c, jm); err != nil || !jmGone {
			return false, err
		}
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

// jobManagerGone reads the JobManager Deployment into jm and reports whether it no longer exists.
func jobManagerGone(ctx context.Context, c client.Client, jm *appsv1.Deployment) (bool, error) {
	err := c.Get(ctx, client.ObjectKeyFromObject(jm), jm)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("get JobManager deployment %s/%s: %w", jm.Namespace, jm.Name, err)
	}
	return false, nil
}

// giveUpForegroundDeletion lets a JobManager Deployment that has waited for its dependents
// longer than opts.WaitAtMost go, and reports whether it did.
//
// It removes only the foregroundDeletion finalizer, with an optimistic lock: that is the
// step the garbage collector itself takes once the dependents are gone, so the Deployment is
// removed at once and its ReplicaSet and pods, now without an owner, are collected in the
// background, as after a background deletion. The stuck pods keep terminating until their node
// returns or they are force-deleted; they are not force-deleted here, since a JobManager on a
// node that is only unreachable may still run. Re-deleting with background propagation is not
// used because how the API server treats a new propagation policy on an object already
// being deleted is not something to rely on; other finalizers (someone else's) are left alone,
// and an orphan finalizer is never removed, since that would delete what the user chose to keep.
func giveUpForegroundDeletion(ctx context.Context, c client.Client, jm *appsv1.Deployment, opts DeleteOptions) (bool, error) {
	if opts.WaitAtMost <= 0 || jm.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(jm, metav1.FinalizerDeleteDependents) {
		return false, nil
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	since := opts.Since
	if since.IsZero() {
		since = jm.DeletionTimestamp.Time
	}
	if now.Sub(since) < opts.WaitAtMost {
		return false, nil
	}
	before := jm.DeepCopy()
	controllerutil.RemoveFinalizer(jm, metav1.FinalizerDeleteDependents)
	err := c.Patch(ctx, jm, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		return false, nil // changed meanwhile (the garbage collector at work): look again next call
	case err != nil:
		return false, fmt.Errorf("stop waiting for the dependents of JobManager deployment %s/%s: %w", jm.Namespace, jm.Name, err)
	}
	return true, nil
}

func ptr[T any](v T) *T { return &v }
