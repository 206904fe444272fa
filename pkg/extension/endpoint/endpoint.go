// Package endpoint reads the HTTP endpoints of the operator's extension points (custom
// validators and resource listeners) from the operator configuration, checks them against the
// URL policy, and builds the HTTP clients that call them.
//
// The endpoints receive whole Flink resources, so where they may be is the administrator's
// decision, written in the operator configuration only: https to any host, plain http only to
// the hosts kubernetes.operator.extension.allowed-hosts lists, and, when that option is set,
// any scheme only to the hosts it lists. Redirects are never followed (a redirect would lead
// the request past that policy).
package endpoint

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/flink-operator/flink-operator/pkg/options"
)

// FailurePolicy says what a validator that cannot answer (down, slow, a malformed answer) means.
type FailurePolicy string

const (
	// Fail refuses the resource, naming the validator that did not answer.
	Fail FailurePolicy = "Fail"
	// Ignore admits the resource as if the validator had allowed it.
	Ignore FailurePolicy = "Ignore"
)

// Kinds an endpoint may be limited to.
const (
	KindDeployment = "FlinkDeployment"
	KindSessionJob = "FlinkSessionJob"
	KindSnapshot   = "FlinkStateSnapshot"
)

var allKinds = []string{KindDeployment, KindSessionJob, KindSnapshot}

// Limits of the endpoints' timings. A validator answers within the admission webhook's own
// deadline (timeoutSeconds=5, see pkg/webhook): validators are called concurrently, so each
// may take at most MaxValidatorTimeout and the webhook still answers in time.
const (
	DefaultValidatorTimeout = 2 * time.Second
	MaxValidatorTimeout     = 3 * time.Second
	DefaultListenerTimeout  = 5 * time.Second
	DefaultMaxAttempts      = 5
	DefaultInitialBackoff   = time.Second
	DefaultMaxBackoff       = 30 * time.Second
	DefaultQueueSize        = 1000
	maxQueueSize            = 100000
	// DefaultQueueBytes bounds the data of the events waiting for one listener (16 MiB in each
	// of its 4 lanes): a status event holds two statuses, and a slow listener with a large,
	// flapping tenant would otherwise keep queueSize of them whatever their size.
	DefaultQueueBytes = 64 << 20
	minQueueBytes     = 64 << 10
	maxQueueBytes     = 4 << 30
)

// Common are the settings both kinds of endpoints have.
type Common struct {
	// Name identifies the endpoint in errors, logs and metrics.
	Name string
	URL  *url.URL
	// Timeout bounds one call.
	Timeout time.Duration
	// CAFile, when set, is a PEM bundle that replaces the system's roots for this endpoint.
	CAFile string
}

// Validator is one validator endpoint.
type Validator struct {
	Common
	FailurePolicy FailurePolicy
	// Kinds are the resource kinds sent to the validator.
	Kinds []string
}

// Handles says whether the validator judges resources of kind.
func (v Validator) Handles(kind string) bool {
	for _, k := range v.Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// Listener is one listener endpoint.
type Listener struct {
	Common
	// MaxAttempts is the number of deliveries tried per event before it is given up.
	MaxAttempts int
	// InitialBackoff is the wait after the first failed attempt; it doubles up to MaxBackoff.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// QueueSize bounds the events waiting for delivery; beyond it the oldest are dropped.
	QueueSize int
	// QueueBytes bounds the size of the events waiting for delivery, as QueueSize their number.
	QueueBytes int64
}

// raw is an endpoint as written in the operator configuration (YAML or JSON).
type raw struct {
	Name           string   `json:"name"`
	URL            string   `json:"url"`
	Timeout        string   `json:"timeout"`
	CAFile         string   `json:"caFile"`
	FailurePolicy  string   `json:"failurePolicy"`
	Kinds          []string `json:"kinds"`
	MaxAttempts    *int     `json:"maxAttempts"`
	InitialBackoff string   `json:"initialBackoff"`
	MaxBackoff     string   `json:"maxBackoff"`
	QueueSize      *int     `json:"queueSize"`
	QueueBytes     sizeText `json:"queueBytes"`
}

// sizeText is a size as written: a number (bytes) or a string with a unit.
type sizeText string

func (t *sizeText) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = sizeText(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("queueBytes: want a size like 64 MiB or a number of bytes")
	}
	*t = sizeText(n.String())
	return nil
}

