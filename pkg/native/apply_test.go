package native

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// writeCounter counts the mutating calls a client makes.
type writeCounter struct{ patches, creates, updates, deletes int }

func countingClient(c client.Client, n *writeCounter) client.Client {
	return interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			n.patches++
			return c.Patch(ctx, obj, patch, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n.creates++
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			n.updates++
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			n.deletes++
			return c.Delete(ctx, obj, opts...)
		},
	})
}

func newWatchClient(t *testing.T, env *kubeenv.Env) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c
}

// createDeployment stores the FlinkDeployment in namespace ns (which must exist) so its UID is
// real (owner references need it).
func createDeployment(t *testing.T, c client.Client, ns, doc string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	ctx := context.Background()
	dep := deployment(t, doc)
	dep.Namespace = ns
	require.NoError(t, c.Create(ctx, dep))
	return dep
}

func resourceVersions(t *testing.T, c client.Client, objs []client.Object) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		live := o.DeepCopyObject().(client.Object)
		require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(o), live))
		out[o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName()] = live.GetResourceVersion()
	}
	return out
}

const nativeApp = `
metadata: {name: orders}
spec:
  image: flink:1.20
  flinkVersion: v1_20
  serviceAccount: flink
  ingress: {template: "{{name}}.{{namespace}}.flink.example.com", className: nginx}
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager:
    resource: {memory: 1g, cpu: 1}
    podTemplate: {spec: {containers: [{name: sidecar, image: busybox}]}}
  job: {jarURI: "local:///opt/flink/examples/streaming/StateMachineExample.jar", parallelism: 2}
`

func TestApply(t *testing.T) {
	env := testEnv(t)
	ns := env.NewNamespace(t, "apply")
	ctx := context.Background()
	base := newWatchClient(t, env)
	var writes writeCounter
	c := countingClient(base, &writes)
	dep := createDeployment(t, base, ns, nativeApp)

	cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{JobID: "0000000000000000000000000000abcd"})
	require.NoError(t, err)
	require.NoError(t, Apply(ctx, c, c, cluster))

	t.Run("creates exactly the cluster's objects, owned for garbage collection", func(t *testing.T) {
		jm := &appsv1.Deployment{}
		require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, jm))
		require.Len(t, jm.OwnerReferences, 1)
		assert.Equal(t, dep.UID, jm.OwnerReferences[0].UID)
		assert.Equal(t, "1", jm.Annotations[AnnotationGeneration])

		owned := map[string]client.Object{
			"flink-config-orders": &corev1.ConfigMap{}, "pod-template-orders": &corev1.ConfigMap{},
			"orders-rest": &corev1.Service{}, "orders": &corev1.Service{},
		}
		for name, obj := range owned {
			require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj), name)
			refs := obj.GetOwnerReferences()
			require.Len(t, refs, 1, name)
			assert.Equal(t, jm.UID, refs[0].UID, "%s is owned by the JobManager Deployment", name)
		}
		ing := &networkingv1.Ingress{}
		require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, ing))
		assert.Equal(t, dep.UID, ing.OwnerReferences[0].UID)

		var cms corev1.ConfigMapList
		require.NoError(t, base.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{LabelApp: "orders"}))
		assert.Len(t, cms.Items, 2, "no other ConfigMaps")
		var deps appsv1.DeploymentList
		require.NoError(t, base.List(ctx, &deps, client.InNamespace(ns)))
		assert.Len(t, deps.Items, 1, "native mode: the JobManager creates TaskManagers itself")
	})

	t.Run("re-applying an unchanged spec writes nothing", func(t *testing.T) {
		before := resourceVersions(t, base, cluster.Objects())
		writes = writeCounter{}
		again, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{JobID: "0000000000000000000000000000abcd"})
		require.NoError(t, err)
		require.NoError(t, Apply(ctx, c, c, again))
		after := resourceVersions(t, base, cluster.Objects())
		assert.Equal(t, before, after, "no object changed: the API server stored nothing")
		assert.Equal(t, len(cluster.Objects()), writes.patches, "one server-side apply per object")
		assert.Zero(t, writes.creates+writes.updates+writes.deletes)
	})

	t.Run("drift is corrected", func(t *testing.T) {
		// Someone scales the JobManager away and retypes the REST Service by hand.
		jm := &appsv1.Deployment{}
		require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, jm))
		jm.Spec.Replicas = ptr(int32(0))
		require.NoError(t, base.Update(ctx, jm))
		svc := &corev1.Service{}
		require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-rest"}, svc))
		svc.Spec.Type = corev1.ServiceTypeNodePort
		require.NoError(t, base.Update(ctx, svc))

		require.NoError(t, Apply(ctx, c, c, cluster))
		require.NoError(t, base.Get(ctx, client.ObjectKeyFromObject(jm), jm))
		assert.Equal(t, int32(1), *jm.Spec.Replicas)
		require.NoError(t, base.Get(ctx, client.ObjectKeyFromObject(svc), svc))
		assert.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type)
	})

	t.Run("objects the spec no longer asks for are removed", func(t *testing.T) {
		changed := dep.DeepCopy()
		changed.Spec.Ingress = nil
		changed.Spec.TaskManager.PodTemplate = nil
		changed.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{
			"high-availability.type": "kubernetes", "high-availability.storageDir": "file:///ha"})
		next, err := Build(changed, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		require.NoError(t, err)
		require.NoError(t, Apply(ctx, c, c, next))
		for name, obj := range map[string]client.Object{
			"orders/ingress": &networkingv1.Ingress{}, "orders/internal service": &corev1.Service{}, "pod-template-orders": &corev1.ConfigMap{},
		} {
			key := client.ObjectKey{Namespace: ns, Name: name}
			if name != "pod-template-orders" {
				key.Name = "orders"
			}
			err := base.Get(ctx, key, obj)
			assert.True(t, apierrors.IsNotFound(err), "%s should be gone: %v", name, err)
		}
		require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-rest"}, &corev1.Service{}))
	})
}

