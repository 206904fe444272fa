package kubectlflink

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// TestExplainScaling: the decision in status.scaling, in the shape agreed for it, is a table
// with one row per vertex: parallelism change, busy ratio, rates, lag, catch-up and the limits
// that bound it.
func TestExplainScaling(t *testing.T) {
	f := newFakeCluster(t, withScaling(scalingDecision()), runningDeployment())
	out := mustRun(t, f, "ns", "explain-scaling", "app")
	t.Log("\n" + out)
	assert.Equal(t, `Scaling decision of flinkdeployment ns/app: Applied, evaluated 2m ago (2026-12-06T11:58:00Z), generation 3
source is behind: scaling up

VERTEX                            NAME           PARALLELISM  BUSY  TRUE RATE  TARGET RATE  LAG    CATCH-UP  BOUND BY
cbc357ccb763df2852fee8c4fc7d55f2  Source: Kafka  2 -> 4       0.83  1520.4     1800.0       12000  45s       MaxFactor,KeyGroups
90bea66de1c231edf33913ecd54406c1  Sink           2 (kept)     0.10  -          -            -      -         -
`, out)
}

// TestExplainScalingRecommendOnly: a recommendation says nothing was changed.
func TestExplainScalingRecommendOnly(t *testing.T) {
	s := scalingDecision()
	s["outcome"] = "Recommended"
	out := mustRun(t, newFakeCluster(t, withScaling(s), runningDeployment()), "ns", "explain-scaling", "app")
	assert.Contains(t, out, "Recommended only (job.autoscaler.scaling.enabled: false): nothing was changed.")
}

// TestExplainScalingWithoutADecision: no status.scaling says why: the autoscaler is off for
// the resource, or has not evaluated it yet.
func TestExplainScalingWithoutADecision(t *testing.T) {
	off := mustRun(t, newFakeCluster(t, interceptor.Funcs{}, runningDeployment()), "ns", "explain-scaling", "app")
	assert.Equal(t, "flinkdeployment ns/app has no scaling decision (status.scaling): the autoscaler is not enabled for it "+
		"(spec.flinkConfiguration job.autoscaler.enabled is not \"true\").\n", off)

	d := runningDeployment()
	d.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{"job.autoscaler.enabled": "true"})
	on := mustRun(t, newFakeCluster(t, interceptor.Funcs{}, d), "ns", "explain-scaling", "app")
	assert.Contains(t, on, "the autoscaler has not evaluated the job yet")

	_, err := newFakeCluster(t, interceptor.Funcs{}).run(t, "ns", "explain-scaling", "snapshot/x")
	require.ErrorContains(t, err, "only FlinkDeployments and FlinkSessionJobs are autoscaled")
}

// TestReadScalingToleratesOddFields: numbers where strings were agreed (and the reverse),
// missing fields, entries of the wrong type: what can be read is shown, nothing fails.
func TestReadScalingToleratesOddFields(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"scaling": map[string]any{
		"generation": "4", "outcome": "Held", "evaluatedAt": int64(12),
		"vertices": []any{"junk", map[string]any{"vertexId": "v", "currentParallelism": float64(3), "newParallelism": "3",
			"busyRatio": 0.5, "boundBy": []any{"MaxParallelism", int64(7), nil}}},
	}}}}
	s := readScaling(u)
	require.NotNil(t, s)
	assert.Equal(t, int64(4), s.Generation)
	assert.True(t, s.EvaluatedAt.IsZero())
	require.Len(t, s.Vertices, 1)
	assert.Equal(t, VertexScaling{VertexID: "v", Current: 3, New: 3, BusyRatio: "0.5", BoundBy: []string{"MaxParallelism", "7"}}, s.Vertices[0])

	var out bytes.Buffer
	require.NoError(t, renderScaling(&out, Target{Kind: KindDeployment, Namespace: "ns", Name: "x"}, s, true, testNow))
	assert.Contains(t, out.String(), "Held: a limit kept the parallelism where it is.")
	assert.Nil(t, readScaling(&unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"scaling": "text"}}}))
}
