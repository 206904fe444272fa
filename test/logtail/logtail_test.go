package logtail

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLines(t *testing.T) {
	assert.Equal(t, "c\nd", Lines("a\nb\nc\nd\n\n", 2))
	assert.Equal(t, "a\nb", Lines("a\nb\n", 5), "fewer lines than asked: all of them")
	assert.Equal(t, "", Lines("", 3))
}

func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o600))
	assert.Equal(t, "three", File(path, 1))
	assert.True(t, strings.Contains(File(filepath.Join(t.TempDir(), "missing"), 1), "no such file"), "says why it cannot")
}
