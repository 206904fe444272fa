// Package flink is the typed client of the Flink JobManager REST API. It is the only code of
// the operator that knows Flink's wire format: field names, async-operation protocol, error
// bodies and the differences between Flink versions (1.15 … 2.x) are handled here, so that
// callers work with Go types and typed errors.
package flink

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout bounds every call unless the context has an earlier deadline
// (upstream's kubernetes.operator.flink.client.timeout is 10 s).
const DefaultTimeout = 10 * time.Second

// maxResponseBytes bounds what is read of a response, so a misbehaving endpoint cannot
// exhaust the operator's memory.
const maxResponseBytes = 32 << 20

// TLSOptions configure HTTPS to a JobManager whose REST endpoint has rest.ssl.enabled.
// Files are PEM; Flink's JKS keystores must be exported to PEM (the operator does that
// from the cluster's secrets).
type TLSOptions struct {
	// CAFile holds the certificates that sign the JobManager's REST certificate.
	CAFile string
	// CertFile and KeyFile are the client certificate, for rest.ssl.authentication-enabled.
	CertFile, KeyFile string
	// ServerName overrides the name checked in the server certificate.
	ServerName string
	// InsecureSkipVerify disables certificate verification (tests only).
	InsecureSkipVerify bool
}

// Call describes one finished REST call, for metrics.
type Call struct {
	// Endpoint is the route template, e.g. "GET /jobs/:jobid/savepoints/:triggerid".
	Endpoint string
	// StatusCode is the HTTP status, 0 when no response was received.
	StatusCode int
	// Err is the call's error, nil on success.
	Err error
	// Duration of the call.
	Duration time.Duration
}

// Options configure a Client.
type Options struct {
	// URL of the JobManager REST endpoint, e.g. http://my-job-rest.ns:8081.
	URL string
	// Timeout of each call when the context has no earlier deadline; DefaultTimeout when 0.
	Timeout time.Duration
	// TLS for https URLs.
	TLS *TLSOptions
	// Headers added to every request (e.g. authentication for a proxy in front of Flink).
	Headers map[string]string
	// HTTPClient overrides the transport; TLS is ignored when set.
	HTTPClient *http.Client
	// OnCall, when set, is told about every call (for metrics). It must not block.
	OnCall func(Call)
}

// Client talks to one JobManager. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	http    *http.Client
	timeout time.Duration
	headers http.Header
	onCall  func(Call)

	versionMu sync.Mutex
	version   *Version
}

// New returns a client for the JobManager at opts.URL.
func New(opts Options) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(opts.URL, "/"))
	if err != nil || base.Host == "" || (base.Scheme != "http" && base.Scheme != "https") {
		return nil, fmt.Errorf("flink: REST URL %q must be http(s)://host:port", opts.URL)
	}
	hc := opts.HTTPClient
	if hc == nil {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		if opts.TLS != nil {
			tlsConfig, err := opts.TLS.config()
			if err != nil {
				return nil, err
			}
			transport.TLSClientConfig = tlsConfig
		}
		hc = &http.Client{Transport: transport}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	headers := http.Header{}
	for k, v := range opts.Headers {
		headers.Set(k, v)
	}
	return &Client{base: base, http: hc, timeout: timeout, headers: headers, onCall: opts.OnCall}, nil
}

