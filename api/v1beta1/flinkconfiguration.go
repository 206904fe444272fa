package v1beta1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// FlinkConfiguration holds Flink configuration as the user wrote it: flat keys
// ("state.savepoints.dir": "s3://..."), nested YAML maps (state: {savepoints: {dir: ...}}),
// or both, with values of any scalar type. The raw JSON is preserved exactly, so a resource
// read back from the API server is the resource the user applied; Flatten gives the typed,
// flat view that Flink consumes.
//
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:object:generate=false
type FlinkConfiguration struct {
	// Raw is the JSON object as received; nil when unset.
	Raw json.RawMessage `json:"-"`
}

// NewFlinkConfiguration builds a FlinkConfiguration of flat string keys and values.
func NewFlinkConfiguration(flat map[string]string) FlinkConfiguration {
	if len(flat) == 0 {
		return FlinkConfiguration{}
	}
	raw, err := json.Marshal(flat)
	if err != nil { // a map[string]string always marshals
		panic(fmt.Sprintf("marshal flink configuration: %v", err))
	}
	return FlinkConfiguration{Raw: raw}
}

// IsEmpty reports whether no configuration is set.
func (c FlinkConfiguration) IsEmpty() bool {
	trimmed := bytes.TrimSpace(c.Raw)
	return len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) || bytes.Equal(trimmed, []byte("{}"))
}

// IsZero reports whether nothing was received, so that `omitzero` leaves the field out
// instead of writing null (an explicit {} is kept).
func (c FlinkConfiguration) IsZero() bool { return len(c.Raw) == 0 }

// MarshalJSON writes the configuration as received.
func (c FlinkConfiguration) MarshalJSON() ([]byte, error) {
	if len(c.Raw) == 0 {
		return []byte("null"), nil
	}
	return c.Raw, nil
}

// UnmarshalJSON keeps the JSON object as is; anything but an object or null is an error.
func (c *FlinkConfiguration) UnmarshalJSON(data []byte) error {
	trimmed := bytes.TrimSpace(data)
	if bytes.Equal(trimmed, []byte("null")) {
		c.Raw = nil
		return nil
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("flinkConfiguration must be an object of configuration keys, got %s", abbreviate(trimmed))
	}
	c.Raw = append(c.Raw[:0], trimmed...)
	return nil
}

// DeepCopyInto copies the configuration into out.
func (c *FlinkConfiguration) DeepCopyInto(out *FlinkConfiguration) {
	if c.Raw == nil {
		out.Raw = nil
		return
	}
	out.Raw = append(json.RawMessage(nil), c.Raw...)
}

// DeepCopy returns a copy of the configuration.
func (c *FlinkConfiguration) DeepCopy() *FlinkConfiguration {
	if c == nil {
		return nil
	}
	out := new(FlinkConfiguration)
	c.DeepCopyInto(out)
	return out
}

// Flatten returns the configuration as Flink reads it: nested maps joined with ".",
// lists joined with ";" (Flink's list syntax), scalars in their plain text form
// (numbers as written, booleans as true/false). Null values are left out. A key given
// both flat and nested ("a.b" and a: {b: ...}) is an error naming the key, because
// which one would win is not something a user should have to guess.
func (c FlinkConfiguration) Flatten() (map[string]string, error) {
	flat := map[string]string{}
	if c.IsEmpty() {
		return flat, nil
	}
	dec := json.NewDecoder(bytes.NewReader(c.Raw))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("flinkConfiguration: %w", err)
	}
	if err := flattenInto(flat, "", root); err != nil {
		return nil, err
	}
	return flat, nil
}

// Keys returns the flattened keys in sorted order, ignoring values that cannot be flattened.
func (c FlinkConfiguration) Keys() []string {
	flat, err := c.Flatten()
	if err != nil {
		return nil
	}
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func flattenInto(flat map[string]string, prefix string, node map[string]any) error {
	// Sorted for deterministic error messages.
	keys := make([]string, 0, len(node))
	for k := range node {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		v := node[k]
		if nested, ok := v.(map[string]any); ok {
			if err := flattenInto(flat, key, nested); err != nil {
				return err
			}
			continue
		}
		if v == nil {
			continue
		}
		text, err := scalarText(key, v)
		if err != nil {
			return err
		}
		if _, dup := flat[key]; dup {
			return fmt.Errorf("flinkConfiguration: key %q is given more than once (flat and nested)", key)
		}
		flat[key] = text
	}
	return nil
}

func scalarText(key string, v any) (string, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case json.Number:
		return t.String(), nil
	case bool:
		if t {
			return "true", nil
		}
		return "false", nil
	case []any:
		parts := make([]string, 0, len(t))
		for i, item := range t {
			if _, isMap := item.(map[string]any); isMap {
				return "", fmt.Errorf("flinkConfiguration: %s[%d]: lists may hold only scalars", key, i)
			}
			if item == nil {
				continue
			}
			s, err := scalarText(fmt.Sprintf("%s[%d]", key, i), item)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ";"), nil
	default:
		return "", fmt.Errorf("flinkConfiguration: %s: unsupported value of type %T", key, v)
	}
}

func abbreviate(b []byte) string {
	const max = 40
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
