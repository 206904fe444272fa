package flink

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The latest state of a job is the highest id among its latest completed checkpoint, latest
// savepoint and what it restored.
func TestLatestCheckpointPath(t *testing.T) {
	tests := []struct {
		name, latest, want string
	}{
		{"none", `{}`, ""},
		{"completed checkpoint", `{"completed":{"id":7,"external_path":"file:/cp/chk-7"}}`, "file:/cp/chk-7"},
		{"restored a savepoint, failed before a checkpoint",
			`{"restored":{"id":12,"external_path":"file:/sp/savepoint-12","is_savepoint":true}}`, "file:/sp/savepoint-12"},
		{"checkpointed since the restore",
			`{"completed":{"id":14,"external_path":"file:/cp/chk-14"},"restored":{"id":12,"external_path":"file:/sp/savepoint-12"}}`, "file:/cp/chk-14"},
		{"a savepoint newer than the last checkpoint",
			`{"completed":{"id":14,"external_path":"file:/cp/chk-14"},"savepoint":{"id":15,"external_path":"file:/sp/savepoint-15"}}`, "file:/sp/savepoint-15"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := fakeFlink(t, "1.20.3", reply(200, `{"counts":{},"latest":`+tt.latest+`}`))
			path, err := cl.LatestCheckpointPath(context.Background(), testJob)
			require.NoError(t, err)
			assert.Equal(t, tt.want, path)
		})
	}
}