func (o *TLSOptions) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName, InsecureSkipVerify: o.InsecureSkipVerify} //nolint:gosec // opt-in for tests
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("flink: read TLS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("flink: TLS CA file %s holds no PEM certificate", o.CAFile)
		}
		cfg.RootCAs = pool
	}
	if o.CertFile != "" || o.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("flink: load TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// WithTimeout returns a client that shares this one's connections and settings but bounds
// each call by d (e.g. a longer timeout for jar uploads).
func (c *Client) WithTimeout(d time.Duration) *Client {
	c.versionMu.Lock()
	v := c.version
	c.versionMu.Unlock()
	return &Client{base: c.base, http: c.http, timeout: d, headers: c.headers, onCall: c.onCall, version: v}
}

// URL returns the JobManager REST endpoint this client talks to.
func (c *Client) URL() string { return c.base.String() }

// NewTriggerID returns a fresh id for an async operation (32 lowercase hex characters, as
// Flink's TriggerId). The operator records it in status before triggering, so that a
// retried trigger with the same id cannot start a second operation.
func NewTriggerID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("flink: crypto/rand failed: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// request is one REST call.
type request struct {
	op       string // what the caller asked for, for errors
	method   string
	route    string // route template, for metrics
	path     string // escaped path
	query    url.Values
	body     any       // JSON-encoded when set
	rawBody  io.Reader // sent as is when set (multipart upload)
	ctype    string
	trigger  bool // a 404 means an unknown trigger id
	okStatus []int
}

// do performs the call and decodes a 2xx JSON response into out (when non-nil).
func (c *Client) do(ctx context.Context, r request, out any) error {
	// An earlier deadline of the caller's context still wins.
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	status, err := c.roundTrip(ctx, r, out)
	if c.onCall != nil {
		c.onCall(Call{Endpoint: r.method + " " + r.route, StatusCode: status, Err: err, Duration: time.Since(start)})
	}
	return err
}

func (c *Client) roundTrip(ctx context.Context, r request, out any) (int, error) {
	u := *c.base
	u.Path = c.base.Path + r.path
	u.RawPath = ""
	u.RawQuery = r.query.Encode()

	var body io.Reader
	ctype := r.ctype
	switch {
	case r.rawBody != nil:
		body = r.rawBody
	case r.body != nil:
		data, err := json.Marshal(r.body)
		if err != nil {
			return 0, &Error{Kind: KindBadRequest, Op: r.op, Message: "encode request", Err: err}
		}
		body = bytes.NewReader(data)
		ctype = "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return 0, &Error{Kind: KindBadRequest, Op: r.op, Err: err}
	}
	for k, v := range c.headers {
		req.Header[k] = v
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")

	resp, err := c.http.Do(req)
	if err != nil {
		return 0, transportError(r.op, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return resp.StatusCode, transportError(r.op, err)
	}
	if !statusOK(resp.StatusCode, r.okStatus) {
		return resp.StatusCode, statusError(r.op, resp.StatusCode, data, r.trigger)
	}
	if out == nil {
		return resp.StatusCode, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, &Error{Kind: KindMalformed, Op: r.op, StatusCode: resp.StatusCode,
			Message: fmt.Sprintf("cannot decode %s", abbreviate(data)), Err: err}
	}
	return resp.StatusCode, nil
}

func statusOK(status int, ok []int) bool {
	if len(ok) == 0 {
		return status >= 200 && status < 300
	}
	for _, s := range ok {
		if s == status {
			return true
		}
	}
	return false
}

// errorMessage extracts the useful line from Flink's {"errors":["...", "..."]}: the first
// line of the first error, or the server-side exception when the first says only
// "Internal server error.".
func errorMessage(body []byte) string {
	var eb struct {
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(body, &eb); err != nil || len(eb.Errors) == 0 {
		return strings.TrimSpace(abbreviate(body))
	}
	msg := firstLine(eb.Errors[0])
	if msg == "Internal server error." && len(eb.Errors) > 1 {
		detail := strings.TrimPrefix(eb.Errors[1], "<Exception on server side:")
		if line := firstLine(detail); line != "" {
			return msg + " " + line
		}
	}
	// Drop the Java class prefix of a RestHandlerException: the message is what matters.
	return strings.TrimPrefix(msg, "org.apache.flink.runtime.rest.handler.RestHandlerException: ")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func abbreviate(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// jobPath builds /jobs/<id>/<rest...>, rejecting ids that are not Flink ids.
func jobPath(op, jobID string, rest ...string) (string, error) {
	if !IsValidID(jobID) {
		return "", &Error{Kind: KindBadRequest, Op: op, Message: fmt.Sprintf("job id %q is not 32 hex characters", jobID)}
	}
	p := "/jobs/" + jobID
	for _, seg := range rest {
		p += "/" + url.PathEscape(seg)
	}
	return p, nil
}

// IsValidID reports whether s is a Flink id (job, trigger, vertex): 32 hex characters.
func IsValidID(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
