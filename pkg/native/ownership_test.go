package native

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// webService is another application's Service, made with kubectl (no owner, no operator fields).
func webService(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
}

// webDeployment is another application's Deployment.
func webDeployment(ns, name string, owners ...metav1.OwnerReference) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, OwnerReferences: owners},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}}
}

// A FlinkDeployment named after another application's Service or
// Deployment neither takes it over (server-side apply forces ownership) nor deletes it.
func TestApplyAndDeleteLeaveForeignObjects(t *testing.T) {
	env := testEnv(t)
	ctx := context.Background()
	c := newWatchClient(t, env)

	t.Run("a foreign Service of the internal Service's name", func(t *testing.T) {
		ns := env.NewNamespace(t, "foreign-svc")
		require.NoError(t, c.Create(ctx, webService(ns, "orders")))
		before := &corev1.Service{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, before))
		dep := createDeployment(t, c, ns, nativeApp)
		cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		require.NoError(t, err)
		require.NotNil(t, cluster.InternalService, "no HA: the internal Service is named like the resource")

		err = Apply(ctx, c, c, cluster)
		foreign, ok := IsForeignObject(err)
		require.True(t, ok, "want a ForeignObjectError, got %v", err)
		assert.Equal(t, "Service", foreign.Kind)
		assert.Equal(t, "orders", foreign.Name)
		assert.Equal(t, "it has no owner", foreign.Why)

		after := &corev1.Service{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, after))
		assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "not written at all")
		assert.Equal(t, map[string]string{"app": "web"}, after.Spec.Selector)
		assert.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, &appsv1.Deployment{})),
			"nothing of the cluster is written while one of its objects is someone else's")
	})

	t.Run("a foreign Service of the REST Service's name", func(t *testing.T) {
		ns := env.NewNamespace(t, "foreign-rest")
		require.NoError(t, c.Create(ctx, webService(ns, flinkconf.RESTServiceName("orders"))))
		dep := createDeployment(t, c, ns, nativeApp)
		cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		require.NoError(t, err)

		if foreign, ok := IsForeignObject(Apply(ctx, c, c, cluster)); assert.True(t, ok) {
			assert.Equal(t, flinkconf.RESTServiceName("orders"), foreign.Name)
		}
		after := &corev1.Service{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: flinkconf.RESTServiceName("orders")}, after))
		assert.Equal(t, map[string]string{"app": "web"}, after.Spec.Selector, "the Service's traffic was redirected")
	})

	t.Run("a foreign Deployment of the JobManager's name", func(t *testing.T) {
		ns := env.NewNamespace(t, "foreign-deploy")
		// Owned by something else, e.g. a Helm-managed parent or an Argo Rollout.
		other := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "App", Name: "orders", UID: types.UID("other-uid")}
		require.NoError(t, c.Create(ctx, webDeployment(ns, "orders", other)))
		dep := createDeployment(t, c, ns, nativeApp)
		cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		require.NoError(t, err)

		foreign, ok := IsForeignObject(Apply(ctx, c, c, cluster))
		require.True(t, ok)
		assert.Equal(t, "Deployment", foreign.Kind)
		assert.Contains(t, foreign.Why, "App orders")

		gone, err := DeleteCluster(ctx, c, ns, "orders", DeleteOptions{Owner: dep.UID})
		require.NoError(t, err)
		assert.True(t, gone, "the cluster has nothing left; the Deployment of its name is not its own")
		live := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, live))
		assert.Nil(t, live.DeletionTimestamp, "someone else's Deployment is never deleted")
		assert.Equal(t, "nginx", live.Spec.Template.Spec.Containers[0].Image)
	})

	t.Run("what the Apache operator and Flink wrote is the cluster's own", func(t *testing.T) {
		ns := env.NewNamespace(t, "adopt")
		dep := createDeployment(t, c, ns, nativeApp)
		// As in the captures of upstream/status-samples: the JobManager Deployment has a
		// non-controller reference to the FlinkDeployment; Flink's Services and ConfigMaps have
		// a controller reference to the JobManager Deployment.
		cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		require.NoError(t, err)
		jm := cluster.JobManager.DeepCopy()
		jm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment",
			Name: "orders", UID: dep.UID, Controller: ptr(false), BlockOwnerDeletion: ptr(true)}}
		require.NoError(t, c.Create(ctx, jm, client.FieldOwner("fabric8-kubernetes-client")))
		byJM := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "orders", UID: jm.UID,
			Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}
		rest := webService(ns, flinkconf.RESTServiceName("orders"))
		rest.OwnerReferences = byJM
		conf := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ConfigMapName("orders"), OwnerReferences: byJM}}
		for _, o := range []client.Object{rest, conf} {
			require.NoError(t, c.Create(ctx, o, client.FieldOwner("fabric8-kubernetes-client")))
		}
		require.NoError(t, Apply(ctx, c, c, cluster))
		live := &corev1.Service{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: flinkconf.RESTServiceName("orders")}, live))
		assert.Equal(t, SelectorLabels("orders", ComponentJobManager, TypeNative), live.Spec.Selector, "taken over as the cluster's")
	})

	t.Run("dependents left by an orphaning deletion are the cluster's own", func(t *testing.T) {
		ns := env.NewNamespace(t, "orphans")
		dep := createDeployment(t, c, ns, nativeApp)
		cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		require.NoError(t, err)
		require.NoError(t, Apply(ctx, c, c, cluster))
		// What the garbage collector leaves after an orphaning deletion of the JobManager:
		// the dependents without their owner reference.
		jm := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, jm))
		require.NoError(t, c.Delete(ctx, jm))
		svc := &corev1.Service{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: flinkconf.RESTServiceName("orders")}, svc))
		svc.OwnerReferences = nil
		require.NoError(t, c.Update(ctx, svc))

		again, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		require.NoError(t, err)
		require.NoError(t, Apply(ctx, c, c, again))
	})
}

