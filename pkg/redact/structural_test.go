package redact

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestURLUserInfo(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"download http://deploy:s3cr3t-pass@repo/job.jar: HTTP 404", "download http://deploy:******@repo/job.jar: HTTP 404"},
		{`jarURI "https://u:p@ss:w@h:8443/a.jar?x=1"`, `jarURI "https://u:******@h:8443/a.jar?x=1"`},
		{"two s3://a:b@x/1 and https://c:d@y", "two s3://a:******@x/1 and https://c:******@y"},
		{"https://token-only@github.com/x.jar", "https://token-only@github.com/x.jar"},
		{"https://h/a.jar?mail=a@b", "https://h/a.jar?mail=a@b"},
		{"no url: user:pw@host", "no url: user:pw@host"},
		{`{"jarURI":"https://u:p%40w@h/a.jar"}`, `{"jarURI":"https://u:******@h/a.jar"}`},
	} {
		assert.Equal(t, tc.want, URLUserInfo(tc.in), tc.in)
	}
	assert.Equal(t, []string{"s3cr3t", "p/w"}, URLPasswords("https://u:s3cr3t@h/a.jar", "local:///a.jar", "https://u:p/w@h/a.jar", "https://t@h"))
}

// TestRedactorMasksURLPasswords: a URL's password is masked whoever the Redactor was built for,
// also by the nil Redactor.
func TestRedactorMasksURLPasswords(t *testing.T) {
	u := &url.URL{Scheme: "http", User: url.UserPassword("deploy", "s3cr3t-pass"), Host: "repo", Path: "/job.jar"}
	err := fmt.Errorf("download %s: HTTP 404", u)
	var none *Redactor
	for _, r := range []*Redactor{none, New(), New("other-secret")} {
		assert.Equal(t, "download http://deploy:******@repo/job.jar: HTTP 404", r.Error(err).Error())
	}
	assert.NoError(t, none.Error(nil))
	assert.Equal(t, errors.New("plain"), none.Error(errors.New("plain")))
}

func TestJSONMasksByPlace(t *testing.T) {
	recorded := `{"spec":{"flinkConfiguration":{"s3":{"secret-key":"hostNetwork"}},"podTemplate":{"spec":{"hostNetwork":true}}}}`
	doc := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"note": "hostNetwork"}},
		"spec": map[string]any{
			"flinkConfiguration": map[string]any{"x.password": `":{"`, "s3": map[string]any{"secret-key": "hostNetwork"},
				"parallelism.default": 4, "state.checkpoints.dir": "s3://u:pw@bucket/cp"},
			"podTemplate": map[string]any{"spec": map[string]any{"hostNetwork": true,
				"containers": []any{map[string]any{"name": "main", "image": "hostNetwork",
					"env":             []any{map[string]any{"name": "A", "value": "hostNetwork"}, map[string]any{"name": "EMPTY", "value": ""}, map[string]any{"name": "REF", "valueFrom": map[string]any{}}},
					"securityContext": map[string]any{"privileged": true}}}}},
			"job": map[string]any{"jarURI": "https://deploy:s3cr3t-pass@repo/job.jar", "args": []any{"--x", "hostNetwork"}},
		},
		"status": map[string]any{"reconciliationStatus": map[string]any{"lastReconciledSpec": recorded}},
	}
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	out, err := JSON(raw, nil)
	require.NoError(t, err)

	var got map[string]any
	require.NoError(t, json.Unmarshal(out, &got), "the result parses")
	spec := got["spec"].(map[string]any)
	assert.Equal(t, map[string]any{"x.password": Mask, "s3": map[string]any{"secret-key": Mask}, "parallelism.default": 4.0,
		"state.checkpoints.dir": "s3://u:******@bucket/cp"}, spec["flinkConfiguration"])
	pod := spec["podTemplate"].(map[string]any)["spec"].(map[string]any)
	assert.Equal(t, true, pod["hostNetwork"])
	c := pod["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, "hostNetwork", c["image"], "a value equal to a secret elsewhere stays")
	assert.Equal(t, []any{map[string]any{"name": "A", "value": Mask}, map[string]any{"name": "EMPTY", "value": ""},
		map[string]any{"name": "REF", "valueFrom": map[string]any{}}}, c["env"])
	assert.Equal(t, map[string]any{"privileged": true}, c["securityContext"])
	assert.Equal(t, map[string]any{"jarURI": "https://deploy:******@repo/job.jar", "args": []any{"--x", "hostNetwork"}}, spec["job"])
	assert.Equal(t, map[string]any{"note": "hostNetwork"}, got["metadata"].(map[string]any)["annotations"])

	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(got["status"].(map[string]any)["reconciliationStatus"].(map[string]any)["lastReconciledSpec"].(string)), &rec),
		"the recorded spec still parses")
	assert.Equal(t, map[string]any{"spec": map[string]any{"flinkConfiguration": map[string]any{"s3": map[string]any{"secret-key": Mask}},
		"podTemplate": map[string]any{"spec": map[string]any{"hostNetwork": true}}}}, rec)
}

func TestJSONKeepsDocumentsWithoutSecrets(t *testing.T) {
	raw := []byte(`{"spec": {"flinkConfiguration": {"a": "1"}, "big": 12345678901234567890}}`)
	out, err := JSON(raw, nil)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(out), "nothing to mask: the document as it was")
	_, err = JSON([]byte(`{"a":1} x`), nil)
	assert.Error(t, err)
}
