package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"sigs.k8s.io/yaml"
)

// Paths of the shipped monitoring, relative to the repository root.
const (
	RulesFile     = "config/prometheus/rules.yaml"
	RuleTestsDir  = "config/prometheus/tests"
	DashboardFile = "config/grafana/flink-operator.json"
)

// RuleGroups is the spec of a PrometheusRule: Prometheus's own rule file format.
type RuleGroups struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is one group of rules.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// Rule is an alerting or a recording rule.
type Rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// LoadRules reads the PrometheusRule and returns its groups.
func LoadRules(root string) (*RuleGroups, error) {
	raw, err := os.ReadFile(filepath.Join(root, RulesFile))
	if err != nil {
		return nil, err
	}
	var obj struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       RuleGroups     `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(raw, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", RulesFile, err)
	}
	if obj.Kind != "PrometheusRule" || len(obj.Spec.Groups) == 0 {
		return nil, fmt.Errorf("%s: want a PrometheusRule with rule groups", RulesFile)
	}
	return &obj.Spec, nil
}

// WritePrometheusFile writes the groups as a Prometheus rule file, the form promtool reads.
func (g *RuleGroups) WritePrometheusFile(path string) error {
	out, err := yaml.Marshal(g)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

// Query is one PromQL expression of the dashboard and where it is.
type Query struct {
	Where string
	Expr  string
}

// labelValues is Grafana's template query label_values(metric, label).
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*(?:(.+),)?\s*\w+\s*\)\s*$`)

// DashboardQueries returns every PromQL expression of the dashboard (panel targets, including
// rows' nested panels, and template variables; label_values(m, l) yields m).
func DashboardQueries(root string) ([]Query, error) {
	raw, err := os.ReadFile(filepath.Join(root, DashboardFile))
	if err != nil {
		return nil, err
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", DashboardFile, err)
	}
	var out []Query
	var walk func([]panel)
	walk = func(panels []panel) {
		for _, p := range panels {
			for _, t := range p.Targets {
				out = append(out, Query{Where: fmt.Sprintf("panel %q target %s", p.Title, t.RefID), Expr: t.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := v.Query.Query
		if m := labelValues.FindStringSubmatch(q); m != nil {
			q = m[1]
		}
		out = append(out, Query{Where: fmt.Sprintf("variable %q", v.Name), Expr: q})
	}
	return out, nil
}

type dashboard struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string        `json:"name"`
			Type  string        `json:"type"`
			Query templateQuery `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// templateQuery is a variable's query: a string, or an object with a query field (Grafana 9+).
type templateQuery struct{ Query string }

func (q *templateQuery) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &q.Query); err == nil {
		return nil
	}
	var obj struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	q.Query = obj.Query
	return nil
}
