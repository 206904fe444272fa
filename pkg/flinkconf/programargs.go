package flinkconf

import (
	"fmt"
	"strings"
	"unicode"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// ProgramArgsKey is the list option the application entrypoint reads job.args from
// (ApplicationConfiguration.APPLICATION_ARGS), which upstream sets from the spec's list.
const ProgramArgsKey = "$internal.application.program-args"

// ProgramArgs encodes job.args as a value of Flink's list option in the configuration file of
// Flink version v, so that Flink decodes exactly the spec's list: no argument split at ';',
// none losing quotes, edge whitespace or emptiness.
//
//   - config.yaml (Flink 1.19 and newer) is standard YAML, and Flink reads a list option
//     written as a string by parsing that string as YAML (ConfigurationUtils.convertToList):
//     a flow sequence of double-quoted scalars, each read back as exactly its string.
//   - flink-conf.yaml (Flink 1.18 and older) is split at ';' outside quotes
//     (StructuredOptionsSplitter.splitEscaped), with unquoted parts trimmed: an argument is
//     single-quoted (a quote inside doubled) whenever it would not read back as itself unquoted.
//     That file cannot carry a line break, and its line parser cuts a line at '#'; in native
//     mode, where the entrypoint reads the arguments from the file, such an argument is an
//     error naming it (standalone clusters get them on the command line).
func ProgramArgs(args []string, v flinkv1beta1.FlinkVersion, native bool) (string, error) {
	if ConfigFileName(v) == "config.yaml" {
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = yamlDoubleQuoted(a)
		}
		return "[" + strings.Join(quoted, ", ") + "]", nil
	}
	parts := make([]string, len(args))
	for i, a := range args {
		switch {
		case strings.ContainsAny(a, "\r\n"):
			return "", fmt.Errorf("spec.job.args[%d]: %q: flink-conf.yaml (Flink 1.18 and older) cannot carry a line break", i, a)
		case native && strings.Contains(a, "#"):
			return "", fmt.Errorf("spec.job.args[%d]: %q: Flink 1.18 and older read flink-conf.yaml only up to a '#', so a native cluster cannot be given this argument (standalone mode passes it on the command line)", i, a)
		}
		parts[i] = splitterQuoted(a)
	}
	return strings.Join(parts, ";"), nil
}

// splitterQuoted is an element of a list for Flink's StructuredOptionsSplitter: as it is when
// the splitter reads it back unchanged, else single-quoted.
func splitterQuoted(s string) string {
	if s != "" && !strings.ContainsAny(s, ";'\"") && !trimmedBySplitter(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// trimmedBySplitter: the splitter skips whitespace before an unquoted part and trims it (Java's
// String.trim, every character up to U+0020) at both ends.
func trimmedBySplitter(s string) bool {
	first, last := []rune(s)[0], []rune(s)[len([]rune(s))-1]
	for _, r := range []rune{first, last} {
		if r <= ' ' || unicode.IsSpace(r) || unicode.Is(unicode.Zs, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) {
			return true
		}
	}
	return false
}

// yamlDoubleQuoted writes s as a YAML double-quoted scalar, escaping what YAML would otherwise
// read differently or refuse: backslash, quote, control characters and line separators.
func yamlDoubleQuoted(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case !yamlSafe(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
