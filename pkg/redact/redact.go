// Package redact keeps secrets out of logs, events and status messages. The values to hide
// come from the resource being reconciled: Flink configuration values under keys that look
// secret, and every env value of its pod templates (upstream leaks both, FLINK-30306). A
// Redactor replaces each occurrence of those values, wherever a message quotes them.
package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// Mask replaces a secret value.
const Mask = "******"

// DefaultKeyPatterns mark configuration keys whose values are secret (case-insensitive
// substrings), as Flink's own GlobalConfiguration.isSensitive does, plus a few more.
//
// "header" covers kubernetes.operator.user.artifacts.http.header, whose values are HTTP headers
// sent with a jar download (Authorization: Bearer ...), and Flink's own *.http-headers and
// *.headers options (metric and trace reporters' credentials).
var DefaultKeyPatterns = []string{"password", "secret", "token", "key", "credential", "passphrase", "auth", "jaas", "header"}

// IsSecretKey reports whether a configuration key's value must not be shown.
func IsSecretKey(key string, patterns []string) bool {
	if patterns == nil {
		patterns = DefaultKeyPatterns
	}
	k := strings.ToLower(key)
	for _, p := range patterns {
		if p != "" && strings.Contains(k, strings.ToLower(p)) {
			return true
		}
	}
	return false
}

// Values collects what must be hidden: values of secret-looking keys of conf, and the env
// values of the given pods (pod templates).
func Values(conf map[string]string, patterns []string, pods ...*corev1.Pod) []string {
	var out []string
	for k, v := range conf {
		if IsSecretKey(k, patterns) {
			out = append(out, v)
		}
	}
	for _, p := range pods {
		if p == nil {
			continue
		}
		for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range cs {
				for _, e := range c.Env {
					out = append(out, e.Value)
				}
			}
		}
	}
	return out
}

// Redactor hides a set of values, and URL passwords. The zero value and nil hide URL passwords
// only.
type Redactor struct {
	replacer *strings.Replacer
}

// minLength: shorter values ("1", "true") would mask unrelated text and protect nothing.
const minLength = 4

// New returns a Redactor of the given values and of every encoded form they take on their
// way into a message (see Encodings), longest first, so that a value containing another is
// masked whole.
func New(values ...string) *Redactor {
	uniq := map[string]bool{}
	for _, v := range values {
		if v = strings.TrimSpace(v); len(v) >= minLength {
			for _, form := range Encodings(v) {
				uniq[form] = true
			}
		}
	}
	if len(uniq) == 0 {
		return &Redactor{}
	}
	list := make([]string, 0, len(uniq))
	for v := range uniq {
		list = append(list, v)
	}
	sort.Slice(list, func(i, j int) bool {
		return len(list[i]) > len(list[j]) || (len(list[i]) == len(list[j]) && list[i] < list[j])
	})
	pairs := make([]string, 0, 2*len(list))
	for _, v := range list {
		pairs = append(pairs, v, Mask)
	}
	return &Redactor{replacer: strings.NewReplacer(pairs...)}
}

// A value is escaped on its way into a message, and the message may be escaped again when it
// is embedded in another. Each escaping below is found on the operator's message paths.
//
// valueEncoders apply to a value itself: a secret in a jarURI's user info or query is escaped
// by url.URL.String.
var valueEncoders = []func(string) string{
	url.QueryEscape,
	url.PathEscape,
	func(s string) string { return strings.TrimPrefix(url.UserPassword("u", s).String(), "u:") },
}

// messageEncoders apply to a value or to a whole message quoting it:
//   - JSON: status.error is upstream's JSON exception and is encoded before it is masked; Flink's
//     REST error bodies are JSON; json.Marshal escapes <, > and & (\u003c...) unless told not to.
//   - Java JSON (Jackson): a Flink REST body that does not decode is quoted as it came; Jackson
//     escapes control characters with upper-case hex and leaves <, >, & and U+2028 as they are.
//   - Go quoting: %q in fmt.Errorf (options, native, schedule) and in apimachinery's field errors
//     ("Invalid value: \"...\""), %#v of slices and maps, %+q; url.Error quotes its URL.
var messageEncoders = []func(string) string{
	jsonHTML,
	jsonPlain,
	jsonJava,
	func(s string) string { return unquote(strconv.Quote(s)) },
	func(s string) string { return unquote(strconv.QuoteToASCII(s)) },
}

// messageDepth: message escapings nest on real paths, e.g. a field error's %q inside JSON
// status.error, or a url.Error's %q of an escaped password inside status.error.
const messageDepth = 2

