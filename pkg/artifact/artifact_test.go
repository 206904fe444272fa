package artifact

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	jar := filepath.Join(dir, "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("0123456789"), 0o644))
	// The product refuses loopback and has no local directory; the test's jars are in both.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/chunked.jar" { // no Content-Length: the limit applies while reading
			w.(http.Flusher).Flush()
		}
		_, _ = w.Write([]byte("0123456789"))
	}))
	defer srv.Close()
	auth := map[string]string{"Authorization": "Bearer t"}

	tests := []struct {
		name, uri string
		headers   map[string]string
		max       int64
		want      string
		err       string
	}{
		{name: "file", uri: "file://" + jar, want: "0123456789"},
		{name: "local", uri: "local://" + jar, want: "0123456789"},
		{name: "http with headers", uri: srv.URL + "/x/job.jar", headers: auth, want: "0123456789"},
		{name: "http error names the status", uri: srv.URL + "/job.jar", err: "401"},
		{name: "file too large", uri: "file://" + jar, max: 5, err: "exceeds the size limit"},
		{name: "announced download too large", uri: srv.URL + "/job.jar", headers: auth, max: 5, err: "exceeds the size limit"},
		{name: "streamed download too large", uri: srv.URL + "/chunked.jar", headers: auth, max: 5, err: "exceeds the size limit"},
		{name: "missing file", uri: "file://" + dir + "/does/not/exist.jar", err: "no such file"},
		{name: "unsupported scheme", uri: "s3://bucket/job.jar", err: `scheme "s3" cannot be fetched`},
		{name: "no scheme", uri: "/tmp/job.jar", err: "has no scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Fetcher{MaxSize: tt.max, LocalDir: dir, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
			rc, name, err := f.Open(context.Background(), tt.uri, tt.headers)
			var body []byte
			if err == nil {
				body, err = io.ReadAll(rc)
				rc.Close()
			}
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(body))
			assert.True(t, strings.HasSuffix(name, ".jar"))
		})
	}
}
