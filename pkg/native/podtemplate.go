package native

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// MergePods merges overlay onto base with Kubernetes' strategic merge, the semantics of
// `kubectl apply` and patch: maps merge, scalars come from overlay, and lists with a merge key
// merge element by element (containers, init containers and volumes by name, env by name,
// volume mounts by mount path, ports by container port); other lists (args, command) are
// replaced. This is upstream's kubernetes.operator.pod-template.merge-arrays-by-name=true
// behaviour: sidecars and volumes of both templates survive, and same-named containers are
// merged field by field. Either pod may be nil.
func MergePods(base, overlay *corev1.Pod) (*corev1.Pod, error) {
	switch {
	case base == nil && overlay == nil:
		return &corev1.Pod{}, nil
	case base == nil:
		return overlay.DeepCopy(), nil
	case overlay == nil:
		return base.DeepCopy(), nil
	}
	baseJSON, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	overlayJSON, err := withoutNulls(overlay)
	if err != nil {
		return nil, err
	}
	merged, err := strategicpatch.StrategicMergePatch(baseJSON, overlayJSON, corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("merge pod templates: %w", err)
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(merged, out); err != nil {
		return nil, fmt.Errorf("merge pod templates: %w", err)
	}
	return out, nil
}

// withoutNulls marshals a pod without its null fields. In a strategic merge patch a null
// deletes the field, and corev1.PodSpec.Containers has no omitempty: a template that only sets
// labels would otherwise delete every container of the template it is merged onto.
func withoutNulls(pod *corev1.Pod) ([]byte, error) {
	raw, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	dropNulls(m)
	return json.Marshal(m)
}

func dropNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if val == nil {
				delete(t, k)
				continue
			}
			dropNulls(val)
		}
	case []any:
		for _, val := range t {
			dropNulls(val)
		}
	}
}
