package kubectlflink

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Scaling is the autoscaler's latest decision, status.scaling. The API type is added on another
// branch; it is read from the unstructured object so this plugin needs no Go type of it, and
// every field is optional: what the operator wrote is input.
type Scaling struct {
	EvaluatedAt time.Time // zero when absent or unreadable
	Generation  int64
	Outcome     string // Applied, Recommended or Held
	Message     string
	Vertices    []VertexScaling
}

// VertexScaling is one vertex of a scaling decision. The metrics are strings, as recorded.
type VertexScaling struct {
	VertexID, Name                   string
	Current, New                     int64
	BusyRatio, TrueProcessingRate    string
	TargetRate, Lag, ExpectedCatchUp string
	BoundBy                          []string
}

// readScaling reads status.scaling; nil when there is none.
func readScaling(u *unstructured.Unstructured) *Scaling {
	field, found, err := unstructured.NestedFieldNoCopy(u.Object, "status", "scaling")
	raw, ok := field.(map[string]any)
	if err != nil || !found || !ok {
		return nil
	}
	s := &Scaling{
		Generation: integer(raw["generation"]),
		Outcome:    text(raw["outcome"]),
		Message:    text(raw["message"]),
	}
	if at, err := time.Parse(time.RFC3339, text(raw["evaluatedAt"])); err == nil {
		s.EvaluatedAt = at
	}
	vertices, _ := raw["vertices"].([]any)
	for _, v := range vertices {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		vs := VertexScaling{
			VertexID: text(m["vertexId"]), Name: text(m["name"]),
			Current: integer(m["currentParallelism"]), New: integer(m["newParallelism"]),
			BusyRatio: text(m["busyRatio"]), TrueProcessingRate: text(m["trueProcessingRate"]),
			TargetRate: text(m["targetRate"]), Lag: text(m["lag"]), ExpectedCatchUp: text(m["expectedCatchUp"]),
		}
		bounds, _ := m["boundBy"].([]any)
		for _, b := range bounds {
			if t := text(b); t != "" {
				vs.BoundBy = append(vs.BoundBy, t)
			}
		}
		s.Vertices = append(s.Vertices, vs)
	}
	return s
}

// text is a JSON value as text: strings as they are, numbers as JSON writes them.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// integer is a JSON number (or a number written as a string); 0 otherwise.
func integer(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func (p *plugin) explainScalingCommand() *cobra.Command {
	var kind string
	cmd := &cobra.Command{
		Use:   "explain-scaling NAME",
		Short: "Show the autoscaler's latest decision per vertex (status.scaling)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, t, err := p.connectTo(args[0], kind)
			if err != nil {
				return err
			}
			if t.Kind != KindDeployment && t.Kind != KindSessionJob {
				return fmt.Errorf("%s: only FlinkDeployments and FlinkSessionJobs are autoscaled", t)
			}
			u, obj, err := get(cmd.Context(), c.Client, t)
			if err != nil {
				return err
			}
			return renderScaling(p.out(), t, readScaling(u), autoscalerEnabled(obj), p.now())
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "kind of NAME: deployment (default) or sessionjob")
	return cmd
}

// renderScaling prints the decision as a table of vertices, or why there is none.
func renderScaling(w io.Writer, t Target, s *Scaling, enabled bool, now time.Time) error {
	if s == nil {
		why := "the autoscaler has not evaluated the job yet (it waits for its metrics window after each change)"
		if !enabled {
			why = "the autoscaler is not enabled for it (spec.flinkConfiguration " + autoscalerEnabledKey + " is not \"true\")"
		}
		_, err := fmt.Fprintf(w, "%s has no scaling decision (status.scaling): %s.\n", t, why)
		return err
	}
	fmt.Fprintf(w, "Scaling decision of %s: %s", t, orDash(s.Outcome))
	if !s.EvaluatedAt.IsZero() {
		fmt.Fprintf(w, ", evaluated %s ago (%s)", age(now, s.EvaluatedAt), s.EvaluatedAt.UTC().Format(time.RFC3339))
	}
	if s.Generation != 0 {
		fmt.Fprintf(w, ", generation %d", s.Generation)
	}
	fmt.Fprintln(w)
	if s.Message != "" {
		fmt.Fprintf(w, "%s\n", s.Message)
	}
	switch s.Outcome {
	case "Recommended":
		fmt.Fprintln(w, "Recommended only (job.autoscaler.scaling.enabled: false): nothing was changed.")
	case "Held":
		fmt.Fprintln(w, "Held: a limit kept the parallelism where it is.")
	}
	if len(s.Vertices) == 0 {
		_, err := fmt.Fprintln(w, "No vertex recorded.")
		return err
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERTEX\tNAME\tPARALLELISM\tBUSY\tTRUE RATE\tTARGET RATE\tLAG\tCATCH-UP\tBOUND BY")
	for _, v := range s.Vertices {
		change := fmt.Sprintf("%d -> %d", v.Current, v.New)
		if v.Current == v.New {
			change = fmt.Sprintf("%d (kept)", v.Current)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orDash(v.VertexID), orDash(v.Name), change, orDash(v.BusyRatio),
			orDash(v.TrueProcessingRate), orDash(v.TargetRate), orDash(v.Lag), orDash(v.ExpectedCatchUp), orDash(strings.Join(v.BoundBy, ",")))
	}
	return tw.Flush()
}

// autoscalerEnabledKey is the option that turns the autoscaler on for a job.
const autoscalerEnabledKey = options.AutoscalerPrefix + "enabled"

// autoscalerEnabled: the resource's own configuration turns the autoscaler on. The operator's
// defaults are not seen from here, so a false answer is worded as "not enabled for it".
func autoscalerEnabled(obj client.Object) bool {
	var conf flinkv1beta1.FlinkConfiguration
	switch o := obj.(type) {
	case *flinkv1beta1.FlinkDeployment:
		conf = o.Spec.FlinkConfiguration
	case *flinkv1beta1.FlinkSessionJob:
		conf = o.Spec.FlinkConfiguration
	}
	flat, err := conf.Flatten()
	if err != nil {
		return false
	}
	parsed, err := autoscaler.ParseConfig(flat)
	return err == nil && parsed.Enabled
}

// scalingSummary is the one line status prints of a decision.
func scalingSummary(s *Scaling, now time.Time) string {
	var changed []string
	for _, v := range s.Vertices {
		if v.Current != v.New {
			changed = append(changed, fmt.Sprintf("%s %d->%d", orDash(firstOf(v.Name, v.VertexID)), v.Current, v.New))
		}
	}
	line := orDash(s.Outcome)
	if !s.EvaluatedAt.IsZero() {
		line += ", " + age(now, s.EvaluatedAt) + " ago"
	}
	if len(changed) > 0 {
		line += ": " + strings.Join(changed, ", ")
	} else {
		line += ": no parallelism change"
	}
	return line
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
