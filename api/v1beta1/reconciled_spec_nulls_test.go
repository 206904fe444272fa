package v1beta1

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var capturedReconciledSpec = regexp.MustCompile(`(?m)^\s*lastReconciledSpec: '(.*)'$`)

// capturedSpecs are the lastReconciledSpecs the Apache operator wrote in a capture step.
func capturedSpecs(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	for _, m := range capturedReconciledSpec.FindAllStringSubmatch(string(raw), -1) {
		out = append(out, strings.ReplaceAll(m[1], "''", "'"))
	}
	require.NotEmpty(t, out)
	return out
}

// object is the JSON object at path ("" the whole spec) of an encoded reconciled spec.
func object(t *testing.T, encoded, path string) map[string]json.RawMessage {
	t.Helper()
	var env struct {
		Spec json.RawMessage `json:"spec"`
	}
	require.NoError(t, json.Unmarshal([]byte(encoded), &env))
	cur := env.Spec
	for _, p := range strings.Split(path, ".") {
		if p == "" {
			continue
		}
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(cur, &m))
		cur = m[p]
	}
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(cur, &m), "%s is an object", path)
	return m
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestReconciledSpecHasUpstreamsFields: the spec the Apache operator
// recorded, decoded and recorded again here, has upstream's fields, unset ones as null and
// job.args as [], compared field by field for applications, session clusters and session jobs.
func TestReconciledSpecHasUpstreamsFields(t *testing.T) {
	for _, c := range []struct {
		file    string
		session bool // the step's second spec is a FlinkSessionJob's
	}{
		{file: "../../controllers/testdata/upstream/s1-laststate/01-running-stable.yaml"},
		{file: "../../controllers/testdata/upstream/s3-session/01-running.yaml", session: true},
	} {
		for i, upstream := range capturedSpecs(t, c.file) {
			var encoded string
			paths := []string{"", "job", "jobManager", "jobManager.resource", "taskManager", "taskManager.resource"}
			if c.session && i == 1 {
				var spec FlinkSessionJobSpec
				_, first, err := DecodeReconciledSpec(upstream, &spec)
				require.NoError(t, err)
				encoded, err = EncodeReconciledSpec(spec, first)
				require.NoError(t, err)
				paths = []string{"", "job"}
			} else {
				var spec FlinkDeploymentSpec
				_, first, err := DecodeReconciledSpec(upstream, &spec)
				require.NoError(t, err)
				encoded, err = EncodeReconciledSpec(spec, first)
				require.NoError(t, err)
				if spec.Job == nil {
					paths = []string{"", "jobManager", "jobManager.resource", "taskManager", "taskManager.resource"}
				}
			}
			for _, path := range paths {
				want, got := object(t, upstream, path), object(t, encoded, path)
				assert.Equal(t, keys(want), keys(got), "%s spec %d: the fields of %q", c.file, i, path)
				for k, v := range want {
					if string(v) == "null" || string(v) == "[]" {
						assert.Equal(t, string(v), string(got[k]), "%s spec %d: %s.%s", c.file, i, path, k)
					}
				}
			}
		}
	}
}
