package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckFindsOtherIdioms: testify's Eventually and a require inside a polled condition are
// findings; a require after the wait, or inside a helper's own function, is not.
func TestCheckFindsOtherIdioms(t *testing.T) {
	root := t.TempDir()
	src := `package x

func f(t T) {
	require.Eventually(t, func() bool { return true }, 1, 1)
	wait.For(t, 1, "x", func() bool {
		require.NoError(t, g())
		return true
	})
	wait.Until(t, ctx, 1, "y", func() (bool, error) { err := g(); return err == nil, err })
	require.NoError(t, g())
	assert.Eventually(t, func() bool { return true }, 1, 1)
}
`
	require.NoError(t, os.MkdirAll(filepath.Join(root, "controllers"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "controllers", "a_test.go"), []byte(src), 0o600))
	got, err := check(root)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"controllers/a_test.go:4:2: require.Eventually: wait with test/wait (For, Until, Never)",
		"controllers/a_test.go:6:3: require.NoError inside a condition polled by wait.For: return the error (wait.Until) or check after the wait",
		"controllers/a_test.go:11:2: assert.Eventually: wait with test/wait (For, Until, Never)",
	}, got)
}

// TestRepositoryIsClean: the repository itself passes the rule (make lint runs it too).
func TestRepositoryIsClean(t *testing.T) {
	got, err := check("../..")
	require.NoError(t, err)
	assert.Empty(t, got)
}
