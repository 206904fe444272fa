package native

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// hardArgs are arguments a plain ';'-join splits, unquotes or trims.
var hardArgs = []string{
	"--query", "SELECT a; SELECT b", "'single'", `"double"`, " edge ", "", "  ", "it''s", `back\slash`,
	"tab\there", "[x]", "- a", "a: b", "null", "true", "1", "~", "ü€😀", "\u00a0nbsp\u00a0", "{k: v}", "&anchor", "*alias", "!tag", "%dir", "@at", "`tick`",
}

// TestProgramArgsReadBackByFlinksRules renders job.args into each configuration file format and
// decodes them as Flink does (the file's parser, then the list option's), which must give the
// spec's list. A plain ';'-join gave ["--query", "SELECT a", " SELECT b", ...].
func TestProgramArgsReadBackByFlinksRules(t *testing.T) {
	for _, tt := range []struct {
		version flinkv1beta1.FlinkVersion
		args    []string
	}{
		{flinkv1beta1.FlinkVersion1_17, hardArgs},
		{flinkv1beta1.FlinkVersion1_20, append(hardArgs, "#hash", "line\nbreak", "cr\r", "nel\u0085", "ls\u2028", "del\u007f", "bell\a")},
		{flinkv1beta1.FlinkVersion2_0, append(hardArgs, "#hash", "line\nbreak")},
	} {
		t.Run(string(tt.version), func(t *testing.T) {
			dep := deployment(t, `{metadata: {name: args}, spec: {job: {jarURI: "local:///x.jar"}}}`)
			dep.Spec.FlinkVersion = tt.version
			dep.Spec.Job.Args = tt.args
			cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
			require.NoError(t, err)
			file := cluster.ConfigMap.Data[flinkconf.ConfigFileName(tt.version)]
			raw := readConfigValue(t, file, flinkconf.ConfigFileName(tt.version), flinkconf.ProgramArgsKey)
			got, err := decodeFlinkList(raw, flinkconf.ConfigFileName(tt.version) == "config.yaml")
			require.NoError(t, err, "value %q", raw)
			assert.Equal(t, tt.args, got, "value %q", raw)
		})
	}
}

func TestProgramArgsFlinkConfYamlLimits(t *testing.T) {
	_, err := flinkconf.ProgramArgs([]string{"ok", "a#b"}, flinkv1beta1.FlinkVersion1_18, true)
	require.ErrorContains(t, err, "spec.job.args[1]")
	_, err = flinkconf.ProgramArgs([]string{"a\nb"}, flinkv1beta1.FlinkVersion1_18, false)
	require.ErrorContains(t, err, "spec.job.args[0]")
	got, err := flinkconf.ProgramArgs([]string{"a#b"}, flinkv1beta1.FlinkVersion1_18, false)
	require.NoError(t, err, "standalone clusters take their arguments from the command line")
	assert.Equal(t, "a#b", got)
	got, err = flinkconf.ProgramArgs([]string{"--a", "b"}, flinkv1beta1.FlinkVersion1_17, true)
	require.NoError(t, err)
	assert.Equal(t, "--a;b", got, "plain arguments stay readable")
}

// readConfigValue reads key's value from a configuration file as Flink does: config.yaml as
// YAML; flink-conf.yaml with Flink 1.x's line parser (cut at '#', split at the first ": ",
// trimmed, a later line winning).
func readConfigValue(t *testing.T, file, name, key string) string {
	t.Helper()
	if name == "config.yaml" {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(file), &m))
		v, ok := m[key].(string)
		require.True(t, ok, "%s is a string in config.yaml", key)
		return v
	}
	value, found := "", false
	for _, line := range strings.FieldsFunc(file, func(r rune) bool { return r == '\n' || r == '\r' }) {
		line, _, _ = strings.Cut(line, "#")
		k, v, ok := strings.Cut(line, ": ")
		if ok && flinkconf.TrimKey(k) == key {
			value, found = flinkconf.TrimKey(v), true
		}
	}
	require.True(t, found, "%s in flink-conf.yaml", key)
	return value
}

