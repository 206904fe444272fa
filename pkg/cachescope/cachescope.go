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
	"strings"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
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
	return cache.Options{DefaultNamespaces: namespaces, ByObject: byObject, DefaultTransform: chain(StripForeignManagedFields, ShareStableSpec, InternStatusStrings)}
}

// InternStatusStrings makes the strings a FlinkDeployment's or FlinkSessionJob's metadata and
// status conditions share with other resources one copy each (internMetadata; the conditions'
// types, statuses, reasons and messages, and the lifecycle and job states): decoded, each
// resource had copies of its own, and its six conditions were a third of a cached resource
// (about 1.3 of 4.4 KB). The values read are unchanged.
func InternStatusStrings(in any) (any, error) {
	var st *flinkv1beta1.CommonStatus
	switch o := in.(type) {
	case *flinkv1beta1.FlinkDeployment:
		internMetadata(o)
		st = &o.Status.CommonStatus
		o.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerDeploymentStatus(intern(string(o.Status.JobManagerDeploymentStatus)))
	case *flinkv1beta1.FlinkSessionJob:
		internMetadata(o)
		st = &o.Status.CommonStatus
	default:
		return in, nil
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status, c.Reason, c.Message = intern(c.Type), metav1.ConditionStatus(intern(string(c.Status))), intern(c.Reason), intern(c.Message)
	}
	st.LifecycleState = flinkv1beta1.LifecycleState(intern(string(st.LifecycleState)))
	st.JobStatus.State = flinkv1beta1.JobStatusState(intern(string(st.JobStatus.State)))
	st.ReconciliationStatus.State = flinkv1beta1.ReconciliationState(intern(string(st.ReconciliationStatus.State)))
	return in, nil
}

// ShareStableSpec makes a FlinkDeployment's or FlinkSessionJob's status.reconciliationStatus
// lastStableSpec share its bytes with lastReconciledSpec when the two are equal, as they are
// whenever the last change became stable: decoded, each was a copy of its own, the largest
// strings of a cached resource and half of them duplicates. The values read are unchanged.
func ShareStableSpec(in any) (any, error) {
	var rs *flinkv1beta1.ReconciliationStatus
	switch o := in.(type) {
	case *flinkv1beta1.FlinkDeployment:
		rs = &o.Status.ReconciliationStatus
	case *flinkv1beta1.FlinkSessionJob:
		rs = &o.Status.ReconciliationStatus
	default:
		return in, nil
	}
	if rs.LastStableSpec == rs.LastReconciledSpec {
		rs.LastStableSpec = rs.LastReconciledSpec
	}
	return in, nil
}

