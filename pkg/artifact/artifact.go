// Package artifact opens the job jars of session jobs for upload to a session cluster,
// streaming them: a jar is never held whole in memory, and a size limit is enforced while
// reading.
//
// A jar URI, the headers sent with it and the server answering it are chosen by a tenant,
// while the fetch runs in the operator's pod with the operator's network reach. So:
//   - HTTP connections are checked at dial time against an address policy (no loopback,
//     private, link-local, metadata, CGNAT, NAT64 or other special-purpose ranges, unless
//     AllowedNetworks says so). The check is on the address actually connected to, so DNS
//     rebinding between admission and fetch, or a name admission could not resolve, gets
//     nowhere.
//   - Redirects are followed only to http(s), never from https to http, at most maxRedirects
//     times, each hop dialled under the same policy; the tenant's headers go only to the host
//     of the jarURI.
//   - Connect, TLS handshake, response header and body idle timeouts bound a slow server,
//     and a minimum average throughput bounds one that trickles (a byte just before each idle
//     timeout would otherwise hold the reconcile's worker until its deadline).
//   - file:// and local:// read only below LocalDir, resolved with os.Root so that neither
//     ".." nor a symlink leaves it; without LocalDir they are refused.
package artifact

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flink-operator/flink-operator/pkg/addrpolicy"
	"github.com/flink-operator/flink-operator/pkg/redact"
)

// DefaultMaxSize bounds a jar (512 MiB); larger artifacts fail with a clear error.
const DefaultMaxSize = 512 << 20

// Default timeouts of downloads.
const (
	// DefaultConnectTimeout bounds the TCP connect and, separately, the TLS handshake.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultResponseHeaderTimeout bounds the wait for a response's headers once the request
	// is sent (a server that accepts and says nothing).
	DefaultResponseHeaderTimeout = 30 * time.Second
	// DefaultIdleTimeout bounds one read of the body that receives nothing (a server that
	// stops sending). A trickling server is bounded by the minimum throughput below.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultMinThroughput is the slowest average, in bytes per second, a download may keep
	// once it has waited DefaultThroughputGrace for the server: 16 KiB/s, far below any
	// artifact repository's, and far above a server that trickles to hold the worker.
	DefaultMinThroughput = 16 << 10
	// DefaultThroughputGrace is the time waited on the server before the minimum throughput
	// applies (a slow start, a TCP window growing, a repository warming up).
	DefaultThroughputGrace = 10 * time.Second
	// maxRedirects a download follows (artifact stores redirect to blob storage once or twice).
	maxRedirects = 5
)

// Fetcher opens jars by URI: local:// and file:// read the operator's filesystem below
// LocalDir, http:// and https:// download with optional headers. Its zero value refuses local
// files and every non-public address. It is safe for concurrent use; set its fields before
// the first Open.
type Fetcher struct {
	// MaxSize in bytes; DefaultMaxSize when 0.
	MaxSize int64
	// LocalDir is the directory file:// and local:// jars must be in (their paths are
	// absolute and must lie below it). Empty refuses them.
	LocalDir string
	// AllowedNetworks are address ranges a download may connect to although the policy
	// refuses them (e.g. an in-cluster artifact repository's range, or 127.0.0.0/8 in tests).
	AllowedNetworks []netip.Prefix
	// TLS configures https downloads (e.g. the CA of a private repository); Go's defaults
	// when nil.
	TLS *tls.Config
	// ConnectTimeout, ResponseHeaderTimeout and IdleTimeout default to the Default* constants.
	ConnectTimeout, ResponseHeaderTimeout, IdleTimeout time.Duration
	// MinThroughput is the slowest average a download's body may come at, in bytes per second
	// of waiting for the server (the time the consumer spends on what it read is not counted),
	// once ThroughputGrace of waiting has passed. DefaultMinThroughput when 0; negative is no
	// minimum.
	MinThroughput int64
	// ThroughputGrace defaults to DefaultThroughputGrace.
	ThroughputGrace time.Duration

	once   sync.Once
	client *http.Client
}

// ErrTooLarge is returned (wrapped) by reads past the size limit.
var ErrTooLarge = errors.New("artifact exceeds the size limit")

// ErrTooSlow is returned (wrapped) by reads of a download slower than the minimum throughput.
var ErrTooSlow = errors.New("download slower than the minimum throughput")

// errStalled is the cause of a download cancelled because a read received nothing.
var errStalled = errors.New("download stalled")

