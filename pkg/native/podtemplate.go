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
	overlayJSON, err := json.Marshal(overlay)
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
