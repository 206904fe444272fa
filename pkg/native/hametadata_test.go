package native

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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