// Open returns the jar's content and file name. headers go with HTTP requests to the jarURI's
// host (upstream's kubernetes.operator.user.artifacts.http.header). The reader has a
// Size() int64 method: the jar's size when known, else the size limit.
func (f *Fetcher) Open(ctx context.Context, uri string, headers map[string]string) (io.ReadCloser, string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		// url.Parse quotes the whole URI, user info included; say why without it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, "", fmt.Errorf("jarURI %q: %w", redact.URLUserInfo(uri), err)
	}
	// Errors end up in status.error, events and logs: they show the URI without its password.
	shown := u.Redacted()
	limit := f.MaxSize
	if limit <= 0 {
		limit = DefaultMaxSize
	}
	name := path.Base(u.Path)
	switch strings.ToLower(u.Scheme) {
	case "local", "file":
		return f.openLocal(u, shown, name, limit)
	case "http", "https":
		return f.download(ctx, uri, shown, name, headers, limit)
	case "":
		return nil, "", fmt.Errorf("jarURI %q has no scheme; allowed: local, file, http, https", shown)
	}
	return nil, "", fmt.Errorf("jarURI %q: scheme %q cannot be fetched by the operator; allowed: local, file, http, https", shown, u.Scheme)
}

// openLocal opens a file below LocalDir. The path is checked lexically first, so that nothing
// outside the directory is touched (not even to tell whether it exists), then opened through
// os.Root, which refuses symlinks that lead out. uri is the URI as errors show it.
func (f *Fetcher) openLocal(u *url.URL, uri, name string, limit int64) (io.ReadCloser, string, error) {
	if f.LocalDir == "" {
		return nil, "", fmt.Errorf("jarURI %q: %s:// jars are off: the operator has no local directory for jars (--artifact-local-dir)", uri, u.Scheme)
	}
	if u.Opaque != "" || u.Host != "" || !path.IsAbs(u.Path) {
		return nil, "", fmt.Errorf("jarURI %q: a %s:// jar needs an absolute path and no host, like %s:///jars/job.jar", uri, u.Scheme, u.Scheme)
	}
	dir, err := filepath.Abs(f.LocalDir)
	if err != nil {
		return nil, "", fmt.Errorf("local jar directory %q: %w", f.LocalDir, err)
	}
	rel, err := filepath.Rel(dir, filepath.FromSlash(path.Clean(u.Path)))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, "", fmt.Errorf("jarURI %q: local jars must be below %s", uri, dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", fmt.Errorf("local jar directory: %w", err)
	}
	defer root.Close() // the file stays open without it
	file, err := root.Open(rel)
	if err != nil {
		return nil, "", fmt.Errorf("jarURI %q: %w", uri, err)
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, "", fmt.Errorf("jarURI %q: %w", uri, err)
	}
	if !st.Mode().IsRegular() { // a FIFO or device could block or never end
		file.Close()
		return nil, "", fmt.Errorf("jarURI %q is not a regular file", uri)
	}
	if st.Size() > limit {
		file.Close()
		return nil, "", fmt.Errorf("jarURI %q: %d bytes: %w of %d bytes", uri, st.Size(), ErrTooLarge, limit)
	}
	return &limited{r: file, c: file, left: limit, uri: uri, max: limit, size: st.Size()}, name, nil
}

// download GETs uri; shown is the URI as errors show it (without its password).
func (f *Fetcher) download(ctx context.Context, uri, shown, name string, headers map[string]string, limit int64) (io.ReadCloser, string, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		cancel(nil)
		return nil, "", fmt.Errorf("jarURI %q: %w", shown, err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := f.httpClient().Do(req)
	if err != nil {
		cancel(nil)
		return nil, "", fmt.Errorf("download %s: %w", shown, err) // net/http's url.Error strips the password too
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel(nil)
		return nil, "", fmt.Errorf("download %s: HTTP %s", shown, resp.Status)
	}
	if resp.ContentLength > limit {
		resp.Body.Close()
		cancel(nil)
		return nil, "", fmt.Errorf("download %s: %d bytes: %w of %d bytes", shown, resp.ContentLength, ErrTooLarge, limit)
	}
	size := resp.ContentLength
	if size < 0 {
		size = limit
	}
	body := &idleReader{body: resp.Body, ctx: ctx, cancel: cancel, timeout: orDefault(f.IdleTimeout, DefaultIdleTimeout),
		minRate: f.MinThroughput, grace: orDefault(f.ThroughputGrace, DefaultThroughputGrace)}
	if body.minRate == 0 {
		body.minRate = DefaultMinThroughput
	}
	// Created stopped: Read arms them only while it waits.
	body.timer = time.AfterFunc(time.Hour, func() { cancel(errStalled) })
	body.timer.Stop()
	body.slowTimer = time.AfterFunc(time.Hour, func() { cancel(ErrTooSlow) })
	body.slowTimer.Stop()
	return &limited{r: body, c: body, left: limit, uri: shown, max: limit, size: size}, name, nil
}

// httpClient is built once: its transport pools connections across fetches.
func (f *Fetcher) httpClient() *http.Client {
	f.once.Do(func() {
		guard := addrpolicy.NewGuard(f.AllowedNetworks)
		connect := orDefault(f.ConnectTimeout, DefaultConnectTimeout)
		dialer := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second,
			// Control runs for each address the dialer connects to, after name resolution: the
			// policy applies to what is connected, whatever a name resolved to at admission.
			Control: guard.Safe}
		transport := &http.Transport{
			// No proxy: the address policy needs the connection to be the destination's.
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSClientConfig:       f.TLS,
			TLSHandshakeTimeout:   connect,
			ResponseHeaderTimeout: orDefault(f.ResponseHeaderTimeout, DefaultResponseHeaderTimeout),
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConns:          10,
			ForceAttemptHTTP2:     true,
		}
		f.client = &http.Client{Transport: transport, CheckRedirect: checkRedirect}
	})
	return f.client
}

