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
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultTimeout bounds every call unless the context has an earlier deadline
// (upstream's kubernetes.operator.flink.client.timeout is 10 s).
const DefaultTimeout = 10 * time.Second

// A JobManager runs the tenant's image, so its answers are untrusted: one reply must not cost
// the shared operator more than a few MiB of heap.
const (
	// defaultMaxResponseBytes bounds what is read of a response. Flink's answers are small
	// (job details of a job with hundreds of vertices are a few hundred KiB); calls whose
	// answers carry stack traces set a larger limit per request.
	defaultMaxResponseBytes = 2 << 20
	// maxJSONContainers bounds the objects and arrays of one response. Decoding turns each
	// into a Go value many times its size ("{}," is 3 bytes, a JobException 120), so a
	// reply under the byte limit could still cost hundreds of MiB; legitimate replies have
	// a few thousand.
	maxJSONContainers = 50_000
	// maxJSONMembers bounds the array elements and object members of one response, counted
	// by their separators: decoded into a map, a member costs over a hundred bytes for the
	// eight it takes in the reply (8 MiB of failure labels were 111 MiB of heap). The job
	// details of a job with a thousand vertices have some tens of thousands.
	maxJSONMembers = 200_000
	// MaxMessageBytes bounds every message taken from a JobManager (its errors, failure
	// causes) before it reaches errors, events, logs or status.
	MaxMessageBytes = 1024
)

// ErrResponseTooLarge is wrapped by the KindMalformed error of a response over the limits.
var ErrResponseTooLarge = errors.New("response too large")

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
	// TLS configures https URLs (trusted CAs, client certificate, how the server's name is
	// checked); pkg/resttls builds it from a cluster's configuration. Nil uses Go's defaults
	// (the system's CAs). The client keeps its own copy.
	TLS *tls.Config
	// Headers added to every request (e.g. authentication for a proxy in front of Flink).
	Headers map[string]string
	// HTTPClient overrides the transport; TLS is ignored when set.
	HTTPClient *http.Client
	// OnCall, when set, is told about every call (for metrics). It must not block.
	OnCall func(Call)
	// UploadBytesPerSecond is the slowest upload rate a jar upload's deadline allows for
	// (DefaultUploadBytesPerSecond when 0); see UploadJar.
	UploadBytesPerSecond int64
	// Guard, when set, is asked before every request that changes the cluster or its jobs
	// (every method but GET) with its endpoint, e.g. "POST /jobs/:jobid/stop". Its error keeps
	// the request from being sent and fails the call as KindUnavailable wrapping that error:
	// callers treat it as a JobManager they cannot reach now, never as the operation's outcome.
	// The operator fences these calls with its leader lease (pkg/leaderfence).
	Guard func(endpoint string) error
}

// Client talks to one JobManager. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	http    *http.Client
	timeout time.Duration
	headers http.Header
	onCall  func(Call)
	// uploadRate sizes jar upload deadlines (bytes per second).
	uploadRate int64
	guard      func(endpoint string) error

	versionMu sync.Mutex
	version   *Version
	// transport is the transport New made (nil when the caller gave an HTTPClient).
	transport *http.Transport
}

// New returns a client for the JobManager at opts.URL.
func New(opts Options) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(opts.URL, "/"))
	if err != nil || base.Host == "" || (base.Scheme != "http" && base.Scheme != "https") {
		return nil, fmt.Errorf("flink: REST URL %q must be http(s)://host:port", opts.URL)
	}
	hc := opts.HTTPClient
	var own *http.Transport
	if hc == nil {
		own = http.DefaultTransport.(*http.Transport).Clone()
		if opts.TLS != nil {
			own.TLSClientConfig = opts.TLS.Clone()
		}
		hc = &http.Client{Transport: own}
	}
	// Never follow a redirect: a tenant's JobManager answering 307 would make the operator
	// replay a PATCH (cancel) or POST (savepoint disposal) against any host it can reach,
	// e.g. another tenant's JobManager. A copy, so that a caller's client is left as it was.
	noRedirects := *hc
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	hc = &noRedirects
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	headers := http.Header{}
	for k, v := range opts.Headers {
		headers.Set(k, v)
	}
	rate := opts.UploadBytesPerSecond
	if rate <= 0 {
		rate = DefaultUploadBytesPerSecond
	}
	return &Client{base: base, http: hc, transport: own, timeout: timeout, headers: headers, onCall: opts.OnCall, uploadRate: rate,
		guard: opts.Guard}, nil
}

