// Package cachescope decides what the operator's informer caches hold: the Kubernetes objects
// of Flink clusters (the operator's own, Flink's, and those the Apache operator made for
// clusters this one adopts), never every Pod, ConfigMap, Service, Deployment and Ingress of
// the watched namespaces. A cluster-wide operator caching all of them grows with the cluster,
// not with the Flink clusters it runs, and is OOM-killed before its caches sync on a large one.
//
// Every object of a Flink cluster carries Flink's labels: app=<cluster> with
// type=flink-native-kubernetes or type=flink-standalone-kubernetes (the JobManager and
// TaskManager Deployments and pods, the Services, the configuration and pod template
// ConfigMaps, and the HA ConfigMaps Flink itself writes, on 1.x and 2.x), or, for the Ingress,
// app=<cluster> with component=ingress. The caches of those kinds are limited to them.
//
// A read by name must still see an object outside that scope (a same-named Deployment or
// Service someone else made is still there, whatever its labels), so the client NewClient
// builds confirms with the API server every Get of a scoped kind the cache does not hold.
// Lists are answered by the cache alone: list through a label selector within the scope.
package cachescope

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/flink-operator/flink-operator/pkg/native"
)

// FlinkObjects selects the objects of Flink clusters: an app label and Flink's type label.
func FlinkObjects() labels.Selector {
	return labels.NewSelector().Add(
		requirement(native.LabelApp, selection.Exists),
		requirement(native.LabelType, selection.In, native.TypeNative, native.TypeStandalone))
}

// Ingresses selects the Ingresses of Flink clusters, which carry no type label.
func Ingresses() labels.Selector {
	return labels.NewSelector().Add(
		requirement(native.LabelApp, selection.Exists),
		requirement(native.LabelComponent, selection.Equals, native.ComponentIngress))
}

func requirement(key string, op selection.Operator, values ...string) labels.Requirement {
	r, err := labels.NewRequirement(key, op, values)
	if err != nil { // the keys and values are constants: a failure is a programming error
		panic(fmt.Sprintf("label requirement %s %s %v: %v", key, op, values, err))
	}
	return *r
}

// scoped are the kinds whose caches are limited, with their selectors.
func scoped() map[client.Object]labels.Selector {
	return map[client.Object]labels.Selector{
		&corev1.Pod{}:           FlinkObjects(),
		&corev1.ConfigMap{}:     FlinkObjects(),
		&corev1.Service{}:       FlinkObjects(),
		&appsv1.Deployment{}:    FlinkObjects(),
		&networkingv1.Ingress{}: Ingresses(),
	}
}

// Options are the manager's cache options: the watched namespaces (nil: all), the scoped
// kinds limited to Flink's objects, and managed fields dropped from what is not the operator's.
func Options(namespaces map[string]cache.Config) cache.Options {
	byObject := map[client.Object]cache.ByObject{}
	for obj, sel := range scoped() {
		byObject[obj] = cache.ByObject{Label: sel, Transform: transformOf(obj)}
	}
	return cache.Options{DefaultNamespaces: namespaces, ByObject: byObject, DefaultTransform: StripForeignManagedFields}
}

// transformOf is the cache transform of a scoped kind: foreign managed fields dropped, and what
// the operator never reads of its own ConfigMaps and of Deployments. Memory is then spent on what
// it reads: with 10,000 clusters, their configuration files and pod templates were the larger
// part of the caches.
func transformOf(obj client.Object) toolscache.TransformFunc {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return chain(StripForeignManagedFields, DropOwnConfigMapData)
	case *appsv1.Deployment:
		return chain(StripForeignManagedFields, TrimDeployment)
	default:
		return StripForeignManagedFields
	}
}

func chain(fs ...toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		var err error
		for _, f := range fs {
			if in, err = f(in); err != nil {
				return nil, err
			}
		}
		return in, nil
	}
}

// DropOwnConfigMapData drops the data of a cluster's configuration and pod template ConfigMaps
// (the operator writes them whole with server-side apply and never reads them back). Every other
// ConfigMap keeps its data: the HA ConfigMaps' checkpoint pointers and job graphs are what a
// last-state upgrade decides on.
func DropOwnConfigMapData(in any) (any, error) {
	cm, ok := in.(*corev1.ConfigMap)
	if !ok {
		return in, nil
	}
	cluster := cm.Labels[native.LabelApp]
	if cluster != "" && (cm.Name == native.ConfigMapName(cluster) || cm.Name == native.PodTemplateConfigMapName(cluster)) {
		cm.Data, cm.BinaryData = nil, nil
	}
	return cm, nil
}

// TrimDeployment drops a Deployment's pod spec and the field sets of its managed fields (the
// managers' names stay, which tell the operator's own objects): the operator reads a
// Deployment's metadata, replicas and status, and changes it only by server-side apply of an
// object it builds, or by a merge patch of its replicas, never by an update sending the cached
// copy back.
func TrimDeployment(in any) (any, error) {
	d, ok := in.(*appsv1.Deployment)
	if !ok {
		return in, nil
	}
	d.Spec.Template.Spec = corev1.PodSpec{}
	mfs := d.GetManagedFields()
	for i := range mfs {
		mfs[i].FieldsV1 = nil
	}
	return d, nil
}

// StripForeignManagedFields is the caches' transform: it drops the managed fields (often the
// larger part of an object) of every object the operator never applied, and leaves the
// operator's own objects whole. Whole, because the operator tells its own objects from
// same-named ones by its field manager before deleting them (native.Apply), and because
// an Update sending a partial list would replace the object's managed fields; without any,
// the API server keeps them as they are.
func StripForeignManagedFields(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil // not an object (a tombstone): nothing to strip
	}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == native.FieldManager {
			return in, nil
		}
	}
	obj.SetManagedFields(nil)
	return in, nil
}

// NewClient is the manager's client constructor (manager.Options.NewClient): reads come from
// the cache, and a Get of a scoped kind that the cache does not hold is asked of the API
// server, so an object outside the scope is still seen where the operator looks it up by name.
func NewClient(cfg *rest.Config, o client.Options) (client.Client, error) {
	cached, err := client.New(cfg, o)
	if err != nil {
		return nil, err
	}
	direct := o
	direct.Cache = nil
	live, err := client.New(cfg, direct)
	if err != nil {
		return nil, err
	}
	kinds := map[schema.GroupVersionKind]bool{}
	for obj := range scoped() {
		gvk, err := apiutil.GVKForObject(obj, cached.Scheme())
		if err != nil {
			return nil, fmt.Errorf("cache scope: %w", err)
		}
		kinds[gvk] = true
	}
	return &confirmingClient{Client: cached, live: live, kinds: kinds}, nil
}

// confirmingClient asks the API server for scoped objects its cache does not hold.
type confirmingClient struct {
	client.Client
	live  client.Reader
	kinds map[schema.GroupVersionKind]bool
}

func (c *confirmingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	if !apierrors.IsNotFound(err) {
		return err
	}
	gvk, gvkErr := apiutil.GVKForObject(obj, c.Scheme())
	if gvkErr != nil || !c.kinds[gvk] {
		return err
	}
	return c.live.Get(ctx, key, obj, opts...)
}
