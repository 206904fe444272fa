package native

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Apply creates or updates the objects of a cluster with server-side apply under the
// operator's field manager. The JobManager Deployment goes first; every dependent is then
// owned by it, so deleting the Deployment garbage-collects the cluster. Objects the spec no
// longer asks for (the Ingress, the internal Service once HA is on, the TaskManager pod
// template) are deleted.
//
// Nothing is written while any of the cluster's objects exists as someone else's (see
// ownership.go): Apply then returns a *ForeignObjectError and leaves that object alone. live
// reads what exists. It must see objects outside the label-scoped caches (an unlabelled object
// of the same name): the API server itself, or cachescope.Lookup, which answers from the caches
// and a name index and asks the API server only for a name someone else holds. An object live
// did not find is created by applyNew, which never takes over an object that exists after all
// (one made since it was looked up, or one an index had not heard of yet): ownership is then
// judged on the API server's copy, and a foreign one leaves that object alone as above (though
// objects applied before it, the JobManager Deployment first, stay written).
//
// The reads of the ownership check, and then the writes after the JobManager's, are
// independent of one another and go out together: a new cluster costs three round trips to the
// API server instead of one per object, which is what bounds how fast many clusters start.
// Whether every object was applied is recorded by the caller (the reconciler's status), not here.
//
// Server-side apply of an unchanged object is a no-op for the API server: nothing is written
// and no resourceVersion changes, so reconciling an unchanged spec costs no etcd writes while
// still correcting drift (a field someone edited is set back).
func Apply(ctx context.Context, c client.Client, live client.Reader, cluster *Cluster) error {
	jm := cluster.JobManager
	_, absent, err := claim(ctx, live, cluster)
	if err != nil {
		return err
	}
	fresh := freshReader(live)
	ns, name := jm.Namespace, clusterName(jm)
	ours := owners{cluster: name, resource: cluster.Owner}
	if err := write(ctx, c, fresh, jm, absent[0], ours); err != nil {
		return err
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: jm.Name, UID: jm.UID,
		Controller: ptr(true), BlockOwnerDeletion: ptr(true)}
	ours.dependent, ours.jobManager = true, jm.UID
	g, gctx := errgroup.WithContext(ctx)
	for i, obj := range cluster.Dependents() {
		obj.SetOwnerReferences([]metav1.OwnerReference{owner})
		g.Go(func() error { return write(gctx, c, fresh, obj, absent[1+i], ours) })
	}
	if cluster.Ingress != nil {
		// The Ingress is last in cluster.Objects().
		g.Go(func() error { return write(gctx, c, fresh, cluster.Ingress, absent[len(absent)-1], ours) })
	} else if !cluster.IngressUnmanaged {
		g.Go(func() error { return deleteIfOurs(gctx, c, live, &networkingv1.Ingress{}, ns, IngressName(name), ours) })
	}
	if cluster.InternalService == nil {
		g.Go(func() error {
			return deleteIfOurs(gctx, c, live, &corev1.Service{}, ns, flinkconf.InternalServiceName(name), ours)
		})
	}
	if cluster.PodTemplate == nil {
		g.Go(func() error {
			return deleteIfOurs(gctx, c, live, &corev1.ConfigMap{}, ns, PodTemplateConfigMapName(name), ours)
		})
	}
	return g.Wait()
}

// freshReader is the reader that does not lag: live's Fresh() when it has one (a reader
// answering from caches), else live itself (the API server).
func freshReader(live client.Reader) client.Reader {
	if f, ok := live.(interface{ Fresh() client.Reader }); ok {
		return f.Fresh()
	}
	return live
}

// write applies obj: with applyNew when the ownership check found it absent, else with apply.
func write(ctx context.Context, c client.Client, fresh client.Reader, obj client.Object, absent bool, ours owners) error {
	if absent {
		return applyNew(ctx, c, fresh, obj, ours)
	}
	return apply(ctx, c, obj)
}

