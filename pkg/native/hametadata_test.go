package native

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// haConfigMaps are what Flink 1.20 (jobGraph-) or 2.x (executionPlan-) leaves for a cluster
// with one job that checkpointed.
func haConfigMaps(graphKey string) []client.Object {
	labels := HALabels("app")
	return []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-cluster-config-map", Labels: labels},
			Data: map[string]string{graphKey + "aed9d91b1d3e112e2e5bfe1b17292344": "graph", "someOtherKey": "kept"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-aed9d91b1d3e112e2e5bfe1b17292344-config-map", Labels: labels},
			Data: map[string]string{"checkpointID-0000000000000000023": "pointer", "counter": "24"}},
	}
}

func TestDeleteJobGraphsKeepsCheckpoints(t *testing.T) {
	for _, graphKey := range []string{"jobGraph-", "executionPlan-"} {
		t.Run(graphKey, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(haConfigMaps(graphKey)...).Build()
			ctx := context.Background()
			require.NoError(t, DeleteJobGraphs(ctx, c, "ns", "app"))
			cluster := &corev1.ConfigMap{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "app-cluster-config-map"}, cluster))
			assert.Equal(t, map[string]string{"someOtherKey": "kept"}, cluster.Data, "the job graph goes, other keys stay")
			job := &corev1.ConfigMap{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "app-aed9d91b1d3e112e2e5bfe1b17292344-config-map"}, job))
			assert.Contains(t, job.Data, "checkpointID-0000000000000000023", "the checkpoint pointers stay")
			require.NoError(t, DeleteJobGraphs(ctx, c, "ns", "app"), "idempotent")
			has, err := HasHACheckpoint(ctx, c, "ns", "app")
			require.NoError(t, err)
			assert.True(t, has)
		})
	}
	c := fake.NewClientBuilder().Build()
	require.NoError(t, DeleteJobGraphs(context.Background(), c, "ns", "app"), "no HA metadata: nothing to do")
	has, err := HasHACheckpoint(context.Background(), c, "ns", "app")
	require.NoError(t, err)
	assert.False(t, has)
}

// Flink 2.x writes its HA ConfigMaps without configmap-type=high-availability (seen on Flink
// 2.3): they are found by name and Flink's type label, and the operator's own ConfigMaps of the
// cluster are never taken for HA metadata.
func TestHAConfigMapsOfFlink2(t *testing.T) {
	flink2 := map[string]string{LabelApp: "app", LabelType: TypeNative}
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-cluster-config-map", Labels: flink2},
			Data: map[string]string{"executionPlan-8b5d06778ac3630853e95e3d34d739c4": "plan"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-8b5d06778ac3630853e95e3d34d739c4-config-map", Labels: flink2},
			Data: map[string]string{"checkpointID-0000000000000000007": "pointer"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "flink-config-app", Labels: flink2}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-template-app", Labels: flink2}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-settings-config-map", Labels: map[string]string{LabelApp: "app"}}},
	}
	c := fake.NewClientBuilder().WithObjects(objs...).Build()
	ctx := context.Background()
	ha, err := HAConfigMaps(ctx, c, "ns", "app")
	require.NoError(t, err)
	var names []string
	for _, cm := range ha {
		names = append(names, cm.Name)
	}
	assert.ElementsMatch(t, []string{"app-cluster-config-map", "app-8b5d06778ac3630853e95e3d34d739c4-config-map"}, names)
	has, err := HasHAData(ctx, c, "ns", "app")
	require.NoError(t, err)
	assert.True(t, has, "Flink 2's checkpoint pointers are HA metadata")
	require.NoError(t, deleteHAConfigMaps(ctx, c, "ns", "app"))
	var left corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &left))
	assert.Len(t, left.Items, 3, "only the HA ConfigMaps are deleted")
}