// Close closes the client's idle connections. A client is made per reconcile: without Close,
// each would leave its keep-alive connection, and two goroutines, idle for 90 s, which for
// thousands of clusters observed every interval adds up to thousands of both. A client built
// on the caller's HTTPClient leaves that client's connections alone. Safe on nil.
func (c *Client) Close() {
	if c != nil && c.transport != nil {
		c.transport.CloseIdleConnections()
	}
}

// AssumeVersion tells the client which Flink version the cluster runs, as a caller recorded it
// from an earlier answer, so that it does not ask the JobManager again (GET /config).
func (c *Client) AssumeVersion(v Version) {
	c.versionMu.Lock()
	c.version = &v
	c.versionMu.Unlock()
}

// WithTimeout returns a client that shares this one's connections and settings but bounds
// each call by d (e.g. a longer timeout for jar uploads).
func (c *Client) WithTimeout(d time.Duration) *Client {
	c.versionMu.Lock()
	v := c.version
	c.versionMu.Unlock()
	return &Client{base: c.base, http: c.http, timeout: d, headers: c.headers, onCall: c.onCall, uploadRate: c.uploadRate, version: v,
		guard: c.guard}
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
	maxBytes int64 // response limit; defaultMaxResponseBytes when 0
}

// do performs the call and decodes a 2xx JSON response into out (when non-nil).
func (c *Client) do(ctx context.Context, r request, out any) error {
	if c.guard != nil && r.method != http.MethodGet {
		if err := c.guard(r.method + " " + r.route); err != nil {
			return &Error{Kind: KindUnavailable, Op: r.op, Err: err}
		}
	}
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
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Not followed (see New); Flink's REST API never redirects.
		return resp.StatusCode, &Error{Kind: KindRedirect, Op: r.op, StatusCode: resp.StatusCode,
			Message: "the JobManager answered with a redirect to " + TruncateMessage(strconv.Quote(resp.Header.Get("Location")))}
	}
	limit := r.maxBytes
	if limit <= 0 {
		limit = defaultMaxResponseBytes
	}
	// One byte past the limit tells a reply at the limit from a longer one.
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp.StatusCode, transportError(r.op, err)
	}
	tooLarge := int64(len(data)) > limit
	if tooLarge {
		data = data[:limit]
	}
	if !statusOK(resp.StatusCode, r.okStatus) {
		// The error's message is taken from what was read; it is truncated anyway.
		return resp.StatusCode, statusError(r.op, resp.StatusCode, data, r.trigger)
	}
	if out == nil {
		return resp.StatusCode, nil
	}
	if tooLarge {
		return resp.StatusCode, &Error{Kind: KindMalformed, Op: r.op, StatusCode: resp.StatusCode,
			Message: fmt.Sprintf("response larger than %d bytes", limit), Err: ErrResponseTooLarge}
	}
	if containers, members := countJSON(data, maxJSONContainers, maxJSONMembers); containers > maxJSONContainers {
		return resp.StatusCode, &Error{Kind: KindMalformed, Op: r.op, StatusCode: resp.StatusCode,
			Message: fmt.Sprintf("response has more than %d JSON objects and arrays", maxJSONContainers), Err: ErrResponseTooLarge}
	} else if members > maxJSONMembers {
		return resp.StatusCode, &Error{Kind: KindMalformed, Op: r.op, StatusCode: resp.StatusCode,
			Message: fmt.Sprintf("response has more than %d JSON array elements and object members", maxJSONMembers), Err: ErrResponseTooLarge}
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
			return TruncateMessage(msg + " " + line)
		}
	}
	// Drop the Java class prefix of a RestHandlerException: the message is what matters.
	return TruncateMessage(strings.TrimPrefix(msg, "org.apache.flink.runtime.rest.handler.RestHandlerException: "))
}

// TruncateMessage bounds a message that came from a JobManager to MaxMessageBytes, cut at a
// character boundary and saying how much was dropped. The operator copies such messages into
// errors, events, logs and status, and a hostile JobManager can make them any size.
func TruncateMessage(s string) string {
	if len(s) <= MaxMessageBytes {
		return s
	}
	// The marker's length depends on the count; reserve room for the largest (a 20-digit count).
	const reserve = len(" ... (12345678901234567890 bytes truncated)")
	cut := MaxMessageBytes - reserve
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s ... (%d bytes truncated)", s[:cut], len(s)-cut)
}

// countJSON counts the JSON objects and arrays in data, and the separators between array
// elements and object members, stopping once either is past its limit. It skips string
// contents and does not validate: json.Unmarshal does that afterwards.
func countJSON(data []byte, maxContainers, maxMembers int) (containers, members int) {
	inString, escaped := false, false
	for _, b := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			containers++
			if containers > maxContainers {
				return containers, members
			}
		case b == ',':
			members++
			if members > maxMembers {
				return containers, members
			}
		}
	}
	return containers, members
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
