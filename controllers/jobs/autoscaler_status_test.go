package jobs

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/autoscaler"
)

// TestScalingStatusRendersTheDecision: status.scaling carries the decision's numbers as strings
// with fixed decimals, its bounds by their API names, and a message naming what changes and why
// it is held back.
func TestScalingStatusRendersTheDecision(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	d := autoscaler.Decision{Time: at, Outcome: autoscaler.OutcomeHeld, Hold: autoscaler.HoldScaleDownWait, Vertices: []autoscaler.VertexDecision{
		{ID: "src", Name: "Source: orders", Current: 2, New: 2, BusyRatio: 0.1, TrueProcessingRate: math.Inf(1), TargetRate: 1000,
			Lag: 12000, ExpectedCatchUp: 44.6},
		{ID: "map", Name: "busy map", Current: 4, New: 2, BusyRatio: 0.0833, TrueProcessingRate: 1520.44, TargetRate: 1000.04,
			Lag: math.NaN(), ExpectedCatchUp: math.NaN(), Bounds: []autoscaler.Bound{autoscaler.BoundMaxFactor, autoscaler.BoundScaleDownInterval}},
		{ID: "sink", Name: "sink", Current: 1, New: 1, BusyRatio: math.NaN(), TrueProcessingRate: math.NaN(), TargetRate: math.NaN(),
			Lag: 5, ExpectedCatchUp: math.Inf(1), Bounds: []autoscaler.Bound{autoscaler.BoundExcluded}},
	}}
	got := scalingStatus(d, 7)
	assert.Equal(t, flinkv1beta1.ScalingHeld, got.Outcome)
	assert.Equal(t, int64(7), got.Generation)
	assert.True(t, got.EvaluatedAt.Time.Equal(at))
	assert.Equal(t, []flinkv1beta1.VertexScaling{
		{VertexID: "src", Name: "Source: orders", CurrentParallelism: 2, NewParallelism: 2, BusyRatio: "0.10", TrueProcessingRate: "Infinity",
			TargetRate: "1000.0", Lag: "12000", ExpectedCatchUp: "45s"},
		{VertexID: "map", Name: "busy map", CurrentParallelism: 4, NewParallelism: 2, BusyRatio: "0.08", TrueProcessingRate: "1520.4",
			TargetRate: "1000.0", BoundBy: []flinkv1beta1.ScalingBound{flinkv1beta1.ScalingBoundMaxFactor, flinkv1beta1.ScalingBoundScaleDownInterval}},
		{VertexID: "sink", Name: "sink", CurrentParallelism: 1, NewParallelism: 1, Lag: "5", ExpectedCatchUp: "Never",
			BoundBy: []flinkv1beta1.ScalingBound{flinkv1beta1.ScalingBoundExcluded}},
	}, got.Vertices)
	assert.Equal(t, "Held: a scale-down waits for job.autoscaler.scale-down.interval: busy map 4 -> 2 (bound by MaxFactor, ScaleDownInterval)", got.Message)
}

// TestScalingStatusStaysWithinTheSchema: what a JobManager reports (it runs the user's code) cannot
// make status.scaling exceed its schema's bounds, which would fail the whole status write.
func TestScalingStatusStaysWithinTheSchema(t *testing.T) {
	d := autoscaler.Decision{Outcome: autoscaler.OutcomeApplied, Vertices: []autoscaler.VertexDecision{{
		ID: autoscaler.VertexID(strings.Repeat("f", 1000)), Name: strings.Repeat("n", 1000), Current: 1, New: 2,
		BusyRatio: 1e300, TrueProcessingRate: -1e300, TargetRate: 1e16, Lag: 1e200, ExpectedCatchUp: 1e300}}}
	got := scalingStatus(d, 1).Vertices[0]
	assert.LessOrEqual(t, len(got.VertexID), flinkv1beta1.MaxVertexIDBytes)
	assert.LessOrEqual(t, len(got.Name), flinkv1beta1.MaxVertexNameBytes)
	assert.Equal(t, "1.000e+300", got.BusyRatio)
	assert.Equal(t, "-1.000e+300", got.TrueProcessingRate)
	assert.Equal(t, "1.000e+16", got.TargetRate)
	assert.Equal(t, "Never", got.ExpectedCatchUp)
}

