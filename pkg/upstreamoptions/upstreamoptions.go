// Package upstreamoptions says, for every option of the Apache Flink Kubernetes Operator, what
// this operator does with it: honoured (pkg/options reads it), warned (it has no effect here,
// and a resource or operator configuration setting it is told so) or not applicable (what it
// tunes does not exist here, or is set another way). Nothing upstream documents is silently
// ignored: the admission webhook returns a warning for each such key a resource sets, the
// reconcilers record it as an event on the resource, and the operator logs it for its own
// configuration. The upstream options reference (docs/reference/upstream-options.md) is
// generated from this table by make docs.
package upstreamoptions

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/flink-operator/flink-operator/pkg/options"
)

// Support is what this operator does with an upstream option.
type Support string

// Kinds of support.
const (
	// Honoured: the option works as upstream documents it (pkg/options registers it, or the
	// entry says where it is read).
	Honoured Support = "honoured"
	// Warned: the option has no effect here; setting it draws a warning.
	Warned Support = "warned"
	// NotApplicable: what the option tunes does not exist here or is set another way (a flag);
	// setting it draws a warning too, naming the way.
	NotApplicable Support = "not applicable"
)

// Entry is one upstream option (or a family of them: a key ending in ".*", or with a
// "<placeholder>" segment) and what this operator does with it.
type Entry struct {
	Key     string
	Support Support
	// HonouredValue, when set, is this operator's fixed behaviour: an option set to it (compared
	// without case) asks for what happens anyway and draws no warning.
	HonouredValue string
	// Why says how it is honoured, or why it is not.
	Why string
}

// Matches says whether key is this entry's option.
func (e Entry) Matches(key string) bool {
	switch {
	case strings.HasSuffix(e.Key, ".*"):
		return strings.HasPrefix(key, strings.TrimSuffix(e.Key, "*"))
	case strings.Contains(e.Key, "<"):
		return placeholderPattern(e.Key).MatchString(key)
	default:
		return key == e.Key
	}
}

var placeholder = regexp.MustCompile(`<[^>]+>`)

func placeholderPattern(key string) *regexp.Regexp {
	parts := placeholder.Split(key, -1)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, `[^.]+`) + "$")
}

// Lookup is the entry of key; false when key is not an upstream option.
func Lookup(key string) (Entry, bool) {
	for _, e := range table {
		if e.Matches(key) {
			return e, true
		}
	}
	return Entry{}, false
}

// All is the table, sorted by key.
func All() []Entry {
	out := append([]Entry(nil), table...)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Finding is an upstream option set in a configuration that has no effect here.
type Finding struct {
	Key, Value string
	Entry      Entry
}

// Message says what happens to the option, for warnings, events and logs.
func (f Finding) Message(prefix string) string {
	if f.Entry.Support == NotApplicable {
		return fmt.Sprintf("%s%s (an Apache operator option) does not apply to this operator and is ignored: %s", prefix, f.Key, f.Entry.Why)
	}
	return fmt.Sprintf("%s%s (an Apache operator option) is not honoured by this operator and is ignored: %s", prefix, f.Key, f.Entry.Why)
}

// Unhonoured are the upstream options conf sets that have no effect here, sorted by key.
func Unhonoured(conf map[string]string) []Finding {
	var out []Finding
	for key, value := range conf {
		e, ok := Lookup(key)
		if !ok || e.Support == Honoured {
			continue
		}
		if e.HonouredValue != "" && strings.EqualFold(strings.TrimSpace(value), e.HonouredValue) {
			continue
		}
		out = append(out, Finding{Key: key, Value: value, Entry: e})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Warnings are the admission warnings (and event messages) for the upstream options a
// resource's flattened flinkConfiguration sets that have no effect here.
func Warnings(conf map[string]string) []string {
	var out []string
	for _, f := range Unhonoured(conf) {
		out = append(out, f.Message("spec.flinkConfiguration."))
	}
	return out
}

// why is an entry's explanation; an honoured option registered in pkg/options without one
// points at the options table.
func why(e Entry) string {
	if e.Why != "" {
		return e.Why
	}
	if _, ok := options.Lookup(e.Key); ok {
		return "see Options"
	}
	return ""
}

// MarkdownTable renders the table of the upstream options reference (hack/docgen).
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| Upstream option | Here | How, or why not |\n|---|---|---|\n")
	for _, e := range All() {
		support := string(e.Support)
		if e.HonouredValue != "" {
			support += fmt.Sprintf(" (honoured when `%s`)", e.HonouredValue)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", e.Key, support, strings.ReplaceAll(why(e), "|", `\|`))
	}
	return b.String()
}
