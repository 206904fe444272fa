package native

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// MergePods merges overlay onto base with Kubernetes' strategic merge, the semantics of
// `kubectl apply` and patch: maps merge, scalars come from overlay, and lists with a merge key
// merge element by element (containers, init containers and volumes by name, env by name,
// volume mounts by mount path, ports by container port); other lists (args, command) are
// replaced. It lays what the operator generates over the user's template, as Flink's own
// decorators do (OverlayPod); the user's two templates are merged by MergeTemplates, as
// upstream. Either pod may be nil.
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
	for _, doc := range [][]byte{baseJSON, overlayJSON} {
		if key := directiveKey(doc); key != "" {
			return nil, fmt.Errorf("merge pod templates: key %q: keys beginning with '$' are strategic merge directives (a label \"$patch: delete\" would delete the others)", key)
		}
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

// OverlayPod lays the operator's generated pod over the user's template: the operator's fields
// win. Strategic merge merges same-named volumes field by field, so a user volume named like
// one of the operator's would live on inside it (an emptyDir beside the configMap, making the
// pod invalid, or configMap items renaming the files Flink reads): the operator's volumes
// replace same-named user volumes whole.
func OverlayPod(user, generated *corev1.Pod) (*corev1.Pod, error) {
	if user != nil && generated != nil && len(generated.Spec.Volumes) > 0 {
		ours := map[string]bool{}
		for _, v := range generated.Spec.Volumes {
			ours[v.Name] = true
		}
		user = user.DeepCopy()
		kept := user.Spec.Volumes[:0]
		for _, v := range user.Spec.Volumes {
			if !ours[v.Name] {
				kept = append(kept, v)
			}
		}
		user.Spec.Volumes = kept
	}
	return MergePods(user, generated)
}

// directiveKey returns a map key of a pod's JSON that strategic merge would read as a directive
// ("$patch", "$retainKeys", "$setElementOrder/...", "$deleteFromPrimitiveList/..."). Pod fields
// never begin with '$'; such keys can only come from a map a user fills (labels, annotations,
// node selectors), so they are refused rather than obeyed.
func directiveKey(doc []byte) string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return ""
	}
	var walk func(any) string
	walk = func(v any) string {
		switch t := v.(type) {
		case map[string]any:
			for k, val := range t {
				if strings.HasPrefix(k, "$") {
					return k
				}
				if found := walk(val); found != "" {
					return found
				}
			}
		case []any:
			for _, val := range t {
				if found := walk(val); found != "" {
					return found
				}
			}
		}
		return ""
	}
	return walk(v)
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
