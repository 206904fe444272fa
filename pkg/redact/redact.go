// Package redact keeps secrets out of logs, events and status messages. The values to hide
// come from the resource being reconciled: Flink configuration values under keys that look
// secret, and every env value of its pod templates (upstream leaks both, FLINK-30306). A
// Redactor replaces each occurrence of those values, wherever a message quotes them.
package redact

import (
	"errors"
	"fmt"
	"sort"
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
var DefaultKeyPatterns = []string{"password", "secret", "token", "key", "credential", "passphrase", "auth", "jaas"}

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

// Redactor hides a set of values. The zero value and nil hide nothing.
type Redactor struct {
	replacer *strings.Replacer
}

// minLength: shorter values ("1", "true") would mask unrelated text and protect nothing.
const minLength = 4

// New returns a Redactor of the given values (longest first, so a value containing another
// is masked whole).
func New(values ...string) *Redactor {
	uniq := map[string]bool{}
	for _, v := range values {
		if v = strings.TrimSpace(v); len(v) >= minLength {
			uniq[v] = true
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

// String masks the secret values in s.
func (r *Redactor) String(s string) string {
	if r == nil || r.replacer == nil {
		return s
	}
	return r.replacer.Replace(s)
}

// Error masks the secret values in an error's message (nil stays nil).
func (r *Redactor) Error(err error) error {
	if err == nil || r == nil || r.replacer == nil {
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
	if r == nil || r.replacer == nil {
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
	if r == nil || r.replacer == nil || l.GetSink() == nil {
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
			out[i] = v
		}
	}
	return out
}