// transformOf is the cache transform of a scoped kind: foreign managed fields dropped, and what
// the operator never reads of ConfigMaps, Pods and Deployments. Memory is then spent on what it
// reads: with 10,000 clusters, their configuration files and pod templates were the larger part
// of the caches. And what lands in the caches is partly the tenants' choice (any object with
// an app label and Flink's type label, and the HA ConfigMaps Flink's JobManager writes with the
// tenant's permissions), so what is kept of it must not grow with what a tenant writes there.
func transformOf(obj client.Object) toolscache.TransformFunc {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return chain(StripForeignManagedFields, TrimConfigMap)
	case *corev1.Pod:
		return chain(StripForeignManagedFields, TrimPod)
	case *appsv1.Deployment:
		return chain(StripForeignManagedFields, TrimDeployment)
	case *corev1.Service:
		return chain(StripForeignManagedFields, TrimService)
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

// TrimConfigMap keeps of a ConfigMap what the operator reads: its metadata without annotations
// and, of an HA ConfigMap (native.IsHAConfigMap), the keys of its job graphs and checkpoint
// pointers without their values (upstream's FlinkUtils reads the keys only too). Every other
// ConfigMap loses its data: the operator writes its own configuration and pod template whole
// with server-side apply and never reads them back, and a tenant's ConfigMap labelled into the
// scope is nothing it reads. An HA ConfigMap changes only by a patch naming the keys removed
// (native.DeleteJobGraphs), never by an update sending the cached copy back.
func TrimConfigMap(in any) (any, error) {
	cm, ok := in.(*corev1.ConfigMap)
	if !ok {
		return in, nil
	}
	cm.Annotations, cm.BinaryData = nil, nil
	compactMetadata(cm)
	if !native.IsHAConfigMap(cm) {
		cm.Data = nil
		return cm, nil
	}
	var keys map[string]string
	for k := range cm.Data {
		if native.IsHAKeyRead(k) {
			if keys == nil {
				keys = map[string]string{}
			}
			keys[k] = ""
		}
	}
	cm.Data = keys
	return cm, nil
}

// TrimPod keeps of a pod its metadata without annotations, and its status: the operator reads
// the JobManager pods' container states (a container that cannot start) and the REST pods'
// readiness and IP, never a pod's spec, and it never writes a pod.
func TrimPod(in any) (any, error) {
	p, ok := in.(*corev1.Pod)
	if !ok {
		return in, nil
	}
	p.Annotations = nil
	p.Spec = corev1.PodSpec{}
	internMetadata(p)
	return p, nil
}

// operatorAnnotationPrefix starts the annotations the operator writes on the JobManager
// Deployment (deploy attempt, generation, deploy complete) and reads back.
const operatorAnnotationPrefix = "flinkdeployment.flink.apache.org/"

// TrimDeployment drops a Deployment's pod template (its spec, labels and annotations) and
// selector, the annotations the operator did not write, and the field sets of its managed fields (the
// managers' names stay, which tell the operator's own objects): the operator reads a
// Deployment's metadata, its own annotations, replicas and status, and changes it only by
// server-side apply of an object it builds, or by a merge patch of its replicas, never by an
// update sending the cached copy back.
func TrimDeployment(in any) (any, error) {
	d, ok := in.(*appsv1.Deployment)
	if !ok {
		return in, nil
	}
	d.Spec.Template, d.Spec.Selector = corev1.PodTemplateSpec{}, nil
	for k := range d.Annotations {
		if !strings.HasPrefix(k, operatorAnnotationPrefix) {
			delete(d.Annotations, k)
		}
	}
	compactMetadata(d)
	return d, nil
}

// TrimService keeps of a Service's spec what the REST Service check and the JobManager
// lookup read (type, external name, selector), and drops the field sets of its managed fields
// (the managers' names stay, which tell the operator's own): the operator applies its Services
// whole and never sends a cached one back. With a thousand clusters the field sets were a tenth
// of the live heap; with 10,000, the rest of the spec (ports, cluster IPs, IP families) 8%.
func TrimService(in any) (any, error) {
	if svc, ok := in.(*corev1.Service); ok {
		compactMetadata(svc)
		svc.Spec = corev1.ServiceSpec{Type: svc.Spec.Type, ExternalName: svc.Spec.ExternalName, Selector: svc.Spec.Selector}
	}
	return in, nil
}

// compactMetadata keeps of an object's managed fields who manages it, not which fields: what
// managedByUs and the ownership check read, in one entry (the operator's server-side apply) or
// none, and it makes the metadata's repeated strings shared (internMetadata). Only for kinds the
// operator never writes back with an update, which would replace the managed fields with this.
func compactMetadata(obj metav1.Object) {
	mfs := obj.GetManagedFields()
	obj.SetManagedFields(nil)
	for _, mf := range mfs {
		if mf.Manager == native.FieldManager {
			obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: native.FieldManager, Operation: metav1.ManagedFieldsOperationApply}})
			break
		}
	}
	internMetadata(obj)
}

// internMetadata makes the strings an object's metadata shares with the other objects of its
// cluster and of other clusters one copy each: the namespace, label keys and values (the
// cluster's name, Flink's type and component), annotation keys, finalizers and owner references. Decoded,
// every object had copies of its own; with 10,000 clusters the metadata of their objects was
// the largest part of the caches after the FlinkDeployments themselves. Names, UIDs of the
// objects themselves and resource versions are left alone: no other object has them.
func internMetadata(obj metav1.Object) {
	obj.SetNamespace(intern(obj.GetNamespace()))
	finalizers := obj.GetFinalizers()
	for i := range finalizers {
		finalizers[i] = intern(finalizers[i])
	}
	obj.SetLabels(internMap(obj.GetLabels(), true))
	obj.SetAnnotations(internMap(obj.GetAnnotations(), false))
	refs := obj.GetOwnerReferences()
	for i := range refs {
		r := &refs[i]
		r.APIVersion, r.Kind, r.Name, r.UID = intern(r.APIVersion), intern(r.Kind), intern(r.Name), types.UID(intern(string(r.UID)))
	}
}

// intern is the one copy of s the process keeps while anything refers to it.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// internMap is m with its keys, and its values if values is set, interned.
func internMap(m map[string]string, values bool) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if values {
			v = intern(v)
		}
		out[intern(k)] = v
	}
	return out
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
