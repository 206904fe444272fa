package flinkconf

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// legacyEntry is one key Flink read from flink-conf.yaml, with the physical line it came from.
type legacyEntry struct {
	line       int
	key, value string
}

// parseLegacyConf reads flink-conf.yaml as Flink 1.x's GlobalConfiguration.loadYAMLResource
// does (written from its documented behaviour): lines end at '\n', '\r' or "\r\n"
// (BufferedReader.readLine); everything from the first '#' is a comment; the rest is split at
// the first ": "; key and value are trimmed as Java's String.trim does (every char <= ' ');
// lines without ": ", or with an empty key or value, are skipped. Later lines win.
func parseLegacyConf(file string) []legacyEntry {
	var out []legacyEntry
	javaTrim := func(s string) string { return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }) }
	file = strings.ReplaceAll(file, "\r\n", "\n")
	lines := strings.FieldsFunc(file, func(r rune) bool { return r == '\n' || r == '\r' })
	for n, line := range lines {
		conf, _, _ := strings.Cut(line, "#")
		conf = javaTrim(conf)
		key, value, ok := strings.Cut(conf, ": ")
		if !ok {
			continue
		}
		key, value = javaTrim(key), javaTrim(value)
		if key == "" || value == "" {
			continue
		}
		out = append(out, legacyEntry{line: n, key: key, value: value})
	}
	return out
}

// legacyValue is what Flink keeps of a value written on its own line: up to a '#', trimmed.
func legacyValue(v string) string {
	v, _, _ = strings.Cut(v, "#")
	return strings.TrimFunc(v, func(r rune) bool { return r <= ' ' })
}

// checkLegacyRoundTrip fails unless every key Flink reads from file is a key of conf, read
// once, with its own value (as far as the format keeps it).
func checkLegacyRoundTrip(t *testing.T, conf Config, file string) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range parseLegacyConf(file) {
		v, ok := conf[e.key]
		if !ok {
			t.Fatalf("line %d sets %q, which is not a key of the configuration:\n%s", e.line, e.key, file)
		}
		if seen[e.key] {
			t.Fatalf("%q is set twice (the second wins):\n%s", e.key, file)
		}
		seen[e.key] = true
		if e.value != legacyValue(v) {
			t.Fatalf("%q reads back as %q, want %q:\n%s", e.key, e.value, legacyValue(v), file)
		}
	}
}

// TestLegacyConfigFileInjection: a value or key of flinkConfiguration must not set another key
// of flink-conf.yaml. '\r' and padded keys were rendered before.
func TestLegacyConfigFileInjection(t *testing.T) {
	owned := Config{"kubernetes.cluster-id": "mine", "kubernetes.namespace": "ns"}
	for name, user := range map[string]Config{
		"CR in a value":         {"a": "x\rkubernetes.cluster-id: other"},
		"CRLF in a value":       {"a": "x\r\nkubernetes.cluster-id: other"},
		"LF in a value":         {"a": "x\nkubernetes.cluster-id: other"},
		"trailing space key":    {"kubernetes.cluster-id ": "other"},
		"leading tab key":       {"\tkubernetes.cluster-id": "other"},
		"trailing control key":  {"kubernetes.cluster-id\x00": "other"},
		"CR in a key":           {"a\rkubernetes.cluster-id": "other"},
		"colon in a key":        {"kubernetes.cluster-id: other #": "x"},
		"empty key":             {"": "kubernetes.cluster-id: other"},
		"vertical tab in a key": {"kubernetes.cluster-id\v": "other"},
	} {
		t.Run(name, func(t *testing.T) {
			conf := Config{}
			merge(conf, owned)
			merge(conf, user)
			_, err := RenderConfigFile(conf, flinkv1beta1.FlinkVersion1_17)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "flink-conf.yaml")
		})
	}

	// What only changes an entry's own value is written as upstream writes it.
	conf := Config{"kubernetes.cluster-id": "mine", "a": "b: kubernetes.cluster-id: other", "c": "pass#word", "d": " \tpadded\v",
		"e": "x # kubernetes.cluster-id: other", "f#g": "kubernetes.cluster-id: other"}
	file, err := RenderConfigFile(conf, flinkv1beta1.FlinkVersion1_17)
	require.NoError(t, err)
	checkLegacyRoundTrip(t, conf, file)
	got := map[string]string{}
	for _, e := range parseLegacyConf(file) {
		got[e.key] = e.value
	}
	assert.Equal(t, map[string]string{"kubernetes.cluster-id": "mine", "a": "b: kubernetes.cluster-id: other", "c": "pass", "d": "padded", "e": "x"}, got)
}

// TestConfigYAMLLineSeparators: YAML reads NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR as line
// breaks, and the emitter wrote "value\u0085" so that Flink 1.20 read "value "; it wrote DEL
// raw, which YAML parsers refuse, failing the whole file (both found by FuzzRenderConfigFile):
// refused, naming the key. Line breaks are quoted and stay allowed.
func TestConfigYAMLLineSeparators(t *testing.T) {
	for _, conf := range []Config{{"b": "value\u0085"}, {"c": "v\u2028w: x"}, {"k\u2029": "v"}, {"\x7f": "0"}, {"k": "\x01"}} {
		_, err := RenderConfigFile(conf, flinkv1beta1.FlinkVersion1_20)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "flinkConfiguration")
	}
	conf := Config{"a": "x\rkubernetes.cluster-id: other", "b": "two\nlines\ttab", "kubernetes.cluster-id": "mine"}
	file, err := RenderConfigFile(conf, flinkv1beta1.FlinkVersion1_20)
	require.NoError(t, err)
	var back map[string]string
	require.NoError(t, yaml.Unmarshal([]byte(file), &back))
	assert.Equal(t, map[string]string(conf), back)
}