// checkRedirect re-checks every hop: the dial policy applies to it through the transport, and
// here the scheme, the count and the headers. Go copies the first request's headers to each
// hop, stripping only Authorization, Cookie and WWW-Authenticate on a host change; the
// tenant's headers (e.g. Metadata-Flavor, API keys) are meant for the jarURI's host only.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	prev, first := via[len(via)-1], via[0]
	switch {
	case req.URL.Scheme != "http" && req.URL.Scheme != "https":
		return fmt.Errorf("redirect to scheme %q refused", req.URL.Scheme)
	case prev.URL.Scheme == "https" && req.URL.Scheme != "https":
		return fmt.Errorf("redirect from https to http refused")
	}
	if !strings.EqualFold(req.URL.Scheme, first.URL.Scheme) || !strings.EqualFold(req.URL.Host, first.URL.Host) {
		// Dropping every header is what keeps the tenant's headers with their host
		// (TestTenantHeadersStayWithTheirHost); G119 flags any header change here.
		req.Header = http.Header{} //nolint:gosec // G119: headers are removed, not propagated
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// idleReader fails a read that receives nothing for timeout, and a download whose average
// rate falls below minRate once grace has passed, by cancelling the request. Both clocks run
// only while a read waits, not while the consumer (the upload) is busy: a slow session
// cluster does not make its jar's server look slow.
type idleReader struct {
	body    io.ReadCloser
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timeout time.Duration
	timer   *time.Timer
	// minRate in bytes per second of waiting (<= 0: none), enforced after grace of waiting.
	minRate   int64
	grace     time.Duration
	slowTimer *time.Timer
	// waited is the time reads have waited for the server; received the bytes they got.
	waited   time.Duration
	received int64
}

func (r *idleReader) Read(p []byte) (int, error) {
	if r.minRate > 0 {
		left := r.allowedWait() - r.waited
		if left <= 0 {
			return 0, r.tooSlow()
		}
		r.slowTimer.Reset(left)
	}
	r.timer.Reset(r.timeout)
	start := time.Now()
	n, err := r.body.Read(p)
	r.timer.Stop()
	r.slowTimer.Stop()
	r.waited += time.Since(start)
	r.received += int64(n)
	switch cause := context.Cause(r.ctx); {
	case err == nil:
	case errors.Is(cause, errStalled):
		return n, fmt.Errorf("no data for %s: %w", r.timeout, err)
	case errors.Is(cause, ErrTooSlow):
		return n, r.tooSlow()
	}
	if err == nil && r.minRate > 0 && r.waited > r.allowedWait() {
		return n, r.tooSlow()
	}
	return n, err
}

// allowedWait is how long reads may have waited in all for what was received: the grace, or
// the time received takes at the minimum rate when longer.
func (r *idleReader) allowedWait() time.Duration {
	atMinRate := time.Duration(float64(r.received) / float64(r.minRate) * float64(time.Second))
	return max(r.grace, atMinRate)
}

func (r *idleReader) tooSlow() error {
	rate := float64(r.received) / max(r.waited.Seconds(), 1e-9)
	return fmt.Errorf("%d bytes in %s (%.0f bytes/s), below the minimum of %d bytes/s: %w",
		r.received, r.waited.Round(time.Millisecond), rate, r.minRate, ErrTooSlow)
}

func (r *idleReader) Close() error {
	r.timer.Stop()
	r.slowTimer.Stop()
	err := r.body.Close()
	r.cancel(nil)
	return err
}

// limited fails a read that goes past the limit (a server may not announce the length).
type limited struct {
	r         io.Reader
	c         io.Closer
	left, max int64
	uri       string
	size      int64
}

// Size is the jar's size when known, else the limit: what an upload must allow time for.
func (l *limited) Size() int64 { return l.size }

func (l *limited) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, fmt.Errorf("jarURI %q: %w of %d bytes", l.uri, ErrTooLarge, l.max)
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, fmt.Errorf("jarURI %q: %w of %d bytes", l.uri, ErrTooLarge, l.max)
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("jarURI %q: %w", l.uri, err)
	}
	return n, err
}

func (l *limited) Close() error { return l.c.Close() }
