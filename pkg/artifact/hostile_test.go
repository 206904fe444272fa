package artifact

// Hostile jar URIs and servers: a session job's jarURI, the headers sent with it and the
// server answering are all the tenant's. Each test feeds one kind of hostile input; every
// server is on loopback, which the product's policy refuses, so tests that need to reach one
// allow 127.0.0.1/32 only and put the "internal" target on 127.0.0.2.

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/pkg/addrpolicy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var onlyFirstLoopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

// serverOn starts an HTTP server on the given loopback address.
func serverOn(t *testing.T, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// counting answers a jar and counts its requests.
func counting(hits *atomic.Int64, seen *http.Header) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if seen != nil {
			*seen = r.Header.Clone()
		}
		_, _ = io.WriteString(w, "internal secret")
	})
}

func fetch(f *Fetcher, uri string, headers map[string]string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, _, err := f.Open(ctx, uri, headers)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	return string(data), err
}

// TestForbiddenAddressesAreRefusedAtDial: the product's policy refuses loopback, whether named
// by address or by a host name that resolves to it (the check is on the address connected
// to, so DNS rebinding between admission and fetch does not get past it).
func TestForbiddenAddressesAreRefusedAtDial(t *testing.T) {
	var hits atomic.Int64
	srv := serverOn(t, "127.0.0.1", counting(&hits, nil))
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, uri := range []string{
		srv.URL + "/job.jar",
		"http://localhost:" + strconv.Itoa(port) + "/job.jar",
		"http://0.0.0.0:" + strconv.Itoa(port) + "/job.jar", // reaches this host on Linux
		"http://[::ffff:127.0.0.1]:" + strconv.Itoa(port) + "/job.jar",
	} {
		t.Run(uri, func(t *testing.T) {
			_, err := fetch(&Fetcher{}, uri, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not a permitted destination")
		})
	}
	t.Run("a name that does not resolve fails", func(t *testing.T) {
		_, err := fetch(&Fetcher{}, "http://jars.invalid/job.jar", nil)
		require.Error(t, err)
	})
	assert.Zero(t, hits.Load(), "the fetcher connected to a forbidden address")
}

// TestAddressPolicy: the ranges a pod can reach that are not the public internet. Checked on
// the policy itself, so that no test packet goes to them.
func TestAddressPolicy(t *testing.T) {
	guard := addrpolicy.NewGuard(nil)
	for _, addr := range []string{
		"127.0.0.1:80", "[::1]:80", "0.0.0.0:80", "10.0.0.1:443", "172.16.0.1:443", "192.168.1.1:443",
		"169.254.169.254:80", "[fe80::1]:80", "[fd00:ec2::254]:80", // link-local and AWS IMDS over IPv6
		"100.100.100.200:80", "100.64.0.1:80", // CGNAT, Alibaba's metadata
		"198.18.0.1:80", "[64:ff9b::a9fe:a9fe]:80", "[::ffff:169.254.169.254]:80", "[2002:a9fe:a9fe::1]:80",
		"224.0.0.1:80", "240.0.0.1:80", "255.255.255.255:80",
	} {
		assert.Error(t, guard.Safe("tcp"+map[bool]string{true: "6", false: "4"}[strings.HasPrefix(addr, "[")], addr, nil), addr)
	}
	for _, addr := range []string{"8.8.8.8:443", "[2606:4700::1111]:8081", "151.101.0.1:8080"} {
		assert.NoError(t, guard.Safe("tcp"+map[bool]string{true: "6", false: "4"}[strings.HasPrefix(addr, "[")], addr, nil), addr)
	}
	allowing := addrpolicy.NewGuard([]netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::/8")})
	assert.NoError(t, allowing.Safe("tcp4", "10.1.2.3:8081", nil))
	assert.NoError(t, allowing.Safe("tcp6", "[fd00::1]:8081", nil))
	assert.Error(t, allowing.Safe("tcp4", "10.2.0.1:8081", nil))
}

// TestRedirectToForbiddenAddressIsRefused: an allowed server redirecting to a forbidden one
// (the metadata service, the kubelet) gets nothing from it.
func TestRedirectToForbiddenAddressIsRefused(t *testing.T) {
	var internalHits atomic.Int64
	internal := serverOn(t, "127.0.0.2", counting(&internalHits, nil))
	public := serverOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/computeMetadata/v1/token", http.StatusFound)
	}))
	body, err := fetch(&Fetcher{AllowedNetworks: onlyFirstLoopback}, public.URL+"/job.jar", map[string]string{"Metadata-Flavor": "Google"})
	require.Error(t, err, "got %q", body)
	assert.Zero(t, internalHits.Load(), "the redirect reached the internal server")
}

// TestTenantHeadersStayWithTheirHost: headers configured for the jar's host do not follow a
// redirect to another host; a redirect on the same host keeps them.
func TestTenantHeadersStayWithTheirHost(t *testing.T) {
	var otherHits atomic.Int64
	var otherSaw http.Header
	other := serverOn(t, "127.0.0.2", counting(&otherHits, &otherSaw))
	var sameSaw http.Header
	jars := serverOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/elsewhere.jar":
			http.Redirect(w, r, other.URL+"/job.jar", http.StatusTemporaryRedirect)
		case "/moved.jar":
			http.Redirect(w, r, "/job.jar", http.StatusMovedPermanently)
		default:
			sameSaw = r.Header.Clone()
			_, _ = io.WriteString(w, "jar")
		}
	}))
	f := &Fetcher{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	headers := map[string]string{"Metadata-Flavor": "Google", "Authorization": "Bearer tenant", "X-Api-Key": "k"}

	body, err := fetch(f, jars.URL+"/elsewhere.jar", headers)
	require.NoError(t, err)
	assert.Equal(t, "internal secret", body)
	require.EqualValues(t, 1, otherHits.Load())
	for k := range headers {
		assert.Empty(t, otherSaw.Get(k), "header %s went to another host", k)
	}

	body, err = fetch(f, jars.URL+"/moved.jar", headers)
	require.NoError(t, err)
	assert.Equal(t, "jar", body)
	for k, v := range headers {
		assert.Equal(t, v, sameSaw.Get(k), "header %s lost on a same-host redirect", k)
	}
}