// TestScalingBoundsAllNamed: every bound the autoscaler decides has its API name (a bound
// without one would silently vanish from status.scaling).
func TestScalingBoundsAllNamed(t *testing.T) {
	for _, b := range []autoscaler.Bound{autoscaler.BoundMaxFactor, autoscaler.BoundMinParallelism, autoscaler.BoundMaxParallelism,
		autoscaler.BoundKeyGroups, autoscaler.BoundScaleDownInterval, autoscaler.BoundIneffectiveScaling, autoscaler.BoundMemory, autoscaler.BoundExcluded} {
		sb, ok := scalingBound(b)
		assert.True(t, ok, b)
		assert.Equal(t, string(b), string(sb), "the same spelling in the API")
	}
}

// TestScalingStatusIsBounded: a graph of more vertices than status.scaling lists keeps those
// that change, in order, and counts the rest; names and the message are cut on a rune boundary.
func TestScalingStatusIsBounded(t *testing.T) {
	var vs []autoscaler.VertexDecision
	for i := range 100 {
		v := autoscaler.VertexDecision{ID: autoscaler.VertexID(strings.Repeat("a", 30) + string(rune('0'+i/10)) + string(rune('0'+i%10))),
			Name: strings.Repeat("é", 300), Current: 1, New: 1, Lag: math.NaN(), ExpectedCatchUp: math.NaN()}
		if i%10 == 9 {
			v.New = 2
		}
		vs = append(vs, v)
	}
	got := scalingStatus(autoscaler.Decision{Outcome: autoscaler.OutcomeApplied, Vertices: vs}, 1)
	require.Len(t, got.Vertices, flinkv1beta1.MaxScalingVertices)
	assert.Equal(t, int32(100-flinkv1beta1.MaxScalingVertices), got.OmittedVertices)
	changed := 0
	for i, v := range got.Vertices {
		if v.NewParallelism == 2 {
			changed++
		}
		if i > 0 {
			assert.Less(t, got.Vertices[i-1].VertexID, v.VertexID, "topological order kept")
		}
		assert.LessOrEqual(t, len(v.Name), flinkv1beta1.MaxVertexNameBytes)
		assert.True(t, strings.HasSuffix(v.Name, "…") && !strings.ContainsRune(v.Name, '\uFFFD'))
	}
	assert.Equal(t, 10, changed, "every vertex that changes is listed")
	assert.LessOrEqual(t, len(got.Message), flinkv1beta1.MaxScalingMessageBytes)
	assert.True(t, strings.HasPrefix(got.Message, "Applied: "))
}

// TestScalingKeptUntilTheDecisionChanges: the recorded decision stays while evaluations decide
// nothing or the same again (the metrics move, the status is not rewritten); a different
// decision replaces it; a disabled or reset autoscaler removes it.
func TestScalingKeptUntilTheDecisionChanges(t *testing.T) {
	decision := func(at time.Time, next int, rate float64) *autoscaler.Decision {
		return &autoscaler.Decision{Time: at, Outcome: autoscaler.OutcomeRecommended, Hold: autoscaler.HoldRecommendOnly,
			Vertices: []autoscaler.VertexDecision{{ID: "map", Current: 1, New: next, TrueProcessingRate: rate, Lag: math.NaN(), ExpectedCatchUp: math.NaN()}}}
	}
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	first := autoscaleOutcome{decision: decision(t0, 2, 1000)}.Scaling(nil, 1)
	require.NotNil(t, first)
	assert.Same(t, first, autoscaleOutcome{}.Scaling(first, 1), "nothing decided: kept")
	assert.Same(t, first, autoscaleOutcome{decision: decision(t0.Add(time.Minute), 2, 1010)}.Scaling(first, 2), "the same decision: kept as first reached")
	next := autoscaleOutcome{decision: decision(t0.Add(2*time.Minute), 3, 1500)}.Scaling(first, 2)
	assert.Equal(t, int32(3), next.Vertices[0].NewParallelism, "a different decision replaces it")
	assert.Equal(t, int64(2), next.Generation)
	assert.Nil(t, autoscaleOutcome{clearScaling: true}.Scaling(next, 2), "autoscaler off or reset: removed")
}
