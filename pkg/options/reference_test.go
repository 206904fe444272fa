package options

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The configuration reference (docs/reference/configuration.md, written by make docs with
// hack/docgen) holds the registry's table: an option added, renamed or given another default
// here shows up there, or this test fails.
func TestConfigurationReferenceIsTheRegistry(t *testing.T) {
	raw, err := os.ReadFile("../../docs/reference/configuration.md")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(raw), MarkdownTable()),
		"docs/reference/configuration.md is stale: run make docs")
}
