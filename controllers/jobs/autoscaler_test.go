package jobs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/metrics"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// failingMetrics is a JobManager whose metrics cannot be read.
type failingMetrics struct{}

func (failingMetrics) Topology(context.Context, string) (autoscaler.Topology, error) {
	return autoscaler.Topology{}, errors.New("connection refused")
}

func (failingMetrics) Sample(context.Context, string, autoscaler.Topology) (autoscaler.Sample, error) {
	return autoscaler.Sample{}, errors.New("connection refused")
}

// TestAutoscaleKeepsOverridesWhenCollectionFails: metrics that cannot be read are an
// AutoscalerError event and an error count; the stored overrides stay in force (the job keeps
// its parallelism) and the state is not rewritten.
func TestAutoscaleKeepsOverridesWhenCollectionFails(t *testing.T) {
	dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job", UID: "uid-1"}}
	stored := autoscaler.State{Overrides: map[autoscaler.VertexID]int{fixtures.VertexMap: 3}}
	data, err := stored.Encode()
	require.NoError(t, err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: AutoscalerConfigMapName("job"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Name: "job", UID: "uid-1"}}},
		Data: data}
	c := fake.NewClientBuilder().WithScheme(kubeenv.Scheme()).WithObjects(dep, cm).Build()
	rec := record.NewFakeRecorder(10)
	m := metrics.NewAutoscaler()
	a := &Autoscaling{Metrics: m, Source: func(*flink.Client) autoscaler.MetricsSource { return failingMetrics{} }, Now: time.Now}

	out, err := a.Autoscale(context.Background(), c, rec, AutoscaleInput{Owner: dep, Kind: metrics.KindDeployment,
		Conf:     map[string]string{"job.autoscaler.enabled": "true", KeyParallelismOverrides: string(fixtures.VertexSink) + ":2"},
		Evaluate: true, JobID: "j", Rest: func(context.Context) (*flink.Client, error) { return nil, nil }})
	require.NoError(t, err, "a failed collection does not fail the reconcile")
	assert.Equal(t, autoscaler.FormatOverrides(map[autoscaler.VertexID]int{fixtures.VertexMap: 3, fixtures.VertexSink: 2}), out.Overrides,
		"the stored overrides over the user's own")
	assert.False(t, out.scaled)
	require.Len(t, rec.Events, 1)
	assert.Contains(t, <-rec.Events, "Warning AutoscalerError autoscaler: job topology: connection refused")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.Collectors()[1]), "one error counted") // scalings, errors, vertices
	var after corev1.ConfigMap
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(cm), &after))
	assert.Equal(t, cm.ResourceVersion, after.ResourceVersion, "the state is not rewritten")
}

