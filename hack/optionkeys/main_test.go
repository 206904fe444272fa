package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, root, rel, src string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(src), 0o600))
}

// TestCheckFindsKeyLiterals: a key literal in product code is a finding, wherever it stands
// (constant, call argument, raw string); the registry, tests and prefix-built keys are not.
func TestCheckFindsKeyLiterals(t *testing.T) {
	root := t.TempDir()
	write(t, root, "controllers/a.go", "package controllers\n\nconst optX = \"kubernetes.operator.x.enabled\"\n\nfunc f(m map[string]string) string { return m[`job.autoscaler.enabled`] }\n")
	write(t, root, "pkg/native/b.go", "package native\n\nimport \"fmt\"\n\nfunc g() error { return fmt.Errorf(\"%s: bad\", \"kubernetes.operator.\") }\n")
	write(t, root, "pkg/options/registry.go", "package options\n\nconst K = \"kubernetes.operator.reconcile.interval\"\n")
	write(t, root, "pkg/native/b_test.go", "package native\n\nconst k = \"kubernetes.operator.x\"\n")
	write(t, root, "test/e2e/c.go", "package e2e\n\nconst k = \"job.autoscaler.enabled\"\n")
	write(t, root, "pkg/ok/d.go", "package ok\n\nconst p = \"kubernetes.operator\"\n\nvar k = p + \".x\"\n\n// \"kubernetes.operator.x\" in a comment is prose.\nvar msg = \"spec.flinkConfiguration[kubernetes.operator.x]\"\n")
	got, err := check(root)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"controllers/a.go:3:14: option key literal \"kubernetes.operator.x.enabled\": declare the option in pkg/options and use it",
		"controllers/a.go:5:47: option key literal `job.autoscaler.enabled`: declare the option in pkg/options and use it",
		"pkg/native/b.go:5:47: option key literal \"kubernetes.operator.\": declare the option in pkg/options and use it",
	}, got)
}

// TestRepositoryIsClean: the repository itself passes the rule (make lint runs it too).
func TestRepositoryIsClean(t *testing.T) {
	got, err := check("../..")
	require.NoError(t, err)
	assert.Empty(t, got)
}
