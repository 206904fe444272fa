package jobs

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Scaling is status.scaling after this outcome: the outcome's decision when it differs from the
// recorded one; the recorded one when the evaluation decided nothing or the same again (a
// recommendation repeated each evaluation does not rewrite the status each reconcile); nil when
// the autoscaler is off or was reset. generation is the resource's metadata.generation.
func (out autoscaleOutcome) Scaling(recorded *flinkv1beta1.ScalingDecision, generation int64) *flinkv1beta1.ScalingDecision {
	switch {
	case out.clearScaling:
		return nil
	case out.decision == nil:
		return recorded
	}
	next := scalingStatus(*out.decision, generation)
	if recorded != nil && sameDecision(recorded, next) {
		return recorded
	}
	return next
}

// sameDecision reports whether two decisions say the same: the outcome, and per vertex its
// parallelism and bounds. The metrics move a little every evaluation and are not compared.
func sameDecision(a, b *flinkv1beta1.ScalingDecision) bool {
	return a.Outcome == b.Outcome && a.OmittedVertices == b.OmittedVertices &&
		slices.EqualFunc(a.Vertices, b.Vertices, func(x, y flinkv1beta1.VertexScaling) bool {
			return x.VertexID == y.VertexID && x.CurrentParallelism == y.CurrentParallelism &&
				x.NewParallelism == y.NewParallelism && slices.Equal(x.BoundBy, y.BoundBy)
		})
}

// scalingStatus renders a decision as status.scaling, within the field's bounds.
func scalingStatus(d autoscaler.Decision, generation int64) *flinkv1beta1.ScalingDecision {
	out := &flinkv1beta1.ScalingDecision{EvaluatedAt: metav1.NewTime(d.Time), Generation: generation, Outcome: scalingOutcome(d.Outcome)}
	kept := keptVertices(d.Vertices, flinkv1beta1.MaxScalingVertices)
	out.OmittedVertices = int32Of(len(d.Vertices) - len(kept))
	for _, v := range kept {
		out.Vertices = append(out.Vertices, flinkv1beta1.VertexScaling{
			VertexID:           truncate(string(v.ID), flinkv1beta1.MaxVertexIDBytes),
			Name:               truncate(v.Name, flinkv1beta1.MaxVertexNameBytes),
			CurrentParallelism: int32Of(v.Current),
			NewParallelism:     int32Of(v.New),
			BusyRatio:          formatNumber(v.BusyRatio, 2),
			TrueProcessingRate: formatNumber(v.TrueProcessingRate, 1),
			TargetRate:         formatNumber(v.TargetRate, 1),
			Lag:                formatNumber(v.Lag, 0),
			ExpectedCatchUp:    formatCatchUp(v.ExpectedCatchUp),
			BoundBy:            scalingBounds(v.Bounds),
		})
	}
	out.Message = truncate(scalingMessage(d, len(d.Vertices)-len(kept)), flinkv1beta1.MaxScalingMessageBytes)
	return out
}

// int32Of is n within int32's range (parallelisms and counts never leave it).
func int32Of(n int) int32 {
	switch {
	case n > math.MaxInt32:
		return math.MaxInt32
	case n < math.MinInt32:
		return math.MinInt32
	}
	return int32(n)
}

// keptVertices are at most n vertices in their topological order, those that change or are bound
// before the others.
func keptVertices(vs []autoscaler.VertexDecision, n int) []autoscaler.VertexDecision {
	if len(vs) <= n {
		return vs
	}
	keep := make([]bool, len(vs))
	left := n
	for pass := 0; pass < 2 && left > 0; pass++ {
		for i, v := range vs {
			notable := v.New != v.Current || len(v.Bounds) > 0
			if left > 0 && !keep[i] && (pass == 1 || notable) {
				keep[i], left = true, left-1
			}
		}
	}
	out := make([]autoscaler.VertexDecision, 0, n)
	for i, v := range vs {
		if keep[i] {
			out = append(out, v)
		}
	}
	return out
}

func scalingOutcome(o autoscaler.Outcome) flinkv1beta1.ScalingOutcome {
	switch o {
	case autoscaler.OutcomeApplied:
		return flinkv1beta1.ScalingApplied
	case autoscaler.OutcomeRecommended:
		return flinkv1beta1.ScalingRecommended
	}
	return flinkv1beta1.ScalingHeld
}

