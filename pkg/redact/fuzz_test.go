package redact

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// FuzzRedact sends a secret through every path by which the operator turns text into a
// status, event or log line, each with its own escaping, and requires that the secret appears
// in none of its forms afterwards: as typed, JSON-escaped (Go's or Jackson's), Go-quoted, or
// URL-escaped. filler is text around the secret, so that escaping of its neighbours is covered.
// Run longer with: go test ./pkg/redact -run '^$' -fuzz FuzzRedact -fuzztime 60s
func FuzzRedact(f *testing.F) {
	for _, seed := range []struct{ secret, other, filler string }{
		{"hunter2-XYZ", "", ""},
		{`pa"ss<word>&1`, "", "login "},
		{`C:\keys\s3`, "keys", `\`},
		{`pa"ss\word-1`, `ss\w`, `"`},
		{"tab\there\x01", "", "\n"},
		{"pässwörd\u2028", "", "ä"},
		{"p@ss/w:rd?x=1&y", "user", "%"},
		{"  padded secret  ", "", " "},
		{"\xff\xfeinvalid", "", "\xc3"},
		{"Bearer abc.def", "Authorization:Bearer abc.def", ":"},
	} {
		f.Add(seed.secret, seed.other, seed.filler)
	}
	f.Fuzz(func(t *testing.T, secret, other, filler string) {
		core := strings.TrimSpace(secret) // what New keeps of a value
		if len(core) < minLength || len(secret) > 200 || len(filler) > 200 || strings.Contains(secret, "*") {
			// Shorter values are not masked by design; longer ones could be cut by status.error's
			// 2048-byte cap; a secret with '*' could be formed by the mask itself.
			t.Skip()
		}
		r := New(secret, other)
		// Escaping the filler can spell a form of the secret by itself (a NUL quoted as \x00
		// before "00" spells "x000"): that is no leak. So the same paths run with a placeholder
		// instead of the secret, and a form counts as leaked only where it occurs more often.
		placeholder := strings.Repeat("_", len(core))
		for _, c := range []string{"_", "~", "^", "="} {
			if !strings.Contains(secret, c) {
				placeholder = strings.Repeat(c, len(core))
				break
			}
		}
		without := paths(r, placeholder, filler)
		for name, out := range paths(r, secret, filler) {
			for _, form := range forms(core) {
				if strings.Count(out, form) > strings.Count(without[name], form) {
					t.Fatalf("%s leaks %q of secret %q:\n%s", name, form, secret, out)
				}
			}
		}
	})
}

// forms are the shapes of a secret the paths produce, written out here from the standard
// library rather than taken from Encodings, so that the test checks the redactor's list.
func forms(s string) []string {
	goJSON := func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }
	quote := func(s string) string { return strings.Trim(strconv.Quote(s), `"`) }
	return []string{
		s,
		goJSON(s),
		quote(s),
		strings.Trim(strconv.QuoteToASCII(s), `"`),
		goJSON(quote(s)),
		url.QueryEscape(s),
		goJSON(quote(strings.TrimPrefix(url.UserPassword("u", s).String(), "u:"))),
	}
}

// paths renders text quoting secret the ways the operator does, and masks it with r.
func paths(r *Redactor, secret, filler string) map[string]string {
	status := func(msg string) string {
		return r.String(flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionValidation, flinkv1beta1.ErrorReasonInvalidSpec, msg))
	}
	fieldErr := field.Invalid(field.NewPath("spec", "flinkConfiguration").Key("k"+filler), filler+secret+filler, "bad "+filler).Error()
	u := &url.URL{Scheme: "https", User: url.UserPassword("user", secret), Host: "repo.example.com", Path: "/" + filler + ".jar"}
	urlErr := (&url.Error{Op: "Get", URL: u.String(), Err: errors.New("connection refused")}).Error()

	out := map[string]string{
		"plain":             r.String("value " + filler + secret + filler),
		"errorf %q":         r.Error(fmt.Errorf("%q is not an integer", filler+secret)).Error(),
		"field error":       r.String(fieldErr),
		"status.error":      status("deploy failed: " + filler + secret + filler),
		"status.error %q":   status(fieldErr),
		"status.error URL":  status("download: " + urlErr),
		"URL query":         r.String("https://h/a.jar?t=" + url.QueryEscape(secret) + filler),
		"Flink REST body":   r.String(`{"errors":["` + jsonJava(filler+secret) + `"`),
		"%#v of a map":      r.String(fmt.Sprintf("%#v", map[string]string{filler: secret})),
		"status.error JSON": status(`{"errors":["` + jsonHTML(secret) + `"]}`),
	}

	rec := record.NewFakeRecorder(3)
	er := r.Recorder(rec)
	er.Eventf(nil, "Warning", "Invalid", "%s", fieldErr)
	er.Event(nil, "Warning", "Failed", status(filler+secret))
	er.AnnotatedEventf(nil, nil, "Warning", "Failed", "%q", secret)
	for i := 0; i < 3; i++ {
		out["event "+strconv.Itoa(i)] = <-rec.Events
	}

	var lines []string
	log := r.Logger(funcr.NewJSON(func(obj string) { lines = append(lines, obj) }, funcr.Options{}))
	log.WithValues("conf", map[string]string{"key": secret}).Info(filler+secret, "value", secret, "quoted", strconv.Quote(secret), "list", []string{secret})
	log.Error(errors.New(fieldErr), status(secret), "url", u)
	out["log"] = strings.Join(lines, "\n")
	return out
}
