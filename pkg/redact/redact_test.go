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
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
)

func TestIsSecretKey(t *testing.T) {
	for key, secret := range map[string]bool{
		"security.ssl.keystore-password":                 true,
		"s3.secret-key":                                  true,
		"fs.azure.account.key.acct.blob.core":            true,
		"kubernetes.operator.metrics.auth.token":         true,
		"security.kerberos.login.keytab":                 true,
		"kubernetes.operator.user.artifacts.http.header": true,
		"metrics.reporter.otel.exporter.http-headers":    true,
		"taskmanager.numberOfTaskSlots":                  false,
		"high-availability.storageDir":                   false,
		"kubernetes.operator.savepoint.format.type":      false,
	} {
		assert.Equal(t, secret, IsSecretKey(key, nil), key)
	}
	assert.True(t, IsSecretKey("my.custom.vault", []string{"vault"}), "patterns are configurable")
}

func TestRedactor(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{{Name: "DB_URL", Value: "jdbc:postgresql://db/orders?password=pw-in-env"}}}}}}
	values := Values(map[string]string{"s3.secret-key": "hunter2-XYZ", "parallelism.default": "4"}, nil, pod)
	r := New(values...)

	assert.Equal(t, "bad value ******: must be a number", r.String("bad value hunter2-XYZ: must be a number"))
	assert.Equal(t, "url ******", r.String("url jdbc:postgresql://db/orders?password=pw-in-env"))
	assert.Equal(t, "parallelism 4", r.String("parallelism 4"), "values of other keys stay")
	assert.EqualError(t, r.Error(errors.New("submit hunter2-XYZ failed")), "submit ****** failed")

	rec := record.NewFakeRecorder(2)
	r.Recorder(rec).Eventf(nil, "Warning", "Error", "config %s", "hunter2-XYZ")
	assert.Equal(t, "Warning Error config ******", <-rec.Events)

	var lines []string
	log := r.Logger(funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{}))
	log.WithValues("conf", "hunter2-XYZ").Info("submitting with hunter2-XYZ", "err", errors.New("hunter2-XYZ"))
	log.Error(errors.New("boom hunter2-XYZ"), "failed")
	joined := strings.Join(lines, "\n")
	assert.NotContains(t, joined, "hunter2-XYZ")
	assert.Contains(t, joined, Mask)

	assert.Equal(t, "a b", New("x").String("a b"), "values shorter than 4 characters are not masked")
	var none *Redactor
	assert.Equal(t, "hunter2-XYZ", none.String("hunter2-XYZ"))
}

// TestRedactorEscapedForms: a secret is masked in the forms the operator's message paths give
// it, not only as typed. Each case failed when only the raw value was masked.
func TestRedactorEscapedForms(t *testing.T) {
	statusJSON := func(msg string) string { // status.error: JSON-encoded before it is masked
		b, _ := json.Marshal(map[string]string{"message": msg})
		return string(b)
	}
	for _, tc := range []struct {
		name, secret, text string
	}{
		{"JSON with HTML escaping", `pa"ss<word>&1`, statusJSON("login with pa\"ss<word>&1 failed")},
		{"JSON backslashes", `C:\keys\s3`, statusJSON(`cannot read C:\keys\s3`)},
		{"JSON control character", "tab\there", statusJSON("value tab\there")},
		{"Flink REST body as Jackson wrote it", "ctl\x01char", `{"errors":["bad value ctl\u0001char`},
		{"field error %q", `pa"ss\word-1`, field.Invalid(field.NewPath("spec"), `pa"ss\word-1`, "bad").Error()},
		{"%q in fmt.Errorf", "line1\nline2", fmt.Errorf("%q is not an integer", "line1\nline2").Error()},
		{"%+q non-ASCII", "pässwörd", fmt.Sprintf("%+q", "pässwörd")},
		{"%#v of a slice", `q"uote`, fmt.Sprintf("%#v", []string{`q"uote`})},
		{"%q inside JSON status", `pa"ss\word-1`, statusJSON(field.Invalid(field.NewPath("spec"), `pa"ss\word-1`, "bad").Error())},
		{"URL user info", "p@ss/w:rd", (&url.URL{Scheme: "https", User: url.UserPassword("u", "p@ss/w:rd"), Host: "h", Path: "/a.jar"}).String()},
		{"URL query", "tok en&x=1", "https://h/a.jar?t=" + url.QueryEscape("tok en&x=1")},
		{"url.Error inside JSON status", "p@ss\"w", statusJSON((&url.Error{Op: "Get", URL: (&url.URL{Scheme: "https", User: url.UserPassword("u", "p@ss\"w"), Host: "h"}).String(), Err: errors.New("refused")}).Error())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			masked := New(tc.secret).String(tc.text)
			assert.Contains(t, masked, Mask, tc.text)
			for _, form := range []string{tc.secret, escJSON(tc.secret), strings.Trim(strconv.Quote(tc.secret), `"`), url.QueryEscape(tc.secret)} {
				assert.NotContains(t, masked, form)
			}
		})
	}
}

func escJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// TestLoggerMasksStructuredValues: a map or struct is encoded by the logger after the sink ran,
// so a secret inside it used to reach the log.
func TestLoggerMasksStructuredValues(t *testing.T) {
	var lines []string
	log := New("hunter2-XYZ").Logger(funcr.NewJSON(func(obj string) { lines = append(lines, obj) }, funcr.Options{}))
	log.Info("conf", "flinkConfiguration", map[string]string{"s3.secret-key": "hunter2-XYZ"}, "replicas", 3)
	joined := strings.Join(lines, "\n")
	assert.NotContains(t, joined, "hunter2-XYZ")
	assert.Contains(t, joined, Mask)
	assert.Contains(t, joined, `"replicas":3`, "values without secrets keep their type")
}
