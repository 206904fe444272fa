package autoscaler

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The state's YAML is read by walking the parsed node tree rather than with yaml's reflective
// decoder: the walk is linear in the nodes (the reflective decoder compares every map key with
// every other to find duplicates, quadratic in a tenant-chosen key count), and it reads exactly
// the shapes upstream's Jackson mapper writes, ignoring unknown fields as Jackson's
// FAIL_ON_UNKNOWN_PROPERTIES=false does.

type entry struct {
	key string
	val *yaml.Node
}

// root is the document's top node, nil for an empty document.
func root(doc *yaml.Node) *yaml.Node {
	if doc == nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || (n.Style == 0 && (n.Value == "" || n.Value == "~" || n.Value == "null"))))
}

// mapping returns a map node's entries in order; null is an empty map. A key given twice is an
// error, as in Jackson.
func mapping(n *yaml.Node, what string) ([]entry, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: %s is not a map", n.Line, what)
	}
	out := make([]entry, 0, len(n.Content)/2)
	seen := make(map[string]struct{}, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: a key of %s is not a scalar", k.Line, what)
		}
		if _, dup := seen[k.Value]; dup {
			return nil, fmt.Errorf("line %d: key %q of %s given twice", k.Line, truncate(k.Value), what)
		}
		seen[k.Value] = struct{}{}
		out = append(out, entry{key: k.Value, val: n.Content[i+1]})
	}
	return out, nil
}

// fields returns an object's fields by name (the later of a repeated one is refused by mapping).
func fields(n *yaml.Node, what string) (map[string]*yaml.Node, error) {
	es, err := mapping(n, what)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*yaml.Node, len(es))
	for _, e := range es {
		out[e.key] = e.val
	}
	return out, nil
}

func sequence(n *yaml.Node, what string) ([]*yaml.Node, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: %s is not a list", n.Line, what)
	}
	return n.Content, nil
}

func scalar(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: %s is not a scalar", n.Line, what)
	}
	return strings.TrimSpace(n.Value), nil
}

func doubleNode(n *yaml.Node, what string) (float64, error) {
	s, err := scalar(n, what)
	if err != nil {
		return 0, err
	}
	v, err := parseJavaDouble(s)
	if err != nil {
		return 0, fmt.Errorf("line %d: %s: %w", n.Line, what, err)
	}
	return v, nil
}

func intNode(n *yaml.Node, what string) (int, error) {
	if isNull(n) {
		return 0, nil
	}
	s, err := scalar(n, what)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("line %d: %s %q is not an integer", n.Line, what, truncate(s))
	}
	return int(v), nil
}

func boolNode(n *yaml.Node, what string) (bool, error) {
	if isNull(n) {
		return false, nil
	}
	s, err := scalar(n, what)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("line %d: %s %q is not true or false", n.Line, what, truncate(s))
}

func instantNode(n *yaml.Node, what string) (time.Time, error) {
	if isNull(n) {
		return time.Time{}, fmt.Errorf("%s is missing", what)
	}
	s, err := scalar(n, what)
	if err != nil {
		return time.Time{}, err
	}
	t, err := parseInstant(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("line %d: %s: %w", n.Line, what, err)
	}
	return t, nil
}

func instantKey(e entry, n *yaml.Node) (time.Time, error) {
	t, err := parseInstant(e.key)
	if err != nil {
		return time.Time{}, fmt.Errorf("line %d: %w", n.Line, err)
	}
	return t, nil
}

// durationNode reads a Duration as JavaTimeModule writes it: decimal seconds, or ISO-8601
// (PT5M).
func durationNode(n *yaml.Node, what string) (time.Duration, error) {
	s, err := scalar(n, what)
	if err != nil {
		return 0, err
	}
	var v time.Duration
	if strings.HasPrefix(strings.ToUpper(s), "PT") {
		if v, err = time.ParseDuration(strings.ToLower(s[2:])); err != nil || len(s) > maxNumberLen {
			return 0, fmt.Errorf("line %d: %s %q is not an ISO-8601 duration", n.Line, what, truncate(s))
		}
	} else if v, err = parseDecimalSeconds(s); err != nil {
		return 0, fmt.Errorf("line %d: %s: %w", n.Line, what, err)
	}
	if v < -maxDuration || v > maxDuration {
		return 0, fmt.Errorf("line %d: %s %q is out of range: want at most %v either way", n.Line, what, truncate(s), maxDuration)
	}
	return v, nil
}

// maxDuration bounds a stored duration (a restart takes seconds to minutes), so that it is
// written back exactly.
const maxDuration = 1e9 * time.Second

// optionalDouble reads a double that Jackson leaves out when null (NON_NULL): absent is 0, as a
// Java double field defaults to.
func optionalDouble(n *yaml.Node, what string) (float64, error) {
	if isNull(n) {
		return 0, nil
	}
	return doubleNode(n, what)
}
