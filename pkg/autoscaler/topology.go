package autoscaler

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// isSource reports whether the vertex reads from outside the job (upstream: has no inputs).
func (v Vertex) isSource() bool { return v.Source || len(v.Inputs) == 0 }

// Sources returns the source vertices in the topology's order.
func (t Topology) Sources() []Vertex {
	var out []Vertex
	for _, v := range t.Vertices {
		if v.isSource() {
			out = append(out, v)
		}
	}
	return out
}

// Vertex returns the vertex with the given id.
func (t Topology) Vertex(id VertexID) (Vertex, bool) {
	for _, v := range t.Vertices {
		if v.ID == id {
			return v, true
		}
	}
	return Vertex{}, false
}

// outputs returns, per vertex, the vertices it feeds.
func (t Topology) outputs() map[VertexID][]VertexID {
	out := map[VertexID][]VertexID{}
	for _, v := range t.Vertices {
		for _, in := range v.Inputs {
			out[in] = append(out[in], v.ID)
		}
	}
	return out
}

// Order returns the vertices in topological order (every vertex after its inputs), keeping the
// listed order among vertices that do not depend on each other. A graph with an unknown input,
// a duplicate id or a cycle is an error: evaluation propagates rates along the edges and needs
// every input evaluated first.
func (t Topology) Order() ([]Vertex, error) {
	index := map[VertexID]int{}
	for i, v := range t.Vertices {
		if _, dup := index[v.ID]; dup {
			return nil, fmt.Errorf("job graph lists vertex %s twice", v.ID)
		}
		index[v.ID] = i
	}
	pending := make([]int, len(t.Vertices))
	for i, v := range t.Vertices {
		for _, in := range v.Inputs {
			if _, ok := index[in]; !ok {
				return nil, fmt.Errorf("vertex %s has unknown input %s", v.ID, in)
			}
		}
		pending[i] = len(v.Inputs)
	}
	outs := t.outputs()
	done := make([]bool, len(t.Vertices))
	out := make([]Vertex, 0, len(t.Vertices))
	for len(out) < len(t.Vertices) {
		progressed := false
		for i, v := range t.Vertices {
			if done[i] || pending[i] > 0 {
				continue
			}
			done[i], progressed = true, true
			out = append(out, v)
			for _, o := range outs[v.ID] {
				pending[index[o]]--
			}
		}
		if !progressed {
			return nil, fmt.Errorf("job graph has a cycle")
		}
	}
	return out, nil
}

// OverridesKey is the Flink option that carries per-vertex parallelism overrides.
const OverridesKey = "pipeline.jobvertex-parallelism-overrides"

// FormatOverrides renders overrides as pipeline.jobvertex-parallelism-overrides
// ("vid:p,vid:p", sorted by vertex id so the rendering is stable across reconciles).
func FormatOverrides(o map[VertexID]int) string {
	ids := make([]string, 0, len(o))
	for id := range o {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		parts = append(parts, id+":"+strconv.Itoa(o[VertexID(id)]))
	}
	return strings.Join(parts, ",")
}

// ParseOverrides parses pipeline.jobvertex-parallelism-overrides (Flink's map syntax: comma
// separated key:value pairs, either side optionally quoted).
func ParseOverrides(s string) (map[VertexID]int, error) {
	out := map[VertexID]int{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, entry := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(entry, ":")
		k, v = unquote(strings.TrimSpace(k)), unquote(strings.TrimSpace(v))
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: entry %q is not vertexID:parallelism", OverridesKey, strings.TrimSpace(entry))
		}
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 {
			return nil, fmt.Errorf("%s: parallelism %q of vertex %s is not a positive integer", OverridesKey, v, k)
		}
		out[VertexID(k)] = p
	}
	return out, nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}
