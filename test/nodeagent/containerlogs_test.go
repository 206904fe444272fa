package nodeagent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tailStart reads backwards in chunks: lines that cross a chunk's edge, a segment that starts
// within the file (a later run), and a run without a trailing newline.
func TestTailStart(t *testing.T) {
	earlier := "an earlier run\n"
	long := strings.Repeat("x", 40<<10) + "\n" // longer than a chunk
	run := "a\n" + long + "b\n" + long + "c"
	file := strings.NewReader(earlier + run)
	start, end := int64(len(earlier)), int64(len(earlier)+len(run))
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{n: 0, want: ""},
		{n: 1, want: "c"},
		{n: 2, want: long + "c"},
		{n: 3, want: "b\n" + long + "c"},
		{n: 5, want: run},
		{n: 100, want: run}, // never into the earlier run
	} {
		at, err := tailStart(file, start, end, tt.n)
		require.NoError(t, err)
		assert.Equal(t, len(tt.want), int(end-at), "tailLines=%d", tt.n)
	}
	at, err := tailStart(strings.NewReader("one\ntwo\n"), 0, 8, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(4), at, "the newline ending the last line starts no line")
}