// scalingBounds are the API's names of the autoscaler's bounds.
func scalingBounds(bs []autoscaler.Bound) []flinkv1beta1.ScalingBound {
	var out []flinkv1beta1.ScalingBound
	for _, b := range bs {
		if sb, ok := scalingBound(b); ok {
			out = append(out, sb)
		}
	}
	return out
}

func scalingBound(b autoscaler.Bound) (flinkv1beta1.ScalingBound, bool) {
	switch b {
	case autoscaler.BoundMaxFactor:
		return flinkv1beta1.ScalingBoundMaxFactor, true
	case autoscaler.BoundMinParallelism:
		return flinkv1beta1.ScalingBoundMinParallelism, true
	case autoscaler.BoundMaxParallelism:
		return flinkv1beta1.ScalingBoundMaxParallelism, true
	case autoscaler.BoundKeyGroups:
		return flinkv1beta1.ScalingBoundKeyGroups, true
	case autoscaler.BoundScaleDownInterval:
		return flinkv1beta1.ScalingBoundScaleDownInterval, true
	case autoscaler.BoundIneffectiveScaling:
		return flinkv1beta1.ScalingBoundIneffectiveScaling, true
	case autoscaler.BoundMemory:
		return flinkv1beta1.ScalingBoundMemory, true
	case autoscaler.BoundExcluded:
		return flinkv1beta1.ScalingBoundExcluded, true
	}
	return "", false
}

// formatNumber writes x with the given decimals; "Infinity" for an unbounded rate (an idle
// vertex's), "" when unknown.
func formatNumber(x float64, decimals int) string {
	switch {
	case math.IsNaN(x):
		return ""
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	case math.Abs(x) >= 1e15:
		// Metrics come from the JobManager, which runs the user's code: an absurd value stays
		// short.
		return strconv.FormatFloat(x, 'e', 3, 64)
	}
	return strconv.FormatFloat(x, 'f', decimals, 64)
}

// formatCatchUp writes seconds as a duration rounded to the second ("3m20s"); "Never" when the
// lag would not shrink, "" when unknown.
func formatCatchUp(seconds float64) string {
	switch {
	case math.IsNaN(seconds):
		return ""
	case math.IsInf(seconds, 1) || seconds >= math.MaxInt64/float64(time.Second):
		return "Never"
	}
	return time.Duration(seconds * float64(time.Second)).Round(time.Second).String()
}

// scalingMessage says what a decision changes and, when it is not applied, why.
func scalingMessage(d autoscaler.Decision, omitted int) string {
	var b strings.Builder
	switch d.Hold {
	case autoscaler.HoldRecommendOnly:
		b.WriteString("Recommended only, " + options.AutoscalerPrefix + "scaling.enabled is false: ")
	case autoscaler.HoldExcludedPeriod:
		b.WriteString("Recommended only, within " + options.AutoscalerPrefix + "excluded.periods: ")
	case autoscaler.HoldScaleDownWait:
		b.WriteString("Held: a scale-down waits for " + options.AutoscalerPrefix + "scale-down.interval: ")
	case autoscaler.HoldIneffective:
		b.WriteString("Held: the last scale-up was ineffective (" + options.AutoscalerPrefix + "scaling.effectiveness.detection.enabled): ")
	case autoscaler.HoldMemoryPressure:
		b.WriteString("Held: heap usage or GC time is above " + options.AutoscalerPrefix + "memory thresholds; adjust the memory: ")
	case autoscaler.HoldParallelismLimit:
		b.WriteString("Held: the load asks for more or less, but the limits keep the parallelism: ")
	default:
		b.WriteString("Applied: ")
	}
	n := 0
	for _, v := range d.Vertices {
		if v.New == v.Current && len(v.Bounds) == 0 {
			continue
		}
		if slices.Equal(v.Bounds, []autoscaler.Bound{autoscaler.BoundExcluded}) {
			continue
		}
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		name := v.Name
		if name == "" {
			name = string(v.ID)
		}
		b.WriteString(truncate(name, 64) + " " + strconv.Itoa(v.Current) + " -> " + strconv.Itoa(v.New))
		if len(v.Bounds) > 0 {
			bs := make([]string, len(v.Bounds))
			for i, bd := range v.Bounds {
				bs[i] = string(bd)
			}
			b.WriteString(" (bound by " + strings.Join(bs, ", ") + ")")
		}
	}
	if omitted > 0 {
		b.WriteString("; " + strconv.Itoa(omitted) + " more vertices not listed")
	}
	return b.String()
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
