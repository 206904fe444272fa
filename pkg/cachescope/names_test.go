package cachescope

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/wait"
)

// countingReader answers from objs by namespace/name and counts its reads.
type countingReader struct {
	objs  map[string]bool
	reads int
}

func (r *countingReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.reads++
	if !r.objs[key.String()] {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "things"}, key.Name)
	}
	obj.SetName(key.Name)
	obj.SetNamespace(key.Namespace)
	return nil
}

func (r *countingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	r.reads++
	return nil
}

// fakeNames covers ConfigMaps only and knows the names in taken.
type fakeNames map[string]bool

func (fakeNames) Covers(obj client.Object) bool { _, ok := obj.(*corev1.ConfigMap); return ok }

func (n fakeNames) Taken(_ context.Context, _ client.Object, key client.ObjectKey) (bool, error) {
	return n[key.String()], nil
}

// The API server is asked only for a name the cache does not hold but someone holds, or of a
// kind the index does not cover.
func TestLookupAsksTheAPIServerOnlyForANameSomeoneElseHolds(t *testing.T) {
	ctx := context.Background()
	cached := &countingReader{objs: map[string]bool{"ns/flink-config-orders": true}}
	live := &countingReader{objs: map[string]bool{"ns/flink-config-orders": true, "ns/tenants": true, "ns/web": true}}
	l := Lookup{Cache: cached, Names: fakeNames{"ns/flink-config-orders": true, "ns/tenants": true}, Live: live}

	require.NoError(t, l.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "flink-config-orders"}, &corev1.ConfigMap{}))
	assert.Zero(t, live.reads, "held by the cache")

	err := l.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "pod-template-orders"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "no object of that name: %v", err)
	assert.Zero(t, live.reads, "the index knows nobody holds the name")

	require.NoError(t, l.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "tenants"}, &corev1.ConfigMap{}))
	assert.Equal(t, 1, live.reads, "someone else's ConfigMap is read as it is")

	require.NoError(t, l.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "web"}, &corev1.Secret{}))
	assert.Equal(t, 2, live.reads, "a kind the index does not cover")

	noIndex := Lookup{Cache: cached, Live: live}
	err = noIndex.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "pod-template-orders"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err))
	assert.Equal(t, 3, live.reads, "without an index every miss is asked")
	assert.Equal(t, live, l.Fresh())
}

// The index knows the name of every object outside the scoped caches, and nothing else of it.
func TestNameIndexKnowsTheNamesOutsideTheScope(t *testing.T) {
	env := testEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.NewNamespace(t, "names")
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	idx, err := NewNameIndex(env.Config, env.Scheme, map[string]cache.Config{ns: {}})
	require.NoError(t, err)
	go func() { _ = idx.Start(ctx) }()

	tenants := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenants",
		Annotations: map[string]string{"note": "big"}}, Data: map[string]string{"k": "v"}}
	require.NoError(t, c.Create(ctx, tenants))
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}}
	require.NoError(t, c.Create(ctx, web))

	taken := func(obj client.Object, name string) func() bool {
		return func() bool {
			ok, err := idx.Taken(ctx, obj, types.NamespacedName{Namespace: ns, Name: name})
			return err == nil && ok
		}
	}
	wait.For(t, 30*time.Second, "the index hears of the unlabelled ConfigMap", taken(&corev1.ConfigMap{}, "tenants"))
	wait.For(t, 30*time.Second, "the index hears of the Deployment", taken(&appsv1.Deployment{}, "web"))
	gone, err := idx.Taken(ctx, &corev1.ConfigMap{}, types.NamespacedName{Namespace: ns, Name: "web"})
	require.NoError(t, err)
	assert.False(t, gone, "names are per kind")
	assert.True(t, idx.Covers(&corev1.Service{}))
	assert.False(t, idx.Covers(&corev1.Pod{}), "pods are never read by name")

	// Flink's objects are left to the scoped caches. The marker, created after it, is heard of
	// after it (one watch per kind keeps order), so by then the index has passed over it.
	flinkConf := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flink-config-orders",
		Labels: map[string]string{native.LabelApp: "orders", native.LabelType: native.TypeNative}}}
	require.NoError(t, c.Create(ctx, flinkConf))
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "marker"}}))
	wait.For(t, 30*time.Second, "the index hears of the marker", taken(&corev1.ConfigMap{}, "marker"))
	held, err := idx.Taken(ctx, &corev1.ConfigMap{}, types.NamespacedName{Namespace: ns, Name: "flink-config-orders"})
	require.NoError(t, err)
	assert.False(t, held, "a Flink cluster's ConfigMap is the scoped cache's, not the index's")

	require.NoError(t, c.Delete(ctx, tenants))
	wait.For(t, 30*time.Second, "the index hears of the deletion", func() bool { return !taken(&corev1.ConfigMap{}, "tenants")() })
}

func TestKeepNameKeepsOnlyTheName(t *testing.T) {
	in := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "x", UID: "u", ResourceVersion: "7", Labels: map[string]string{"a": "b"},
		Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}, OwnerReferences: []metav1.OwnerReference{{Name: "o"}}}}
	out, err := KeepName(in)
	require.NoError(t, err)
	assert.Equal(t, &metav1.PartialObjectMetadata{TypeMeta: in.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "x", UID: "u", ResourceVersion: "7"}}, out)
}
