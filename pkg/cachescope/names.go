package cachescope

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/flink-operator/flink-operator/pkg/native"
)

// NameIndex knows which names are taken, in the watched namespaces, among the kinds of a Flink
// cluster's objects the operator looks up by name before writing them (ConfigMaps, Services,
// Deployments and Ingresses), by objects the label-scoped caches do not hold. A miss in those
// caches does not mean that nothing of that name exists: an unlabelled ConfigMap of the same
// name is someone else's and must not be taken over. Without the index every such miss was asked
// of the API server, which answered 404 for every object of every new cluster (six round trips
// per new FlinkDeployment). The index answers those misses from memory instead.
//
// It is a metadata-only cache (the API server sends object metadata, not data or specs) of
// which only namespace, name and UID are kept, and it leaves out what carries Flink's type label
// (or, of Ingresses, the Flink Ingress component label): the scoped caches hold those, so the
// index grows with the namespaces' other objects only, a few hundred bytes each. An object of
// Flink's labels outside the scope (a type label without an app label) is in neither; Apply's
// create-only write still finds it (pkg/native.applyNew). --name-index=false trades the index
// for one GET per miss.
type NameIndex struct {
	cache  cache.Cache
	kinds  map[schema.GroupVersionKind]bool
	scheme *runtime.Scheme
}

// indexedKinds are the kinds of a cluster's objects looked up by name before they are written.
// Pods are not: the operator lists them by label, never reads one by name.
func indexedKinds() []client.Object {
	return []client.Object{&corev1.ConfigMap{}, &corev1.Service{}, &appsv1.Deployment{}, &networkingv1.Ingress{}}
}

// outsideScope selects, of each indexed kind, what the scoped caches do not hold, as nearly as
// one label selector can: without Flink's type label (the scope is an app label and that
// type), and for Ingresses without the Flink Ingress component.
func outsideScope() map[client.Object]labels.Selector {
	notFlink := labels.NewSelector().Add(requirement(native.LabelType, selection.NotIn, native.TypeNative, native.TypeStandalone))
	notFlinkIngress := labels.NewSelector().Add(requirement(native.LabelComponent, selection.NotEquals, native.ComponentIngress))
	return map[client.Object]labels.Selector{
		&corev1.ConfigMap{}: notFlink, &corev1.Service{}: notFlink, &appsv1.Deployment{}: notFlink,
		&networkingv1.Ingress{}: notFlinkIngress,
	}
}

// NewNameIndex builds the index over the watched namespaces (nil: all). It holds nothing until
// started (it is a manager runnable); lookups wait for its first list.
func NewNameIndex(cfg *rest.Config, scheme *runtime.Scheme, namespaces map[string]cache.Config) (*NameIndex, error) {
	byObject := map[client.Object]cache.ByObject{}
	for obj, sel := range outsideScope() {
		byObject[obj] = cache.ByObject{Label: sel, Transform: KeepName}
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: namespaces, DefaultTransform: KeepName, ByObject: byObject})
	if err != nil {
		return nil, fmt.Errorf("name index: %w", err)
	}
	n := &NameIndex{cache: c, kinds: map[schema.GroupVersionKind]bool{}, scheme: scheme}
	for _, obj := range indexedKinds() {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, fmt.Errorf("name index: %w", err)
		}
		n.kinds[gvk] = true
		// Registered now so that every kind's list starts with the index, not on the first lookup.
		if _, err := c.GetInformer(context.Background(), metadataOf(gvk)); err != nil {
			return nil, fmt.Errorf("name index of %s: %w", gvk.Kind, err)
		}
	}
	return n, nil
}

func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// Start runs the index until ctx ends (manager.Runnable).
func (n *NameIndex) Start(ctx context.Context) error { return n.cache.Start(ctx) }

// WaitForCacheSync says whether the index has listed every kind it covers (false before it
// is started): until then a lookup cannot answer from it and asks the API server.
func (n *NameIndex) WaitForCacheSync(ctx context.Context) bool { return n.cache.WaitForCacheSync(ctx) }

// NeedLeaderElection is false: a standby keeps its index warm for the moment it leads.
func (n *NameIndex) NeedLeaderElection() bool { return false }

// Covers says whether the index knows the names of obj's kind.
func (n *NameIndex) Covers(obj client.Object) bool {
	gvk, err := apiutil.GVKForObject(obj, n.scheme)
	return err == nil && n.kinds[gvk]
}

// Taken says whether an object of obj's kind outside the scoped caches exists under key, as
// the index last heard from the API server (it may lag by the watch's latency).
func (n *NameIndex) Taken(ctx context.Context, obj client.Object, key client.ObjectKey) (bool, error) {
	gvk, err := apiutil.GVKForObject(obj, n.scheme)
	if err != nil {
		return false, err
	}
	err = n.cache.Get(ctx, key, metadataOf(gvk))
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("name index: %w", err)
	}
	return true, nil
}

// KeepName is the index's cache transform: of an object's metadata, its namespace, name, UID
// and resourceVersion (which the informer resumes its watch from).
func KeepName(in any) (any, error) {
	m, ok := in.(*metav1.PartialObjectMetadata)
	if !ok {
		return in, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion}}, nil
}

// Lookup reads an object of a cluster's names as the ownership check needs it (pkg/native):
// from the scoped cache when it holds it; as absent, without a request, when the name index
// says no object has that name; from the API server otherwise (an object outside the scope,
// someone else's, whose owner and labels must be judged as they are). Lists go to the API
// server. With no index, every miss of the cache is asked of the API server.
type Lookup struct {
	Cache client.Reader
	Names Names
	Live  client.Reader
}

// Names is what Lookup asks of a NameIndex.
type Names interface {
	Covers(obj client.Object) bool
	Taken(ctx context.Context, obj client.Object, key client.ObjectKey) (bool, error)
}

var _ client.Reader = Lookup{}

// Get reads key into obj (see Lookup).
func (l Lookup) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := l.Cache.Get(ctx, key, obj, opts...)
	if !apierrors.IsNotFound(err) {
		return err
	}
	if l.Names != nil && l.Names.Covers(obj) {
		taken, indexErr := l.Names.Taken(ctx, obj, key)
		if indexErr == nil && !taken {
			return err
		}
	}
	return l.Live.Get(ctx, key, obj, opts...)
}

// List lists from the API server.
func (l Lookup) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return l.Live.List(ctx, list, opts...)
}

// Fresh is the API server itself, for a read that must not lag (pkg/native re-reads an object
// whose create found it already there).
func (l Lookup) Fresh() client.Reader { return l.Live }
