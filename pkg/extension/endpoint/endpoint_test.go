package endpoint

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/options"
)

func TestEndpointURLPolicy(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	for _, tc := range []struct {
		name, hosts, list, wantErr string
	}{
		{name: "https anywhere when no hosts are listed", list: `[{name: v, url: "https://policy.example.com/validate"}]`},
		{name: "plain http refused unless listed", list: `[{name: v, url: "http://policy.example.com/"}]`,
			wantErr: `kubernetes.operator.extension.validators[0].url: plain http only to the hosts kubernetes.operator.extension.allowed-hosts lists, and "policy.example.com" is not one of them; use https`},
		{name: "plain http to a listed host", hosts: "policy.platform.svc", list: `[{name: v, url: "http://policy.platform.svc:8080/"}]`},
		{name: "a listed suffix", hosts: "*.platform.svc", list: `[{name: v, url: "http://policy.platform.svc/"}]`},
		{name: "https to an unlisted host once hosts are listed", hosts: "policy.platform.svc", list: `[{name: v, url: "https://evil.example.com/"}]`,
			wantErr: `kubernetes.operator.extension.validators[0].url: host "evil.example.com" is not in kubernetes.operator.extension.allowed-hosts (policy.platform.svc)`},
		{name: "other schemes", list: `[{name: v, url: "file:///etc/passwd"}]`, wantErr: `is not an absolute http(s) URL`},
		{name: "credentials in the URL", list: `[{name: v, url: "https://user:pw@policy.example.com/"}]`, wantErr: `credentials in the URL are not allowed`},
		{name: "a timeout beyond the webhook's", list: `[{name: v, url: "https://p.example.com/", timeout: 4 s}]`, wantErr: `is longer than 3s`},
		{name: "an unknown failure policy", list: `[{name: v, url: "https://p.example.com/", failurePolicy: Retry}]`, wantErr: `failurePolicy: "Retry" is not Fail or Ignore`},
		{name: "an unknown kind", list: `[{name: v, url: "https://p.example.com/", kinds: [Pod]}]`, wantErr: `kinds: "Pod" is not one of`},
		{name: "a CA file that is not PEM", list: `[{name: v, url: "https://p.example.com/", caFile: "` + notPEM + `"}]`, wantErr: `holds no PEM certificate`},
		{name: "names given twice", list: `[{name: v, url: "https://a.example.com/"}, {name: v, url: "https://b.example.com/"}]`, wantErr: `"v" is given twice`},
		{name: "an unknown field", list: `[{name: v, url: "https://a.example.com/", retries: 3}]`, wantErr: `unknown field "retries"`},
		{name: "a listener's field", list: `[{name: v, url: "https://a.example.com/", queueSize: 3}]`, wantErr: `queueSize: a listener's setting`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := map[string]string{options.ExtensionValidators.Key: tc.list, options.ExtensionAllowedHosts.Key: tc.hosts}
			vs, err := Validators(conf)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Error(t, Check(conf), "Check refuses what Validators refuses")
				return
			}
			require.NoError(t, err)
			require.Len(t, vs, 1)
			assert.Equal(t, Fail, vs[0].FailurePolicy, "Fail by default")
			assert.Equal(t, DefaultValidatorTimeout, vs[0].Timeout)
		})
	}
}

func TestListenerDefaultsAndBounds(t *testing.T) {
	ls, err := Listeners(map[string]string{options.ExtensionListeners.Key: `- {name: audit, url: "https://audit.example.com/"}`})
	require.NoError(t, err)
	require.Len(t, ls, 1)
	assert.Equal(t, Listener{Common: ls[0].Common, MaxAttempts: 5, InitialBackoff: time.Second, MaxBackoff: 30 * time.Second, QueueSize: 1000, QueueBytes: 64 << 20}, ls[0])
	for list, want := range map[string]string{
		`[{name: a, url: "https://a.example.com/", maxAttempts: 0}]`:                       `maxAttempts: 0 is not from 1 to 100`,
		`[{name: a, url: "https://a.example.com/", queueSize: 0}]`:                         `queueSize: 0 is not from 1 to 100000`,
		`[{name: a, url: "https://a.example.com/", initialBackoff: 2 s, maxBackoff: 1 s}]`: `maxBackoff: 1s is shorter than initialBackoff 2s`,
		`[{name: a, url: "https://a.example.com/", failurePolicy: Ignore}]`:                `a validator's settings`,
		`[{name: A, url: "https://a.example.com/"}]`:                                       `name: "A" is not a name`,
		`{name: a}`: `want a YAML or JSON list of endpoints`,
		`[{name: a, url: "https://a.example.com/", initialBackoff: soon}]`:                      `initialBackoff: "soon" is not a positive duration`,
		`[{name: a, url: "http://a.example.com/"}]`:                                             `plain http only`,
		`[{name: a, url: "https://a.example.com/", timeout: "0 s"}]`:                            `timeout: "0 s" is not a positive duration`,
		`[{name: a, url: "https://a.example.com/", caFile: /does/not/exist, maxAttempts: 100}]`: `read CA bundle`,
	} {
		_, err := Listeners(map[string]string{options.ExtensionListeners.Key: list})
		require.Error(t, err, list)
		assert.Contains(t, err.Error(), want, list)
	}
}

func TestListenerQueueBytes(t *testing.T) {
	for text, want := range map[string]int64{`"64 MiB"`: 64 << 20, `512kb`: 512 << 10, `1048576`: 1 << 20, `"2g"`: 2 << 30} {
		ls, err := Listeners(map[string]string{options.ExtensionListeners.Key: `[{name: a, url: "https://a.example.com/", queueBytes: ` + text + `}]`})
		require.NoError(t, err, text)
		assert.Equal(t, want, ls[0].QueueBytes, text)
	}
	for _, text := range []string{`"1 KiB"`, `"5 GiB"`, `lots`, `"64 MB/s"`, `-1`} {
		_, err := Listeners(map[string]string{options.ExtensionListeners.Key: `[{name: a, url: "https://a.example.com/", queueBytes: ` + text + `}]`})
		require.Error(t, err, text)
		assert.Contains(t, err.Error(), "queueBytes", text)
	}
	_, err := Validators(map[string]string{options.ExtensionValidators.Key: `[{name: a, url: "https://a.example.com/", queueBytes: 1 MiB}]`})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a listener's setting")
}