// absentVersion is the resourceVersion applyNew sends. The API server ignores a
// resourceVersion when an apply creates the object, and refuses the apply (409 Conflict) when
// the object exists with another one. It is etcd's first revision, which the first write of a
// new cluster's bootstrap takes: no ConfigMap, Service, Deployment or Ingress a tenant can
// make has it.
const absentVersion = "1"

// applyNew creates obj by server-side apply, as apply would, but only if no object of its name
// exists: one that does (someone else's made meanwhile, or the cluster's own that a cache had not
// seen yet) is read from the API server and judged, then applied to only if it is the cluster's.
// A new object thus costs one request, and an existing one is never taken over unjudged.
func applyNew(ctx context.Context, c client.Client, fresh client.Reader, obj client.Object, ours owners) error {
	obj.SetManagedFields(nil)
	obj.SetResourceVersion(absentVersion)
	err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership) //nolint:staticcheck // SA1019: see apply
	if err == nil {
		return nil
	}
	if !apierrors.IsConflict(err) {
		return fmt.Errorf("apply %s %s/%s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), err)
	}
	existing, err := readLive(ctx, fresh, obj)
	if err != nil {
		return err
	}
	if existing != nil {
		if why := ours.foreignReason(existing); why != "" {
			return &ForeignObjectError{Kind: kindOf(obj), Namespace: existing.GetNamespace(), Name: existing.GetName(), Why: why}
		}
	}
	return apply(ctx, c, obj)
}

func clusterName(jm *appsv1.Deployment) string { return jm.Labels[LabelApp] }

