package autoscaler

import (
	"maps"
	"strings"
	"testing"
)

func TestTopologyOrder(t *testing.T) {
	// Listed out of order: sink first, a second source joining at the map.
	top := Topology{Vertices: []Vertex{
		{ID: "sink", Inputs: []VertexID{"map"}},
		{ID: "map", Inputs: []VertexID{"a", "b"}},
		{ID: "a", Source: true},
		{ID: "b"},
	}}
	order, err := top.Order()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range order {
		ids = append(ids, string(v.ID))
	}
	if got := strings.Join(ids, ","); got != "a,b,map,sink" {
		t.Errorf("order %s", got)
	}
	if s := top.Sources(); len(s) != 2 || s[0].ID != "a" || s[1].ID != "b" {
		t.Errorf("sources %+v", s)
	}
	for name, bad := range map[string]Topology{
		"cycle":         {Vertices: []Vertex{{ID: "a", Inputs: []VertexID{"b"}}, {ID: "b", Inputs: []VertexID{"a"}}, {ID: "s"}}},
		"unknown input": {Vertices: []Vertex{{ID: "a", Inputs: []VertexID{"x"}}}},
		"duplicate":     {Vertices: []Vertex{{ID: "a"}, {ID: "a"}}},
	} {
		if _, err := bad.Order(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestOverrides(t *testing.T) {
	o := map[VertexID]int{"bb": 2, "aa": 10}
	s := FormatOverrides(o)
	if s != "aa:10,bb:2" {
		t.Errorf("format %q", s)
	}
	back, err := ParseOverrides(s)
	if err != nil || !maps.Equal(back, o) {
		t.Errorf("parse %v %v", back, err)
	}
	if got, err := ParseOverrides(" 'aa' : \"3\" , bb:4"); err != nil || got["aa"] != 3 || got["bb"] != 4 {
		t.Errorf("quoted and spaced: %v %v", got, err)
	}
	if got, err := ParseOverrides(""); err != nil || len(got) != 0 {
		t.Errorf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"aa", "aa:0", "aa:-1", ":3", "aa:x", "aa:2,,bb:3"} {
		if _, err := ParseOverrides(bad); err == nil || !strings.Contains(err.Error(), OverridesKey) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
