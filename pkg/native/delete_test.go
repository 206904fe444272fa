package native

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/flink-operator/flink-operator/pkg/options"
)

// appOwner is the FlinkDeployment "app" the JobManager Deployments of these tests belong to.
var appOwner = metav1.OwnerReference{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Name: "app", UID: "app-uid"}

// terminatingJobManager is a JobManager Deployment whose foreground deletion started at
// deletedAt and waits for pods that do not go (a lost node), plus any further finalizers.
func terminatingJobManager(deletedAt time.Time, finalizers ...string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: JobManagerDeploymentName("app"),
		OwnerReferences:   []metav1.OwnerReference{appOwner},
		DeletionTimestamp: &metav1.Time{Time: deletedAt},
		Finalizers:        append([]string{metav1.FinalizerDeleteDependents}, finalizers...)}}
}

// Past kubernetes.operator.resource.cleanup.timeout a JobManager Deployment stuck in its
// foreground deletion is let go, and the cluster is reported gone at once; within
// it, or with no timeout, the deletion is waited for as before.
func TestDeleteClusterStopsWaitingAfterTheCleanupTimeout(t *testing.T) {
	ctx := context.Background()
	deletedAt := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	key := client.ObjectKey{Namespace: "ns", Name: JobManagerDeploymentName("app")}
	// Counted from when the caller started deleting (the fake client, unlike the API server,
	// moves deletionTimestamp on every delete call).
	keepHA := DeleteOptions{KeepHAData: true, Owner: appOwner.UID, WaitAtMost: 5 * time.Minute, Since: deletedAt}

	c := fake.NewClientBuilder().WithObjects(terminatingJobManager(deletedAt)).Build()
	within := keepHA
	within.Now = deletedAt.Add(4 * time.Minute)
	gone, err := DeleteCluster(ctx, c, "ns", "app", within)
	require.NoError(t, err)
	assert.False(t, gone, "within the timeout: still waiting for the pods")
	jm := &appsv1.Deployment{}
	require.NoError(t, c.Get(ctx, key, jm))
	assert.Contains(t, jm.Finalizers, metav1.FinalizerDeleteDependents)

	unbounded := DeleteOptions{KeepHAData: true, Owner: appOwner.UID, Now: deletedAt.Add(time.Hour)}
	gone, err = DeleteCluster(ctx, c, "ns", "app", unbounded)
	require.NoError(t, err)
	assert.False(t, gone, "no timeout given: waits as long as it takes")

	past := keepHA
	past.Now = deletedAt.Add(6 * time.Minute)
	gone, err = DeleteCluster(ctx, c, "ns", "app", past)
	require.NoError(t, err)
	assert.True(t, gone, "past the timeout: gone in this very call")
	assert.True(t, apierrors.IsNotFound(c.Get(ctx, key, jm)))

	t.Run("someone else's finalizer still holds it", func(t *testing.T) {
		c := fake.NewClientBuilder().WithObjects(terminatingJobManager(deletedAt, "example.com/audit")).Build()
		gone, err := DeleteCluster(ctx, c, "ns", "app", past)
		require.NoError(t, err)
		assert.False(t, gone, "a new cluster must not be applied onto a Deployment still there")
		jm := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, key, jm))
		assert.Equal(t, []string{"example.com/audit"}, jm.Finalizers, "only the operator's wait is given up")
	})
}

// kubernetes.operator.resource.deletion.propagation reaches the JobManager Deployment's
// deletion; Foreground when unset, as upstream.
func TestDeleteClusterPropagation(t *testing.T) {
	for _, tc := range []struct {
		option string
		want   metav1.DeletionPropagation
	}{
		{"", metav1.DeletePropagationForeground},
		{"Background", metav1.DeletePropagationBackground},
		{"ORPHAN", metav1.DeletePropagationOrphan},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			propagation, err := ParseDeletionPropagation(tc.option)
			require.NoError(t, err)
			var used []metav1.DeletionPropagation
			jm := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: JobManagerDeploymentName("app"),
				OwnerReferences: []metav1.OwnerReference{appOwner}}}
			c := interceptor.NewClient(fake.NewClientBuilder().WithObjects(jm).Build(), interceptor.Funcs{
				Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					if _, ok := obj.(*appsv1.Deployment); ok {
						do := &client.DeleteOptions{}
						do.ApplyOptions(opts)
						require.NotNil(t, do.PropagationPolicy)
						used = append(used, *do.PropagationPolicy)
					}
					return cl.Delete(ctx, obj, opts...)
				},
			})
			opts := DeleteOptions{KeepHAData: true, Owner: appOwner.UID}
			if tc.option != "" {
				opts.Propagation = propagation
			}
			gone, err := DeleteCluster(context.Background(), c, "ns", "app", opts)
			require.NoError(t, err)
			assert.True(t, gone)
			assert.Equal(t, []metav1.DeletionPropagation{tc.want}, used)
		})
	}
	_, err := ParseDeletionPropagation("Eventually")
	assert.ErrorContains(t, err, options.DeletionPropagation.Key)
}