func apply(ctx context.Context, c client.Client, obj client.Object) error {
	obj.SetManagedFields(nil)
	obj.SetResourceVersion("")
	// Server-side apply of the typed object pkg/native built whole. client.Apply is deprecated for
	// Client.Apply with apply configurations, which would mean building every object as one: a
	// change of its own, not part of the controller-runtime upgrade.
	if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil { //nolint:staticcheck // SA1019: see above
		return fmt.Errorf("apply %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// deleteIfOurs deletes an object of the cluster (ownership.go), leaving alone a same-named
// object someone else made. The deletion is conditional on the UID read, so an object replaced
// meanwhile is not deleted either.
func deleteIfOurs(ctx context.Context, c client.Client, r client.Reader, obj client.Object, ns, name string, ours owners) error {
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ours.foreignReason(obj) != "" {
		return nil
	}
	uid := obj.GetUID()
	if err := c.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
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
	// Objects reads the cluster's Ingress for the ownership check before it is deleted: the
	// reader Apply uses (caches, then the name index, then the API server), so that a cluster
	// without an Ingress costs no request to find that out. Nil reads through the client.
	Objects client.Reader
	// Owner is the FlinkDeployment's UID: only objects it owns (directly or through its
	// JobManager Deployment) are deleted.
	Owner types.UID
	// Live reads from the API server, not the cache: whether HA ConfigMaps are left once the
	// JobManager is gone. Nil reads through the client.
	Live client.Reader
	// Propagation is how the JobManager Deployment's dependents (its ReplicaSet and pods, the
	// TaskManagers, the cluster's Services and ConfigMaps) are deleted: the value of
	// kubernetes.operator.resource.deletion.propagation (ParseDeletionPropagation). Empty is
	// Foreground, upstream's default: the Deployment is gone only once they are.
	Propagation metav1.DeletionPropagation
}

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
	return "", fmt.Errorf("%s: %q, want Foreground, Background or Orphan", options.DeletionPropagation.Key, value)
}

// DeleteCluster starts deleting a cluster and reports whether it is gone. The JobManager
// Deployment is deleted with opts.Propagation (foreground by default, so it disappears only
// after its pods and the objects it owns); the Ingress goes too, and the HA ConfigMaps (unless
// opts.KeepHAData) once the Deployment is gone (haMetadataGone). It never waits: the caller
// calls again (requeue) until gone, and bounds the wait with opts.WaitAtMost.
//
// Only objects of the cluster are deleted (ownership.go, with opts.Owner): a Deployment or
// Ingress of the cluster's names that someone else made is left, and counts as gone.
func DeleteCluster(ctx context.Context, c client.Client, namespace, cluster string, opts DeleteOptions) (gone bool, err error) {
	propagation := opts.Propagation
	if propagation == "" {
		propagation = metav1.DeletePropagationForeground
	}
	jm, err := ownJobManager(ctx, c, namespace, cluster, opts.Owner)
	if err != nil {
		return false, err
	}
	ours := owners{cluster: cluster, resource: opts.Owner, dependent: true}
	if jm != nil {
		ours.jobManager = jm.UID
		if err := c.Delete(ctx, jm, client.PropagationPolicy(propagation), client.Preconditions{UID: &jm.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("delete JobManager deployment %s/%s: %w", namespace, jm.Name, err)
		}
	}
	objects := opts.Objects
	if objects == nil {
		objects = c
	}
	if err := deleteIfOurs(ctx, c, objects, &networkingv1.Ingress{}, namespace, IngressName(cluster), ours); err != nil {
		return false, err
	}
	if jm != nil {
		if jm, err = ownJobManager(ctx, c, namespace, cluster, opts.Owner); err != nil {
			return false, err
		}
	}
	if jm != nil {
		released, err := giveUpForegroundDeletion(ctx, c, jm, opts)
		if err != nil || !released {
			return false, err
		}
		// Without the finalizer the API server removes the Deployment at once, unless
		// someone else's finalizer still holds it: then it is not gone, and a new cluster
		// must not be applied onto it.
		if jm, err = ownJobManager(ctx, c, namespace, cluster, opts.Owner); err != nil || jm != nil {
			return false, err
		}
	}
	if opts.KeepHAData {
		return true, nil
	}
	return haMetadataGone(ctx, c, opts.Live, namespace, cluster)
}

// haMetadataGone deletes the cluster's HA ConfigMaps once its JobManager Deployment is gone, as
// upstream deletes HA data only after its blocking cluster deletion, and reports whether they
// are gone.
//
// Not before: a JobManager that sees its leader ConfigMap deleted under it fails fatally, and
// its JVM then hung on the SIGTERM of its pod until Flink's shutdown safeguard halted it 5 s
// later (exit code 239), which every savepoint upgrade and suspend waited for (make
// bench-flink's timeline). And the ConfigMaps are listed by the API server (live; c when nil),
// not the cache, which can miss one the JobManager wrote just before it went: a new JobManager
// of the cluster would recover it. Only their metadata is listed: any ConfigMap a tenant labels
// with the cluster's name is in that list, and its data (up to 1 MiB each) is never decoded.
func haMetadataGone(ctx context.Context, c client.Client, live client.Reader, namespace, cluster string) (bool, error) {
	if live == nil {
		live = c
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := live.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{LabelApp: cluster}); err != nil {
		return false, fmt.Errorf("list HA ConfigMaps of %s/%s: %w", namespace, cluster, err)
	}
	for _, item := range list.Items {
		cm := &corev1.ConfigMap{ObjectMeta: item.ObjectMeta}
		if !IsHAConfigMap(cm) {
			continue
		}
		if err := c.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("delete HA ConfigMap %s/%s: %w", namespace, cm.Name, err)
		}
	}
	return true, nil
}

// ownJobManager reads the cluster's JobManager Deployment; nil when there is none, or when the
// Deployment of that name is not the cluster's (someone else's is never deleted nor waited for).
func ownJobManager(ctx context.Context, c client.Client, namespace, cluster string, owner types.UID) (*appsv1.Deployment, error) {
	jm := &appsv1.Deployment{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: JobManagerDeploymentName(cluster)}, jm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get JobManager deployment %s/%s: %w", namespace, JobManagerDeploymentName(cluster), err)
	}
	if (owners{cluster: cluster, resource: owner}).foreignReason(jm) != "" {
		return nil, nil
	}
	return jm, nil
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
