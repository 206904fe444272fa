package native

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// MergeTemplates merges a component's pod template (jobManager.podTemplate or
// taskManager.podTemplate) onto the common one (spec.podTemplate) as upstream's
// FlinkUtils.mergePodTemplates does, on the templates' JSON:
//
//   - an object field merges into the same field of common, key by key;
//   - a scalar, or a value common lacks or holds as a scalar, comes from component;
//   - a component value that is not an object never replaces an object of common;
//   - two arrays merge by index: element i of component merges into element i of common when
//     both are objects (common's element is kept otherwise, so common's args win where both
//     have one), and component's extra elements are appended;
//   - with byName (kubernetes.operator.pod-template.merge-arrays-by-name), two arrays whose
//     elements all have a "name" merge by name instead: same-named elements merge, common's
//     order is kept and component's new elements follow.
//
// Either template may be nil.
func MergeTemplates(common, component *corev1.Pod, byName bool) (*corev1.Pod, error) {
	switch {
	case component == nil && common == nil:
		return &corev1.Pod{}, nil
	case component == nil:
		return common.DeepCopy(), nil
	case common == nil:
		return component.DeepCopy(), nil
	}
	to, err := podTree(common)
	if err != nil {
		return nil, err
	}
	from, err := podTree(component)
	if err != nil {
		return nil, err
	}
	mergeTree(to, from, byName)
	raw, err := json.Marshal(to)
	if err != nil {
		return nil, fmt.Errorf("merge pod templates: %w", err)
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("merge pod templates: %w", err)
	}
	return out, nil
}

// podTree is a pod's JSON as generic values, without nulls: upstream's templates are
// serialized without null fields, and a null (a Go field without omitempty, such as
// containers) must not replace what the other template sets.
func podTree(pod *corev1.Pod) (map[string]any, error) {
	raw, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("merge pod templates: %w", err)
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, fmt.Errorf("merge pod templates: %w", err)
	}
	dropNulls(tree)
	return tree, nil
}

func mergeTree(to, from map[string]any, byName bool) {
	for key, fromValue := range from {
		switch toValue := to[key].(type) {
		case []any:
			if fromArray, ok := fromValue.([]any); ok {
				to[key] = mergeArrays(toValue, fromArray, byName)
			} else {
				to[key] = fromValue
			}
		case map[string]any:
			if fromMap, ok := fromValue.(map[string]any); ok {
				mergeTree(toValue, fromMap, byName)
			}
		default:
			to[key] = fromValue
		}
	}
}

func mergeArrays(to, from []any, byName bool) []any {
	if byName && allNamed(to) && allNamed(from) {
		names, elements := groupByName(to)
		fromNames, fromElements := groupByName(from)
		for _, name := range fromNames {
			if existing, ok := elements[name]; ok {
				mergeTree(existing, fromElements[name], byName)
				continue
			}
			names = append(names, name)
			elements[name] = fromElements[name]
		}
		out := make([]any, 0, len(names))
		for _, name := range names {
			out = append(out, elements[name])
		}
		return out
	}
	for i, fromValue := range from {
		if i >= len(to) {
			to = append(to, fromValue)
			continue
		}
		toMap, toIsMap := to[i].(map[string]any)
		fromMap, fromIsMap := fromValue.(map[string]any)
		if toIsMap && fromIsMap {
			mergeTree(toMap, fromMap, byName)
		}
	}
	return to
}

// allNamed: every element is an object with a string "name" (pod fields' names are strings).
func allNamed(array []any) bool {
	for _, e := range array {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m["name"].(string); !ok {
			return false
		}
	}
	return true
}

// groupByName orders the elements by first appearance of their name; a later element of the
// same name replaces the earlier one, as upstream's grouping into a LinkedHashMap does.
func groupByName(array []any) ([]string, map[string]map[string]any) {
	var names []string
	elements := map[string]map[string]any{}
	for _, e := range array {
		m := e.(map[string]any)
		name := m["name"].(string)
		if _, seen := elements[name]; !seen {
			names = append(names, name)
		}
		elements[name] = m
	}
	return names, elements
}