// staleCache is a client whose ConfigMap lists answer from a snapshot taken when it was made,
// as an informer's cache does for the few milliseconds before a change reaches it; every other
// call, and every write, goes to the API server (the fake's current state).
func staleCache(apiServer client.WithWatch, snapshot []corev1.ConfigMap) client.Client {
	return interceptor.NewClient(apiServer, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			cms, ok := list.(*corev1.ConfigMapList)
			if !ok {
				return c.List(ctx, list, opts...)
			}
			cms.Items = nil
			for _, cm := range snapshot {
				cms.Items = append(cms.Items, *cm.DeepCopy())
			}
			return nil
		}})
}

// HA metadata is deleted only once the JobManager Deployment is gone, as upstream does: a
// JobManager whose leader ConfigMap is deleted under it fails fatally, and its JVM then hung on
// its pod's SIGTERM until Flink's shutdown safeguard halted it 5 s later, which every savepoint
// upgrade and suspend waited for. The ConfigMaps are then listed by the API server, not the
// cache, which can miss one the JobManager wrote just before it went.
func TestDeleteClusterDeletesHADataOnceTheJobManagerIsGone(t *testing.T) {
	ctx := context.Background()
	haLabels := map[string]string{LabelApp: "app", LabelConfigMapType: ConfigMapTypeHA, LabelType: TypeNative}
	leader := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-cluster-config-map", Labels: haLabels}}
	checkpoints := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-0123-config-map", Labels: haLabels}}
	opts := func(live client.Reader) DeleteOptions { return DeleteOptions{Owner: appOwner.UID, Live: live} }
	haLeft := func(c client.Reader) []string {
		var names []string
		cms, err := HAConfigMaps(ctx, c, "ns", "app")
		require.NoError(t, err)
		for _, cm := range cms {
			names = append(names, cm.Name)
		}
		return names
	}

	t.Run("left while the JobManager runs, deleted once it is gone", func(t *testing.T) {
		jm := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: JobManagerDeploymentName("app"),
			OwnerReferences: []metav1.OwnerReference{appOwner}, Finalizers: []string{"example.com/hold"}}}
		apiServer := fake.NewClientBuilder().WithObjects(jm, leader.DeepCopy(), checkpoints.DeepCopy()).Build()
		gone, err := DeleteCluster(ctx, apiServer, "ns", "app", opts(apiServer))
		require.NoError(t, err)
		assert.False(t, gone, "the JobManager Deployment is still being deleted")
		assert.ElementsMatch(t, []string{leader.Name, checkpoints.Name}, haLeft(apiServer), "its JobManager may still run")

		require.NoError(t, apiServer.Get(ctx, client.ObjectKeyFromObject(jm), jm))
		jm.Finalizers = nil
		require.NoError(t, apiServer.Update(ctx, jm)) // the garbage collector let it go
		gone, err = DeleteCluster(ctx, apiServer, "ns", "app", opts(apiServer))
		require.NoError(t, err)
		assert.True(t, gone)
		assert.Empty(t, haLeft(apiServer))
	})

	t.Run("one the cache has not seen is deleted too", func(t *testing.T) {
		apiServer := fake.NewClientBuilder().WithObjects(leader.DeepCopy()).Build()
		gone, err := DeleteCluster(ctx, staleCache(apiServer, nil), "ns", "app", opts(apiServer))
		require.NoError(t, err)
		assert.True(t, gone)
		assert.Empty(t, haLeft(apiServer), "deleted although the cache did not list it")
	})

	t.Run("the API server is asked for metadata only", func(t *testing.T) {
		// A tenant's ConfigMap labelled with the cluster's name is listed too: its data is never
		// decoded, and it is not deleted.
		tenants := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-blob", Labels: map[string]string{LabelApp: "app"}},
			Data: map[string]string{"blob": strings.Repeat("x", 1<<20)}}
		apiServer := fake.NewClientBuilder().WithObjects(leader.DeepCopy(), tenants.DeepCopy()).Build()
		live := interceptor.NewClient(apiServer, interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, full := list.(*corev1.ConfigMapList); full {
					t.Errorf("whole ConfigMaps listed: %T", list)
				}
				return c.List(ctx, list, opts...)
			}})
		gone, err := DeleteCluster(ctx, apiServer, "ns", "app", opts(live))
		require.NoError(t, err)
		assert.True(t, gone)
		assert.Empty(t, haLeft(apiServer))
		require.NoError(t, apiServer.Get(ctx, client.ObjectKeyFromObject(&tenants), &corev1.ConfigMap{}), "the tenant's ConfigMap stays")
	})

	t.Run("kept for last-state: neither deleted nor asked for", func(t *testing.T) {
		apiServer := fake.NewClientBuilder().WithObjects(leader.DeepCopy()).Build()
		keep := opts(apiServer)
		keep.KeepHAData = true
		gone, err := DeleteCluster(ctx, staleCache(apiServer, []corev1.ConfigMap{leader}), "ns", "app", keep)
		require.NoError(t, err)
		assert.True(t, gone)
		assert.Equal(t, []string{leader.Name}, haLeft(apiServer))
	})
}
