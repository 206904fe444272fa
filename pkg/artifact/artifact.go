// Package artifact opens the job jars of session jobs for upload to a session cluster,
// streaming them: a jar is never held whole in memory, and a size limit is enforced while
// reading.
package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
)

// DefaultMaxSize bounds a jar (512 MiB); larger artifacts fail with a clear error.
const DefaultMaxSize = 512 << 20

// Fetcher opens jars by URI: local:// and file:// read the operator's filesystem,
// http:// and https:// download with optional headers.
type Fetcher struct {
	// HTTP is the client for downloads; http.DefaultClient when nil.
	HTTP *http.Client
	// MaxSize in bytes; DefaultMaxSize when 0.
	MaxSize int64
}

// ErrTooLarge is returned (wrapped) by reads past the size limit.
var ErrTooLarge = errors.New("artifact exceeds the size limit")

// Open returns the jar's content and file name. headers go with HTTP requests (upstream's
// kubernetes.operator.user.artifacts.http.header).
func (f *Fetcher) Open(ctx context.Context, uri string, headers map[string]string) (io.ReadCloser, string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, "", fmt.Errorf("jarURI %q: %w", uri, err)
	}
	limit := f.MaxSize
	if limit <= 0 {
		limit = DefaultMaxSize
	}
	name := path.Base(u.Path)
	switch strings.ToLower(u.Scheme) {
	case "local", "file":
		file, err := os.Open(u.Path)
		if err != nil {
			return nil, "", fmt.Errorf("jarURI %q: %w", uri, err)
		}
		if st, err := file.Stat(); err == nil && st.Size() > limit {
			file.Close()
			return nil, "", fmt.Errorf("jarURI %q: %d bytes: %w of %d bytes", uri, st.Size(), ErrTooLarge, limit)
		}
		return &limited{r: file, c: file, left: limit, uri: uri, max: limit}, name, nil
	case "http", "https":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
		if err != nil {
			return nil, "", fmt.Errorf("jarURI %q: %w", uri, err)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		client := f.HTTP
		if client == nil {
			client = http.DefaultClient
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, "", fmt.Errorf("download %s: %w", uri, err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, "", fmt.Errorf("download %s: HTTP %s", uri, resp.Status)
		}
		if resp.ContentLength > limit {
			resp.Body.Close()
			return nil, "", fmt.Errorf("download %s: %d bytes: %w of %d bytes", uri, resp.ContentLength, ErrTooLarge, limit)
		}
		return &limited{r: resp.Body, c: resp.Body, left: limit, uri: uri, max: limit}, name, nil
	case "":
		return nil, "", fmt.Errorf("jarURI %q has no scheme; allowed: local, file, http, https", uri)
	}
	return nil, "", fmt.Errorf("jarURI %q: scheme %q cannot be fetched by the operator; allowed: local, file, http, https", uri, u.Scheme)
}

// limited fails a read that goes past the limit (a server may not announce the length).
type limited struct {
	r         io.Reader
	c         io.Closer
	left, max int64
	uri       string
}

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
	return n, err
}

func (l *limited) Close() error { return l.c.Close() }