var nameFormat = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Validators reads kubernetes.operator.extension.validators from the operator configuration.
// Errors name the option, the endpoint and the field, and say what is allowed.
func Validators(conf map[string]string) ([]Validator, error) {
	key := options.ExtensionValidators.Key
	rs, hosts, err := parse(conf, key)
	if err != nil {
		return nil, err
	}
	var out []Validator
	for i, r := range rs {
		at := fmt.Sprintf("%s[%d]", key, i)
		c, err := common(at, r, hosts, DefaultValidatorTimeout)
		if err != nil {
			return nil, err
		}
		if c.Timeout > MaxValidatorTimeout {
			return nil, fmt.Errorf("%s.timeout: %s is longer than %s, the most a validator may take within the admission webhook's 5 s", at, c.Timeout, MaxValidatorTimeout)
		}
		v := Validator{Common: c, FailurePolicy: Fail, Kinds: allKinds}
		switch {
		case r.FailurePolicy == "":
		case strings.EqualFold(r.FailurePolicy, string(Fail)):
			v.FailurePolicy = Fail
		case strings.EqualFold(r.FailurePolicy, string(Ignore)):
			v.FailurePolicy = Ignore
		default:
			return nil, fmt.Errorf("%s.failurePolicy: %q is not Fail or Ignore", at, r.FailurePolicy)
		}
		if len(r.Kinds) > 0 {
			v.Kinds = nil
			for _, k := range r.Kinds {
				if !contains(allKinds, k) {
					return nil, fmt.Errorf("%s.kinds: %q is not one of %s", at, k, strings.Join(allKinds, ", "))
				}
				v.Kinds = append(v.Kinds, k)
			}
		}
		for _, f := range []struct {
			name string
			set  bool
		}{{"maxAttempts", r.MaxAttempts != nil}, {"initialBackoff", r.InitialBackoff != ""}, {"maxBackoff", r.MaxBackoff != ""}, {"queueSize", r.QueueSize != nil}, {"queueBytes", r.QueueBytes != ""}} {
			if f.set {
				return nil, fmt.Errorf("%s.%s: a listener's setting, not a validator's", at, f.name)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// Listeners reads kubernetes.operator.extension.listeners from the operator configuration.
func Listeners(conf map[string]string) ([]Listener, error) {
	key := options.ExtensionListeners.Key
	rs, hosts, err := parse(conf, key)
	if err != nil {
		return nil, err
	}
	var out []Listener
	for i, r := range rs {
		at := fmt.Sprintf("%s[%d]", key, i)
		c, err := common(at, r, hosts, DefaultListenerTimeout)
		if err != nil {
			return nil, err
		}
		if r.FailurePolicy != "" || len(r.Kinds) > 0 {
			return nil, fmt.Errorf("%s: failurePolicy and kinds are a validator's settings, not a listener's", at)
		}
		l := Listener{Common: c, MaxAttempts: DefaultMaxAttempts, InitialBackoff: DefaultInitialBackoff,
			MaxBackoff: DefaultMaxBackoff, QueueSize: DefaultQueueSize, QueueBytes: DefaultQueueBytes}
		if err := l.setQueue(at, r); err != nil {
			return nil, err
		}
		if err := l.setBackoff(at, r); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// setQueue sets the listener's attempts and queue bounds given in r, each checked against its
// allowed range.
func (l *Listener) setQueue(at string, r raw) error {
	if r.MaxAttempts != nil {
		if *r.MaxAttempts < 1 || *r.MaxAttempts > 100 {
			return fmt.Errorf("%s.maxAttempts: %d is not from 1 to 100", at, *r.MaxAttempts)
		}
		l.MaxAttempts = *r.MaxAttempts
	}
	if r.QueueSize != nil {
		if *r.QueueSize < 1 || *r.QueueSize > maxQueueSize {
			return fmt.Errorf("%s.queueSize: %d is not from 1 to %d", at, *r.QueueSize, maxQueueSize)
		}
		l.QueueSize = *r.QueueSize
	}
	if r.QueueBytes != "" {
		n, err := parseBytes(string(r.QueueBytes))
		if err != nil || n < minQueueBytes || n > maxQueueBytes {
			return fmt.Errorf("%s.queueBytes: %q is not a size from 64 KiB to 4 GiB (e.g. 64 MiB, 512 KiB, 1048576)", at, r.QueueBytes)
		}
		l.QueueBytes = n
	}
	return nil
}

// setBackoff sets the listener's retry backoffs given in r: positive durations, the maximum not
// shorter than the initial one.
func (l *Listener) setBackoff(at string, r raw) error {
	for _, d := range []struct {
		name string
		raw  string
		dst  *time.Duration
	}{{"initialBackoff", r.InitialBackoff, &l.InitialBackoff}, {"maxBackoff", r.MaxBackoff, &l.MaxBackoff}} {
		if d.raw == "" {
			continue
		}
		v, err := options.ParseDuration(d.raw)
		if err != nil || v <= 0 {
			return fmt.Errorf("%s.%s: %q is not a positive duration (e.g. 500 ms, 2 s)", at, d.name, d.raw)
		}
		*d.dst = v
	}
	if l.MaxBackoff < l.InitialBackoff {
		return fmt.Errorf("%s.maxBackoff: %s is shorter than initialBackoff %s", at, l.MaxBackoff, l.InitialBackoff)
	}
	return nil
}

// Check reports the first error of the extension options in conf (nil when they are valid or
// unset), so a bad operator configuration is refused as a whole.
func Check(conf map[string]string) error {
	if _, err := Validators(conf); err != nil {
		return err
	}
	_, err := Listeners(conf)
	return err
}

func parse(conf map[string]string, key string) ([]raw, []string, error) {
	var hosts []string
	for _, h := range strings.Split(options.ExtensionAllowedHosts.Get(conf), ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			hosts = append(hosts, h)
		}
	}
	text := strings.TrimSpace(conf[key])
	if text == "" {
		return nil, hosts, nil
	}
	var rs []raw
	if err := yaml.UnmarshalStrict([]byte(text), &rs); err != nil {
		return nil, nil, fmt.Errorf("%s: want a YAML or JSON list of endpoints (name, url, ...): %w", key, err)
	}
	seen := map[string]bool{}
	for i, r := range rs {
		if !nameFormat.MatchString(r.Name) {
			return nil, nil, fmt.Errorf("%s[%d].name: %q is not a name (lowercase letters, digits and '-', at most 63 characters)", key, i, r.Name)
		}
		if seen[r.Name] {
			return nil, nil, fmt.Errorf("%s[%d].name: %q is given twice", key, i, r.Name)
		}
		seen[r.Name] = true
	}
	return rs, hosts, nil
}

func common(at string, r raw, hosts []string, defaultTimeout time.Duration) (Common, error) {
	c := Common{Name: r.Name, Timeout: defaultTimeout, CAFile: strings.TrimSpace(r.CAFile)}
	u, err := url.Parse(strings.TrimSpace(r.URL))
	if err != nil || u.Host == "" {
		return Common{}, fmt.Errorf("%s.url: %q is not an absolute http(s) URL", at, r.URL)
	}
	if u.User != nil {
		return Common{}, fmt.Errorf("%s.url: credentials in the URL are not allowed (they would be logged)", at)
	}
	host := strings.ToLower(u.Hostname())
	switch u.Scheme {
	case "https":
		if len(hosts) > 0 && !hostAllowed(hosts, host) {
			return Common{}, fmt.Errorf("%s.url: host %q is not in %s (%s)", at, host, options.ExtensionAllowedHosts.Key, strings.Join(hosts, ", "))
		}
	case "http":
		if !hostAllowed(hosts, host) {
			return Common{}, fmt.Errorf("%s.url: plain http only to the hosts %s lists, and %q is not one of them; use https", at, options.ExtensionAllowedHosts.Key, host)
		}
		if c.CAFile != "" {
			return Common{}, fmt.Errorf("%s.caFile: set for a plain http URL; use https", at)
		}
	default:
		return Common{}, fmt.Errorf("%s.url: scheme %q is not https or http", at, u.Scheme)
	}
	c.URL = u
	if r.Timeout != "" {
		d, err := options.ParseDuration(r.Timeout)
		if err != nil || d <= 0 {
			return Common{}, fmt.Errorf("%s.timeout: %q is not a positive duration (e.g. 500 ms, 2 s)", at, r.Timeout)
		}
		c.Timeout = d
	}
	if c.CAFile != "" {
		if _, err := c.tlsConfig(); err != nil {
			return Common{}, fmt.Errorf("%s.caFile: %w", at, err)
		}
	}
	return c, nil
}

// hostAllowed: host is listed, or a listed "*.suffix" matches it.
func hostAllowed(hosts []string, host string) bool {
	for _, h := range hosts {
		if suffix, ok := strings.CutPrefix(h, "*"); ok && strings.HasSuffix(host, suffix) || h == host {
			return true
		}
	}
	return false
}

func (c Common) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", c.CAFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// MaxResponseBytes bounds what is read of one answer of an endpoint. A validator's answer is a
// few field errors and a listener's is ignored unless it is an error; whoever reads the body (the
// validator, or the CloudEvents SDK, which reads an error answer whole into its error) gets
// ErrResponseTooLarge past it instead of reading on until the timeout.
const MaxResponseBytes = 1 << 20

// ErrResponseTooLarge is the read error of an answer longer than MaxResponseBytes.
var ErrResponseTooLarge = errors.New("answer too large")

// Client builds the HTTP client of the endpoint: its CA, no redirects, and its timeout per call.
func (c Common) Client() (*http.Client, error) {
	tlsConfig, err := c.tlsConfig()
	if err != nil {
		return nil, fmt.Errorf("endpoint %s: %w", c.Name, err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	return &http.Client{
		Transport: boundedAnswers{next: transport, endpoint: c.Name},
		Timeout:   c.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, nil
}

// boundedAnswers hands out answers whose bodies end with ErrResponseTooLarge past
// MaxResponseBytes.
type boundedAnswers struct {
	next     http.RoundTripper
	endpoint string
}

func (b boundedAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &boundedBody{body: resp.Body, left: MaxResponseBytes, endpoint: b.endpoint}
	return resp, nil
}

// boundedBody reads at most left bytes of body; one more is an error, not a silent cut, so a
// reader never takes a truncated answer for a whole one.
type boundedBody struct {
	body     io.ReadCloser
	left     int64
	endpoint string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.body.Read(one[:]); n == 0 {
			return 0, err // io.EOF: the answer ended at the limit
		}
		return 0, fmt.Errorf("endpoint %s answered more than %d bytes: %w", b.endpoint, MaxResponseBytes, ErrResponseTooLarge)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// byteUnits are the units of a size, as Flink's MemorySize reads them: binary multiples.
var byteUnits = map[string]int64{"": 1, "b": 1, "bytes": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}

var sizeFormat = regexp.MustCompile(`^([0-9]{1,12})\s*([a-zA-Z]*)$`)

// parseBytes reads a size: a number of bytes, or a number and a unit (64 MiB, 512kb).
func parseBytes(s string) (int64, error) {
	m := sizeFormat.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	unit, ok := byteUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q", s, m[2])
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, err
	}
	return n * unit, nil
}
