package options

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	readmePath   = "../../README.md"
	tableBegin   = "<!-- options table: generated from pkg/options by `UPDATE_README=1 go test ./pkg/options` -->\n"
	tableEnd     = "<!-- end of options table -->"
	updateReadme = "UPDATE_README"
)

// The README's options table is the registry's: an option added, renamed or given another
// default here shows up there, or this test fails.
func TestReadmeOptionsTable(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	require.NoError(t, err)
	readme := string(raw)
	begin, end := strings.Index(readme, tableBegin), strings.Index(readme, tableEnd)
	require.True(t, begin >= 0 && end > begin, "README.md needs the options table markers")
	want := MarkdownTable()
	got := readme[begin+len(tableBegin) : end]
	if os.Getenv(updateReadme) != "" {
		require.NoError(t, os.WriteFile(readmePath, []byte(readme[:begin+len(tableBegin)]+want+readme[end:]), 0o644))
		return
	}
	require.Equal(t, want, got, "README.md's options table is stale: run UPDATE_README=1 go test ./pkg/options")
}
