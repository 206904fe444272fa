package artifact

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrorsNeverShowTheJarURIPassword: a jarURI's user info password reaches status.error,
// events and logs through the fetch errors; they show the URI as url.URL.Redacted does.
func TestErrorsNeverShowTheJarURIPassword(t *testing.T) {
	const password = "s3cr3t-pass"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big.jar":
			_, _ = w.Write([]byte("0123456789"))
		case "/chunked.jar":
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte("0123456789"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	withUser := func(path string) string {
		return strings.Replace(srv.URL, "http://", "http://deploy:"+password+"@", 1) + path
	}
	for _, tc := range []struct{ name, uri, want string }{
		{"HTTP 404", withUser("/job.jar"), "404"},
		{"announced too large", withUser("/big.jar"), "exceeds the size limit"},
		{"streamed too large", withUser("/chunked.jar"), "exceeds the size limit"},
		{"unsupported scheme", "s3://deploy:" + password + "@bucket/job.jar", "cannot be fetched"},
		{"local jar with a host", "local://deploy:" + password + "@host/jars/job.jar", "absolute path and no host"},
		{"does not parse", "http://deploy:" + password + "@bad host/job.jar", "jarURI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &Fetcher{MaxSize: 5, LocalDir: t.TempDir(), AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
			rc, _, err := f.Open(context.Background(), tc.uri, nil)
			if err == nil {
				_, err = io.ReadAll(rc)
				rc.Close()
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), password)
			assert.Contains(t, err.Error(), "deploy:", "the user name stays, to say whose credentials were used")
		})
	}
}