func TestApplyStandalone(t *testing.T) {
	env := testEnv(t)
	ns := env.NewNamespace(t, "standalone")
	ctx := context.Background()
	c := newWatchClient(t, env)
	dep := createDeployment(t, c, ns, `
metadata: {name: batch}
spec:
  image: flink:2.0
  flinkVersion: v2_0
  mode: standalone
  flinkConfiguration: {taskmanager.numberOfTaskSlots: "2"}
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
  job: {jarURI: "local:///opt/flink/usrlib/job.jar", parallelism: 5, entryClass: com.example.Job}
`)
	cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
	require.NoError(t, err)
	require.NoError(t, Apply(ctx, c, c, cluster))

	jm, tm := &appsv1.Deployment{}, &appsv1.Deployment{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "batch"}, jm))
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "batch-taskmanager"}, tm))
	assert.Equal(t, int32(3), *tm.Spec.Replicas, "ceil(parallelism 5 / 2 slots)")
	assert.Equal(t, jm.UID, tm.OwnerReferences[0].UID)
	assert.Equal(t, TypeStandalone, tm.Spec.Template.Labels[LabelType])
	assert.Equal(t, []string{"standalone-job", "--job-classname", "com.example.Job"}, jm.Spec.Template.Spec.Containers[0].Args)
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "flink-config-batch"}, cm))
	assert.Contains(t, cm.Data["config.yaml"], "execution.target: remote")
}