// blindReader finds nothing: a cache or name index that has not heard of an object yet. Its
// Fresh reader is the API server, as cachescope.Lookup's is.
type blindReader struct{ fresh client.Reader }

func (blindReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: kindOf(obj)}, key.Name)
}

func (blindReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

func (b blindReader) Fresh() client.Reader { return b.fresh }

// An object the ownership check did not find (made since it looked, or not yet known to the
// caches it reads) is created only if it really is absent: someone else's is judged on the API
// server's copy and left alone, the cluster's own is applied to as usual.
func TestApplyNeverTakesOverAnObjectTheCheckMissed(t *testing.T) {
	env := testEnv(t)
	ctx := context.Background()
	c := newWatchClient(t, env)
	blind := blindReader{fresh: c}

	t.Run("someone else's Service", func(t *testing.T) {
		ns := env.NewNamespace(t, "missed-foreign")
		require.NoError(t, c.Create(ctx, webService(ns, flinkconf.RESTServiceName("orders"))))
		before := &corev1.Service{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: flinkconf.RESTServiceName("orders")}, before))
		dep := createDeployment(t, c, ns, nativeApp)
		cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		require.NoError(t, err)

		err = Apply(ctx, c, blind, cluster)
		foreign, ok := IsForeignObject(err)
		require.True(t, ok, "want a ForeignObjectError, got %v", err)
		assert.Equal(t, flinkconf.RESTServiceName("orders"), foreign.Name)
		assert.Equal(t, "it has no owner", foreign.Why)
		after := &corev1.Service{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: flinkconf.RESTServiceName("orders")}, after))
		assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "not written at all")
		assert.Equal(t, map[string]string{"app": "web"}, after.Spec.Selector)
	})

	t.Run("the cluster's own objects", func(t *testing.T) {
		ns := env.NewNamespace(t, "missed-own")
		dep := createDeployment(t, c, ns, nativeApp)
		cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		require.NoError(t, err)
		require.NoError(t, Apply(ctx, c, blind, cluster), "a new cluster")
		first := resourceVersions(t, c, cluster.Objects())

		again, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		require.NoError(t, err)
		require.NoError(t, Apply(ctx, c, blind, again), "its objects exist: judged as the cluster's and applied to")
		assert.Equal(t, first, resourceVersions(t, c, again.Objects()), "an unchanged apply writes nothing")
		jm := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, jm))
		for _, mf := range jm.ManagedFields {
			if mf.Manager == FieldManager {
				assert.Equal(t, metav1.ManagedFieldsOperationApply, mf.Operation, "created by server-side apply, so later applies can remove fields")
			}
		}
	})
}