// A writer changing the ConfigMap between the read and the removal (the JobManager, another
// reconcile) makes the removal conflict; it is done again on what that writer left, and its
// entry survives.
func TestDeleteJobGraphsRetriesOnConflict(t *testing.T) {
	ctx := context.Background()
	base := fake.NewClientBuilder().WithObjects(haConfigMaps("jobGraph-")...).Build()
	patches := 0
	c := interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			if patches == 1 {
				// Someone else writes first: the resourceVersion the operator read is stale now.
				other := &corev1.ConfigMap{}
				require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(obj), other))
				other.Data["leader"] = "jm-2"
				require.NoError(t, cl.Update(ctx, other))
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
	})
	require.NoError(t, DeleteJobGraphs(ctx, c, "ns", "app"))
	assert.Equal(t, 2, patches, "the conflicting removal, then the retried one")
	cm := &corev1.ConfigMap{}
	require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "app-cluster-config-map"}, cm))
	assert.Equal(t, map[string]string{"someOtherKey": "kept", "leader": "jm-2"}, cm.Data)
}

// The operator's caches keep of an HA ConfigMap only the keys it reads, without their values
// (pkg/cachescope): removing the job graphs from such a copy must not write the copy back, or
// it would blank the checkpoint pointers and everything else Flink keeps there.
func TestDeleteJobGraphsFromAKeysOnlyCopy(t *testing.T) {
	ctx := context.Background()
	objs := haConfigMaps("jobGraph-")
	objs[0].(*corev1.ConfigMap).Data["checkpointID-0000000000000000022"] = "pointer"
	base := fake.NewClientBuilder().WithObjects(objs...).Build()
	c := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := cl.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				for k := range cm.Data {
					cm.Data[k] = ""
				}
			}
			return nil
		},
	})
	require.NoError(t, DeleteJobGraphs(ctx, c, "ns", "app"))
	cm := &corev1.ConfigMap{}
	require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "app-cluster-config-map"}, cm))
	assert.Equal(t, map[string]string{"someOtherKey": "kept", "checkpointID-0000000000000000022": "pointer"}, cm.Data)
}

// Job graphs are removed wherever the cluster's HA ConfigMaps hold them, as upstream, not only
// from the cluster ConfigMap: one left in an older version's dispatcher leader ConfigMap would
// be recovered just the same.
func TestDeleteJobGraphsInEveryHAConfigMap(t *testing.T) {
	ctx := context.Background()
	objs := append(haConfigMaps("jobGraph-"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-dispatcher-leader", Labels: HALabels("app")},
			Data: map[string]string{"jobGraph-00000000000000000000000000000001": "graph", "address": "akka://jm"}},
		// Not HA metadata of app: untouched.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "flink-config-app", Labels: HALabels("app")},
			Data: map[string]string{"jobGraph-notes": "the user's"}})
	c := fake.NewClientBuilder().WithObjects(objs...).Build()
	require.NoError(t, DeleteJobGraphs(ctx, c, "ns", "app"))
	leader := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "app-dispatcher-leader"}, leader))
	assert.Equal(t, map[string]string{"address": "akka://jm"}, leader.Data)
	own := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "flink-config-app"}, own))
	assert.Contains(t, own.Data, "jobGraph-notes")
}

// HA metadata being deleted is no longer there to restore from (upstream's isValidHaConfigMap):
// neither a last-state restore nor the sentinel may count on it.
func TestHAMetadataBeingDeletedDoesNotCount(t *testing.T) {
	ctx := context.Background()
	objs := haConfigMaps("executionPlan-")
	for _, o := range objs {
		o.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		o.SetFinalizers([]string{"example.com/hold"})
	}
	c := fake.NewClientBuilder().WithObjects(objs...).Build()
	has, err := HasHACheckpoint(ctx, c, "ns", "app")
	require.NoError(t, err)
	assert.False(t, has)
	has, err = HasHAData(ctx, c, "ns", "app")
	require.NoError(t, err)
	assert.False(t, has)
}
