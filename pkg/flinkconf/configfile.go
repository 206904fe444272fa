package flinkconf

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// ConfigFileName is the file Flink reads its configuration from: flink-conf.yaml up to 1.18,
// config.yaml from 1.19 (the only one 2.x reads; 1.19/1.20 still prefer flink-conf.yaml when
// both exist, so only one is ever written).
func ConfigFileName(v flinkv1beta1.FlinkVersion) string {
	if v != "" && !AtLeast(v, 1, 19) {
		return "flink-conf.yaml"
	}
	return "config.yaml"
}

// RenderConfigFile writes the configuration in the format of its file. flink-conf.yaml is read
// by Flink's legacy line parser ("key: value", nothing unquoted), so values are written as
// they are, and an entry the parser would not read back as itself is refused (see
// CheckLegacyEntry). config.yaml is standard YAML, so values are quoted wherever YAML would
// read them as something other than the same string.
func RenderConfigFile(conf Config, v flinkv1beta1.FlinkVersion) (string, error) {
	if ConfigFileName(v) == "flink-conf.yaml" {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(conf)) {
			if err := CheckLegacyEntry(k, conf[k]); err != nil {
				return "", fmt.Errorf("flinkConfiguration %q: %w", k, err)
			}
			fmt.Fprintf(&b, "%s: %s\n", k, conf[k])
		}
		return b.String(), nil
	}
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if err := CheckYAMLEntry(k, conf[k]); err != nil {
			return "", fmt.Errorf("flinkConfiguration %q: %w", k, err)
		}
	}
	out, err := yaml.Marshal(map[string]string(conf))
	if err != nil {
		return "", fmt.Errorf("render config.yaml: %w", err)
	}
	// Whatever the emitter does, Flink must read back exactly what was given.
	var back map[string]any
	if err := yaml.Unmarshal(out, &back); err != nil {
		return "", fmt.Errorf("render config.yaml: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if back[k] != conf[k] {
			return "", fmt.Errorf("flinkConfiguration %q: the value does not read back from config.yaml as written", k)
		}
	}
	return string(out), nil
}

// yamlSafe reports whether YAML carries r as written. Refused: control characters other than
// tab, LF and CR (the emitter wrote DEL raw, and a parser, Flink's too, then refuses the whole
// file), and the characters YAML 1.1 also reads as line breaks, NEL, LINE SEPARATOR and
// PARAGRAPH SEPARATOR (the emitter wrote "value\u0085" so that Flink 1.20 read "value ").
func yamlSafe(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return true
	case r < 0x20 || r == 0x7F || (r >= 0x80 && r <= 0x9F):
		return false
	case r == 0x2028 || r == 0x2029 || r == 0xFFFE || r == 0xFFFF:
		return false
	}
	return true
}

// CheckYAMLEntry reports why an entry cannot be written to config.yaml (Flink 1.19 and newer)
// so that Flink reads it back as written.
func CheckYAMLEntry(key, value string) error {
	for _, s := range []string{key, value} {
		if i := strings.IndexFunc(s, func(r rune) bool { return !yamlSafe(r) }); i >= 0 {
			r, _ := utf8.DecodeRuneInString(s[i:])
			return fmt.Errorf("keys and values may not contain control characters or line separators (here %U) in config.yaml: YAML cannot carry them as written", r)
		}
	}
	return nil
}

// CheckConfigEntry reports why an entry cannot be written to the configuration file of Flink
// version v (CheckLegacyEntry or CheckYAMLEntry).
func CheckConfigEntry(v flinkv1beta1.FlinkVersion, key, value string) error {
	if ConfigFileName(v) == "flink-conf.yaml" {
		return CheckLegacyEntry(key, value)
	}
	return CheckYAMLEntry(key, value)
}

// TrimKey is a key as Flink's legacy parser stores it: Java's String.trim, which removes every
// character up to U+0020 (spaces, tabs, control characters) at both ends.
func TrimKey(k string) string {
	return strings.TrimFunc(k, func(r rune) bool { return r <= ' ' })
}

// CheckLegacyEntry reports why "key: value" cannot be a line of flink-conf.yaml without setting
// a key other than key. Flink 1.x's GlobalConfiguration.loadYAMLResource reads the file with
// BufferedReader.readLine, which ends a line at '\n', '\r' or "\r\n"; cuts it at the first '#';
// splits it at the first ": "; and trims key and value. A later line wins. So:
//   - a line break in a value or key starts a new line that can set any key (for example
//     "x\rkubernetes.cluster-id: other"); '\n' and '\r' are refused in both;
//   - a key padded with spaces or control characters is stored trimmed, as the key it pads,
//     and sorts after it ("kubernetes.cluster-id "), so it would override the operator's own
//     line: refused;
//   - a ':' in a key would move the split (and "a: b" as a key is a different key): refused.
//
// What remains only changes the entry's own value: ": " inside a value stays in the value (the
// split is at the first one, which the rendering puts after the key), a '#' cuts the value
// there, and a value's surrounding spaces are trimmed. Those are left as upstream writes them.
func CheckLegacyEntry(key, value string) error {
	switch {
	case key == "":
		return fmt.Errorf("an empty key cannot be written to flink-conf.yaml")
	case strings.ContainsAny(key, "\r\n:"):
		return fmt.Errorf("keys may not contain ':' or line breaks in flink-conf.yaml (Flink 1.18 and older)")
	case TrimKey(key) != key:
		return fmt.Errorf("keys may not begin or end with spaces or control characters in flink-conf.yaml (Flink 1.18 and older): Flink would read it as %q", TrimKey(key))
	case strings.ContainsAny(value, "\r\n"):
		return fmt.Errorf("values may not contain line breaks (\\n or \\r) in flink-conf.yaml (Flink 1.18 and older): each line is read as a separate key")
	}
	return nil
}