// Encodings returns v and every distinct form it takes: v or a URL escaping of it, under up to
// messageDepth nested message escapings. Most values have only a few distinct forms: escaping
// changes only quotes, backslashes, control, non-ASCII and URL-reserved characters.
func Encodings(v string) []string {
	seen := map[string]bool{}
	var out, level []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
			level = append(level, s)
		}
	}
	add(v)
	for _, enc := range valueEncoders {
		add(enc(v))
	}
	for d := 0; d < messageDepth; d++ {
		prev := level
		level = nil
		for _, s := range prev {
			for _, enc := range messageEncoders {
				add(enc(s))
			}
		}
	}
	return out
}

func unquote(q string) string { return q[1 : len(q)-1] }

// jsonHTML is the escaping of json.Marshal (the status.error path).
func jsonHTML(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return unquote(string(b))
}

// jsonPlain is the escaping of an Encoder without HTML escaping (zap's and most loggers').
func jsonPlain(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return unquote(strings.TrimSuffix(buf.String(), "\n"))
}

// jsonJava is Jackson's string escaping (Flink's REST bodies).
func jsonJava(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xF])
			} else {
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}

// String masks the secret values in s, and the password of every URL in it (URLUserInfo), the
// latter even for a nil Redactor: a URL's user info is secret whoever wrote it.
func (r *Redactor) String(s string) string {
	if r != nil && r.replacer != nil {
		s = r.replacer.Replace(s)
	}
	return URLUserInfo(s)
}

// Error masks the secret values in an error's message (nil stays nil).
func (r *Redactor) Error(err error) error {
	if err == nil {
		return err
	}
	msg := r.String(err.Error())
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// Recorder wraps an event recorder so that event messages are masked.
func (r *Redactor) Recorder(rec record.EventRecorder) record.EventRecorder {
	if rec == nil {
		return rec
	}
	return &recorder{r: r, next: rec}
}

type recorder struct {
	r    *Redactor
	next record.EventRecorder
}

func (e *recorder) Event(o runtime.Object, eventtype, reason, message string) {
	e.next.Event(o, eventtype, reason, e.r.String(message))
}

func (e *recorder) Eventf(o runtime.Object, eventtype, reason, format string, args ...any) {
	e.next.Event(o, eventtype, reason, e.r.String(fmt.Sprintf(format, args...)))
}

func (e *recorder) AnnotatedEventf(o runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	e.next.AnnotatedEventf(o, annotations, eventtype, reason, "%s", e.r.String(fmt.Sprintf(format, args...)))
}

// Logger wraps a logger so that messages, string values and errors are masked.
func (r *Redactor) Logger(l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	return logr.New(&sink{r: r, next: l.GetSink()})
}

type sink struct {
	r    *Redactor
	next logr.LogSink
}

func (s *sink) Init(info logr.RuntimeInfo) { s.next.Init(info) }
func (s *sink) Enabled(level int) bool     { return s.next.Enabled(level) }
func (s *sink) Info(level int, msg string, kv ...any) {
	s.next.Info(level, s.r.String(msg), s.values(kv)...)
}
func (s *sink) Error(err error, msg string, kv ...any) {
	s.next.Error(s.r.Error(err), s.r.String(msg), s.values(kv)...)
}
func (s *sink) WithValues(kv ...any) logr.LogSink {
	return &sink{r: s.r, next: s.next.WithValues(s.values(kv)...)}
}
func (s *sink) WithName(name string) logr.LogSink { return &sink{r: s.r, next: s.next.WithName(name)} }

func (s *sink) values(kv []any) []any {
	out := make([]any, len(kv))
	for i, v := range kv {
		switch t := v.(type) {
		case string:
			out[i] = s.r.String(t)
		case error:
			out[i] = s.r.Error(t)
		case fmt.Stringer:
			out[i] = v
			if masked := s.r.String(t.String()); masked != t.String() {
				out[i] = masked // keep structured values unless they quote a secret
			}
		default:
			out[i] = s.structured(v)
		}
	}
	return out
}

// structured masks a value a logger encodes itself (a map, slice or struct holding a secret):
// loggers JSON-encode these after the sink has run, so the check is on that encoding, and a
// value quoting a secret is logged as its masked JSON text instead.
func (s *sink) structured(v any) any {
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct, reflect.Pointer, reflect.Interface:
	default:
		return v // numbers, bools, nil: nothing to hide
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	if masked := s.r.String(string(raw)); masked != string(raw) {
		return masked
	}
	return v
}