// decodeFlinkList decodes a list option's string value as Flink's ConfigurationUtils
// .convertToList: with standard YAML (config.yaml), the string parsed as a YAML list whose
// items are strings, else (or when that fails) StructuredOptionsSplitter.splitEscaped at ';'.
func decodeFlinkList(raw string, standardYAML bool) ([]string, error) {
	if standardYAML {
		var items []any
		if err := yaml.Unmarshal([]byte(raw), &items); err == nil && items != nil {
			out := make([]string, len(items))
			for i, it := range items {
				s, ok := it.(string)
				if !ok {
					return nil, errors.New("a list item is not a string: Flink would write it back as YAML")
				}
				out[i] = s
			}
			return out, nil
		}
	}
	return splitEscaped(raw, ';')
}

// splitEscaped mirrors Flink's StructuredOptionsSplitter.splitEscaped: single- or double-quoted
// parts (a doubled quote stands for itself) are taken as they are and must be followed by the
// delimiter or the end; whitespace before a part is skipped; unquoted parts run to the
// delimiter and are trimmed; two delimiters in a row give an empty element.
func splitEscaped(s string, delim rune) ([]string, error) {
	type token struct {
		kind string // "quoted", "literal", "delim"
		text string
	}
	runes := []rune(s)
	var tokens []token
	for i := 0; i < len(runes); {
		c := runes[i]
		switch {
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			closed := false
			for ; j < len(runes); j++ {
				if runes[j] == c {
					if j+1 < len(runes) && runes[j+1] == c {
						b.WriteRune(c)
						j++
						continue
					}
					closed = true
					break
				}
				b.WriteRune(runes[j])
			}
			if !closed {
				return nil, errors.New("quoting was not finished properly")
			}
			tokens = append(tokens, token{"quoted", b.String()})
			i = j + 1
		case c == delim:
			tokens = append(tokens, token{"delim", string(c)})
			i++
		case !javaWhitespace(c):
			j := i
			for j < len(runes) && runes[j] != delim {
				j++
			}
			tokens = append(tokens, token{"literal", flinkconf.TrimKey(string(runes[i:j]))})
			i = j
		default:
			i++
		}
	}
	var out []string
	for i, tok := range tokens {
		switch tok.kind {
		case "quoted":
			if i+1 < len(tokens) && tokens[i+1].kind != "delim" {
				return nil, errors.New("quoting was not finished properly")
			}
			out = append(out, tok.text)
		case "literal":
			out = append(out, tok.text)
		case "delim":
			if i+1 < len(tokens) && tokens[i+1].kind == "delim" {
				out = append(out, "")
			}
		}
	}
	return out, nil
}

// javaWhitespace is Java's Character.isWhitespace: space separators other than the no-break
// ones, and the ASCII controls \t \n \v \f \r and U+001C to U+001F.
func javaWhitespace(r rune) bool {
	switch r {
	case '\u00a0', '\u2007', '\u202f':
		return false
	case '\t', '\n', '\v', '\f', '\r', '\u001c', '\u001d', '\u001e', '\u001f':
		return true
	}
	return unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp)
}

// The mirror itself, on Flink's documented examples.
func TestSplitEscapedMirrorsFlink(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"A;B;C", []string{"A", "B", "C"}},
		{"'A;B';C", []string{"A;B", "C"}},
		{`"A;B";C`, []string{"A;B", "C"}},
		{"'it''s';x", []string{"it's", "x"}},
		{" a ; b ", []string{"a", "b"}},
		{"a;;b", []string{"a", "", "b"}},
		{";a", []string{"a"}},
	} {
		got, err := splitEscaped(tt.in, ';')
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	_, err := splitEscaped("'a'b", ';')
	require.Error(t, err)
}