func TestDeleteCluster(t *testing.T) {
	env := testEnv(t)
	ns := env.NewNamespace(t, "del")
	ctx := context.Background()
	c := newWatchClient(t, env)
	dep := createDeployment(t, c, ns, nativeApp)
	cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
	require.NoError(t, err)
	require.NoError(t, Apply(ctx, c, c, cluster))

	haLabels := map[string]string{LabelApp: "orders", LabelConfigMapType: ConfigMapTypeHA, LabelType: TypeNative}
	configMaps := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "orders-cluster-config-map", Labels: haLabels}},
		{ObjectMeta: metav1.ObjectMeta{Name: "orders-00000000000000000000000000000001-config-map", Labels: haLabels}},
		// Not orders' HA data: kept.
		{ObjectMeta: metav1.ObjectMeta{Name: "autoscaler-orders", Labels: map[string]string{LabelApp: "orders", LabelComponent: ComponentAutoscaler}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "payments-cluster-config-map", Labels: map[string]string{LabelApp: "payments", LabelConfigMapType: ConfigMapTypeHA}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "users-own", Labels: map[string]string{"team": "a"}}},
	}
	for _, cm := range configMaps {
		cm.Namespace = ns
		require.NoError(t, c.Create(ctx, cm))
	}
	has, err := HasHAData(ctx, c, ns, "orders")
	require.NoError(t, err)
	assert.True(t, has)
	has, err = HasHAData(ctx, c, ns, "payments")
	require.NoError(t, err)
	assert.False(t, has, "a cluster-config-map alone holds no job state")

	t.Run("keeping HA data", func(t *testing.T) {
		gone, err := DeleteCluster(ctx, c, ns, "orders", DeleteOptions{KeepHAData: true, Owner: dep.UID})
		require.NoError(t, err)
		// envtest runs no garbage collector, so the foreground deletion never finishes here.
		assert.False(t, gone)
		jm := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, jm))
		assert.NotNil(t, jm.DeletionTimestamp)
		assert.Contains(t, jm.Finalizers, metav1.FinalizerDeleteDependents, "foreground propagation")
		has, err := HasHAData(ctx, c, ns, "orders")
		require.NoError(t, err)
		assert.True(t, has)
	})

	configMapNames := func() []string {
		var left corev1.ConfigMapList
		require.NoError(t, c.List(ctx, &left, client.InNamespace(ns)))
		var names []string
		for _, cm := range left.Items {
			names = append(names, cm.Name)
		}
		return names
	}
	t.Run("HA data stays while the JobManager Deployment is being deleted", func(t *testing.T) {
		gone, err := DeleteCluster(ctx, c, ns, "orders", DeleteOptions{Owner: dep.UID})
		require.NoError(t, err)
		assert.False(t, gone)
		names := configMapNames()
		assert.Contains(t, names, "orders-cluster-config-map", "its JobManager may still run")
		assert.Contains(t, names, "orders-00000000000000000000000000000001-config-map")
		assert.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, &networkingv1.Ingress{})))
	})

	t.Run("gone once the JobManager Deployment is", func(t *testing.T) {
		jm := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, jm))
		jm.Finalizers = nil // what the garbage collector does once the dependents are gone
		require.NoError(t, c.Update(ctx, jm))
		gone, err := DeleteCluster(ctx, c, ns, "orders", DeleteOptions{Owner: dep.UID})
		require.NoError(t, err)
		assert.True(t, gone)
		// Then its HA data goes, and nothing else.
		names := configMapNames()
		assert.NotContains(t, names, "orders-cluster-config-map")
		assert.NotContains(t, names, "orders-00000000000000000000000000000001-config-map")
		assert.Contains(t, names, "autoscaler-orders")
		assert.Contains(t, names, "payments-cluster-config-map")
		assert.Contains(t, names, "users-own")
	})
}

// TestDeleteClusterGivesUpAStuckForegroundDeletion: a JobManager Deployment
// whose pods cannot go (a lost node) does not block deletion or upgrade for longer than the
// cleanup timeout.
func TestDeleteClusterGivesUpAStuckForegroundDeletion(t *testing.T) {
	env := testEnv(t)
	ns := env.NewNamespace(t, "stuck")
	ctx := context.Background()
	c := newWatchClient(t, env)
	dep := createDeployment(t, c, ns, nativeApp)
	cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
	require.NoError(t, err)
	require.NoError(t, Apply(ctx, c, c, cluster))
	_, err = DeleteCluster(ctx, c, ns, "orders", DeleteOptions{KeepHAData: true, Owner: dep.UID})
	require.NoError(t, err)

	jm := &appsv1.Deployment{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, jm))
	require.Contains(t, jm.Finalizers, metav1.FinalizerDeleteDependents, "still waiting for its pods (envtest collects nothing)")
	opts := DeleteOptions{KeepHAData: true, Owner: dep.UID, WaitAtMost: 5 * time.Minute, Now: jm.DeletionTimestamp.Add(time.Minute)}
	gone, err := DeleteCluster(ctx, c, ns, "orders", opts)
	require.NoError(t, err)
	assert.False(t, gone, "within the timeout: it waits")
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, jm))
	assert.Contains(t, jm.Finalizers, metav1.FinalizerDeleteDependents)

	opts.Now = jm.DeletionTimestamp.Add(6 * time.Minute)
	_, err = DeleteCluster(ctx, c, ns, "orders", opts)
	require.NoError(t, err)
	gone, err = DeleteCluster(ctx, c, ns, "orders", opts)
	require.NoError(t, err)
	assert.True(t, gone, "past the timeout the Deployment goes; its pods are left to the garbage collector")
}
