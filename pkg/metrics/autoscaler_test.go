package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAutoscalerSeriesAreBounded: a job graph of many vertices, each evaluated with many
// metrics, gives at most MaxAutoscalerVertices vertices × the exported metrics per resource; a
// new evaluation replaces the old one; a deleted resource leaves nothing.
func TestAutoscalerSeriesAreBounded(t *testing.T) {
	a := NewAutoscaler()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, Register(reg, a.Collectors()...))

	vertices := map[string]map[string]float64{}
	for i := range 300 {
		m := map[string]float64{"UNEXPORTED_" + fmt.Sprint(i): 1}
		for _, name := range autoscalerVertexMetrics {
			m[name] = float64(i)
		}
		vertices[fmt.Sprintf("%032x", i)] = m
	}
	a.Vertices("team-a", KindDeployment, "orders", vertices)
	a.Scaled("team-a", KindDeployment, "orders")
	a.Error("team-a", KindDeployment, "orders")
	count := func() int {
		n, err := testutil.GatherAndCount(reg, "flink_operator_autoscaler_vertex_metric")
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, MaxAutoscalerVertices*len(autoscalerVertexMetrics), count(), "capped vertices, exported metrics only")

	a.Vertices("team-a", KindDeployment, "orders", map[string]map[string]float64{"v1": {"LOAD": 0.5, "OTHER": 2}})
	assert.Equal(t, 1, count(), "a new evaluation replaces the last")
	assert.Equal(t, 1.0, testutil.ToFloat64(a.scalings.WithLabelValues("team-a", KindDeployment, "orders")))

	a.Forget("team-a", KindDeployment, "orders")
	assert.Zero(t, count())
	n, err := testutil.GatherAndCount(reg, "flink_operator_autoscaler_scalings_total", "flink_operator_autoscaler_errors_total")
	require.NoError(t, err)
	assert.Zero(t, n, "no series of a deleted resource")

	var none *Autoscaler // a reconciler without metrics
	none.Scaled("ns", KindDeployment, "x")
	none.Vertices("ns", KindDeployment, "x", vertices)
}
