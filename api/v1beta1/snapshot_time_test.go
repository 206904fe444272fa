package v1beta1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Upstream's snapshot timestamps (captured from the Apache operator) are written back
// unchanged, and what earlier versions of this operator wrote is still read.
func TestSnapshotTimeAsUpstream(t *testing.T) {
	for _, captured := range []string{"2026-11-23T16:39:15.165833219Z", "2026-11-23T16:39:00.070935700Z", "2026-11-23T16:39:00.070Z", "2026-11-23T16:39:00Z"} {
		at, err := ParseSnapshotTime(captured)
		require.NoError(t, err)
		assert.Equal(t, captured, FormatSnapshotTime(at))
	}
	at, err := ParseSnapshotTime("1795451955165")
	require.NoError(t, err)
	assert.Equal(t, "2026-11-23T16:39:15.165Z", FormatSnapshotTime(at))
	_, err = ParseSnapshotTime("yesterday")
	assert.ErrorContains(t, err, "neither ISO-8601 nor epoch milliseconds")
}