// TestAutoscaleLeavesForeignConfigMaps: an autoscaler-<name> ConfigMap the resource does not own
// is neither read nor written; autoscaling pauses with a Warning event instead of failing the
// reconcile (so upgrades, suspend and snapshots go on), and the job keeps the overrides it runs
// with (the user's own as the spec has them now). The foreign ConfigMap holds an override (the
// map vertex at 9) that would be in force if its data were read, and no write of any kind may
// reach it, with a reset asked for (which rewrites the state) or not.
func TestAutoscaleLeavesForeignConfigMaps(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(fmt.Sprintf("reset=%v", reset), func(t *testing.T) {
			dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job", UID: "uid-1"}}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: AutoscalerConfigMapName("job")},
				Data: map[string]string{"parallelismOverrides": string(fixtures.VertexMap) + ":9"}}
			var writes []string
			write := func(verb string, obj client.Object) {
				if _, ok := obj.(*corev1.ConfigMap); ok {
					writes = append(writes, verb+" "+obj.GetName())
				}
			}
			c := fake.NewClientBuilder().WithScheme(kubeenv.Scheme()).WithObjects(dep, cm).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					write("create", obj)
					return c.Create(ctx, obj, opts...)
				},
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					write("update", obj)
					return c.Update(ctx, obj, opts...)
				},
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					write("patch", obj)
					return c.Patch(ctx, obj, patch, opts...)
				},
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					write("delete", obj)
					return c.Delete(ctx, obj, opts...)
				},
			}).Build()
			rec := record.NewFakeRecorder(10)
			sampled := 0
			a := &Autoscaling{Source: func(*flink.Client) autoscaler.MetricsSource { sampled++; return failingMetrics{} }, Now: time.Now}
			out, err := a.Autoscale(context.Background(), c, rec, AutoscaleInput{Owner: dep, Kind: metrics.KindDeployment,
				Conf: map[string]string{"job.autoscaler.enabled": "true", KeyParallelismOverrides: string(fixtures.VertexSink) + ":5"},
				// Running: the autoscaler's map vertex at 3, the user's sink at 2 (now 5 in the spec).
				DeployedOverrides: string(fixtures.VertexMap) + ":3," + string(fixtures.VertexSink) + ":2",
				Reset:             reset, Evaluate: true, JobID: "j", Rest: func(context.Context) (*flink.Client, error) { return nil, nil }})
			require.NoError(t, err, "the reconcile goes on")
			assert.Equal(t, autoscaler.FormatOverrides(map[autoscaler.VertexID]int{fixtures.VertexMap: 3, fixtures.VertexSink: 5}), out.Overrides,
				"the overrides in force are kept, with the user's own as the spec has them; none of the foreign ConfigMap's")
			assert.False(t, out.scaled)
			assert.Zero(t, sampled, "no metrics collected while paused")
			require.Len(t, rec.Events, 1)
			ev := <-rec.Events
			assert.Contains(t, ev, "Warning AutoscalerError Autoscaling paused: ConfigMap ns/autoscaler-job is not owned by the resource")
			assert.Empty(t, writes, "no write reaches the foreign ConfigMap")
			var after corev1.ConfigMap
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(cm), &after))
			assert.Equal(t, cm.ResourceVersion, after.ResourceVersion, "the foreign ConfigMap is never written (not even by the reset)")
			assert.Equal(t, cm.Data, after.Data)
			assert.Empty(t, after.OwnerReferences)
		})
	}
}

// TestAutoscaleDropsOnlyUnreadableEntries: an entry of the state that cannot be read is dropped
// alone (an AutoscalerError event names it); the stored overrides and history survive and stay in
// force, and the ConfigMap is rewritten without the bad entry, as upstream's
// KubernetesAutoScalerStateStore removes it.
func TestAutoscaleDropsOnlyUnreadableEntries(t *testing.T) {
	dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job", UID: "uid-1"}}
	stored := autoscaler.State{Overrides: map[autoscaler.VertexID]int{fixtures.VertexMap: 3},
		History: map[autoscaler.VertexID][]autoscaler.ScalingRecord{fixtures.VertexMap: {{Time: time.Unix(1700000000, 0).UTC(), CurrentParallelism: 1, NewParallelism: 3}}}}
	data, err := stored.Encode()
	require.NoError(t, err)
	data[autoscaler.KeyScalingTracking] = "---\nscalingRecords: [not, a, map]\n"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: AutoscalerConfigMapName("job"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Name: "job", UID: "uid-1"}}},
		Data: data}
	c := fake.NewClientBuilder().WithScheme(kubeenv.Scheme()).WithObjects(dep, cm).Build()
	rec := record.NewFakeRecorder(10)
	a := &Autoscaling{Source: func(*flink.Client) autoscaler.MetricsSource { return failingMetrics{} }, Now: time.Now}
	out, err := a.Autoscale(context.Background(), c, rec, AutoscaleInput{Owner: dep, Kind: metrics.KindDeployment,
		Conf:              map[string]string{"job.autoscaler.enabled": "true"},
		DeployedOverrides: string(fixtures.VertexMap) + ":3"})
	require.NoError(t, err)
	assert.Equal(t, string(fixtures.VertexMap)+":3", out.Overrides, "the stored overrides stay in force: no restart at the spec's parallelism")
	require.Len(t, rec.Events, 1)
	assert.Contains(t, <-rec.Events, "Warning AutoscalerError Autoscaler state entries dropped: ConfigMap ns/autoscaler-job: autoscaler state: scalingTracking: ")
	var after corev1.ConfigMap
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(cm), &after))
	assert.NotContains(t, after.Data, autoscaler.KeyScalingTracking, "the unreadable entry is removed")
	state, err := autoscaler.DecodeState(after.Data)
	require.NoError(t, err)
	assert.Equal(t, map[autoscaler.VertexID]int{fixtures.VertexMap: 3}, state.Overrides)
	assert.Len(t, state.History[fixtures.VertexMap], 1, "the history survives")
}