// TestRedirectsAreBounded: a scheme downgrade and endless redirects are refused.
func TestRedirectsAreBounded(t *testing.T) {
	var plainHits atomic.Int64
	plain := serverOn(t, "127.0.0.1", counting(&plainHits, nil))
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/job.jar", http.StatusFound)
	}))
	defer secure.Close()
	tlsConfig := &tls.Config{RootCAs: secure.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, MinVersion: tls.VersionTLS12}
	f := &Fetcher{AllowedNetworks: onlyFirstLoopback, TLS: tlsConfig}
	_, err := fetch(f, secure.URL+"/job.jar", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "https to http")
	assert.Zero(t, plainHits.Load())

	var loops atomic.Int64
	loop := serverOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		loops.Add(1)
		http.Redirect(w, r, "/again.jar", http.StatusFound)
	}))
	_, err = fetch(&Fetcher{AllowedNetworks: onlyFirstLoopback}, loop.URL+"/job.jar", nil)
	require.Error(t, err)
	assert.LessOrEqual(t, loops.Load(), int64(maxRedirects+1))
}

// TestSlowLorisHeadersTimeOut: a server that accepts and never answers is given up on after
// the response header timeout, not held for the reconcile's life.
func TestSlowLorisHeadersTimeOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold the connection, say nothing
		}
	}()
	f := &Fetcher{AllowedNetworks: onlyFirstLoopback, ResponseHeaderTimeout: 200 * time.Millisecond}
	start := time.Now()
	_, err = fetch(f, "http://"+l.Addr().String()+"/job.jar", nil)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 3*time.Second)
}

// TestStalledBodyTimesOut: a server that sends headers and a little of the jar, then stops,
// fails the read after the idle timeout.
func TestStalledBodyTimesOut(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := serverOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		_, _ = io.WriteString(w, "PK")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	f := &Fetcher{AllowedNetworks: onlyFirstLoopback, IdleTimeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := fetch(f, srv.URL+"/job.jar", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no data for")
	assert.Less(t, time.Since(start), 3*time.Second)
}

// TestLocalFilesStayInLocalDir: file:// and local:// read only below the configured
// directory; paths that leave it, by "..", by a symlink, or by a host part, are refused
// without touching them.
func TestLocalFilesStayInLocalDir(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.jar")
	require.NoError(t, os.WriteFile(outside, []byte("secret"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "job.jar"), []byte("jar"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "inner.jar"), []byte("inner"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "escape.jar")))
	require.NoError(t, os.Symlink("job.jar", filepath.Join(dir, "alias.jar"))) // relative: os.Root refuses absolute links
	f := &Fetcher{LocalDir: dir}

	for _, ok := range []struct{ uri, want string }{
		{"file://" + dir + "/job.jar", "jar"},
		{"local://" + dir + "/job.jar", "jar"},
		{"file://" + dir + "/sub/../sub/inner.jar", "inner"},
		{"file://" + dir + "/alias.jar", "jar"},
	} {
		body, err := fetch(f, ok.uri, nil)
		require.NoError(t, err, ok.uri)
		assert.Equal(t, ok.want, body, ok.uri)
	}
	for _, bad := range []string{
		"file:///etc/passwd",
		"file://" + outside,
		"file://" + dir + "/../" + filepath.Base(filepath.Dir(outside)) + "/secret.jar",
		"file://" + dir + "/escape.jar",
		"file://" + dir,
		"file://evil.example" + dir + "/job.jar",
		"file:job.jar",
		"file://" + dir + "/sub",
	} {
		body, err := fetch(f, bad, nil)
		assert.Error(t, err, "%s gave %q", bad, body)
	}
	_, err := fetch(&Fetcher{}, "file://"+dir+"/job.jar", nil)
	require.Error(t, err, "no local directory: local files are off")
	assert.Contains(t, err.Error(), "local directory")
}

// TestReadersAnnounceTheirSize: the upload's deadline is sized from it (pkg/flink UploadJar).
func TestReadersAnnounceTheirSize(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "job.jar"), []byte("0123456789"), 0o644))
	srv := serverOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked.jar" {
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, "0123456789")
	}))
	f := &Fetcher{LocalDir: dir, AllowedNetworks: onlyFirstLoopback, MaxSize: 1000}
	for uri, want := range map[string]int64{
		"file://" + dir + "/job.jar": 10,
		srv.URL + "/job.jar":         10,
		srv.URL + "/chunked.jar":     1000, // unannounced: the limit bounds it
	} {
		rc, _, err := f.Open(context.Background(), uri, nil)
		require.NoError(t, err)
		sized, ok := rc.(interface{ Size() int64 })
		require.True(t, ok, uri)
		assert.Equal(t, want, sized.Size(), uri)
		rc.Close()
	}
}
