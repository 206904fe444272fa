// Package yamlmerge patches test resources: a recursive merge of decoded YAML maps where a nil
// value deletes the key (JSON merge patch semantics). Test-only code.
package yamlmerge

// Merge returns base with patch merged in: nested maps merge, other values from patch win, and
// a nil value in patch removes the key.
func Merge(base, patch map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, pv := range patch {
		if pv == nil {
			delete(out, k)
			continue
		}
		if pm, ok := pv.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = Merge(bm, pm)
				continue
			}
		}
		out[k] = pv
	}
	return out
}
