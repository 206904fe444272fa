package s3store

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestObjectsWrittenOverHTTPAreListed: an object PUT path-style, as Flink's S3 clients write
// with s3.path.style.access, is read back over HTTP and listed by Keys under its prefix only.
func TestObjectsWrittenOverHTTPAreListed(t *testing.T) {
	s, err := Start("127.0.0.1:0", "flink")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })

	for _, key := range []string{"checkpoints/job/chk-1/_metadata", "savepoints/savepoint-1/_metadata"} {
		req, err := http.NewRequest(http.MethodPut, s.Endpoint+"/flink/"+key, strings.NewReader("state of "+key))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, key)
	}
	resp, err := http.Get(s.Endpoint + "/flink/checkpoints/job/chk-1/_metadata")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "state of checkpoints/job/chk-1/_metadata", string(body))

	keys, err := s.Keys("flink", "checkpoints/")
	require.NoError(t, err)
	require.Equal(t, []string{"checkpoints/job/chk-1/_metadata"}, keys)
	data, err := s.Object("flink", "savepoints/savepoint-1/_metadata")
	require.NoError(t, err)
	require.Equal(t, "state of savepoints/savepoint-1/_metadata", string(data))

	_, err = s.Keys("other", "")
	require.Error(t, err, "a bucket that was not created does not exist")

	// A deleted object (a subsumed checkpoint) is no longer listed, but was written.
	req, err := http.NewRequest(http.MethodDelete, s.Endpoint+"/flink/checkpoints/job/chk-1/_metadata", nil)
	require.NoError(t, err)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	keys, err = s.Keys("flink", "checkpoints/")
	require.NoError(t, err)
	require.Empty(t, keys)
	require.True(t, s.Written("flink", "checkpoints/job/chk-1/_metadata"))
	require.False(t, s.Written("flink", "checkpoints/job/chk-2/_metadata"))
}
