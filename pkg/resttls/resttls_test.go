package resttls_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/resttls"
	"github.com/flink-operator/flink-operator/test/pki"
)

const password = "s3cr3t-store-pw"

func TestEnabled(t *testing.T) {
	tests := []struct {
		name    string
		conf    map[string]string
		flink2  bool
		want    bool
		wantErr string
	}{
		{name: "unset", conf: map[string]string{}, want: false},
		{name: "rest on", conf: map[string]string{"security.ssl.rest.enabled": "TRUE"}, want: true},
		{name: "rest off wins over the deprecated switch", conf: map[string]string{"security.ssl.rest.enabled": "false", "security.ssl.enabled": "true"}, want: false},
		{name: "deprecated switch on Flink 1.x", conf: map[string]string{"security.ssl.enabled": "true"}, want: true},
		{name: "deprecated switch is ignored by Flink 2", conf: map[string]string{"security.ssl.enabled": "true"}, flink2: true, want: false},
		{name: "rest on, Flink 2", conf: map[string]string{"security.ssl.rest.enabled": "true"}, flink2: true, want: true},
		{name: "not a boolean", conf: map[string]string{"security.ssl.rest.enabled": "yes"}, wantErr: "security.ssl.rest.enabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resttls.Enabled(tt.conf, tt.flink2)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// server is an https server with a certificate from ca for names; clientCAs, when set,
// makes it require a client certificate they sign.
func server(t *testing.T, leaf *pki.Leaf, clientCAs *x509.CertPool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf.TLS()}, MinVersion: tls.VersionTLS12}
	if clientCAs != nil {
		srv.TLS.ClientCAs = clientCAs
		srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// get does one request with cfg.
func get(t *testing.T, srv *httptest.Server, cfg *tls.Config) error {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: cfg}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

var restOn = map[string]string{"security.ssl.rest.enabled": "true"}

func with(conf map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range conf {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// clusterNames are the names the operator accepts for cluster "basic" in namespace "flink".
var clusterNames = []string{"127.0.0.1", "basic-rest.flink", "basic-rest.flink.svc", "basic-rest.flink.svc.cluster.local"}

func TestTrust(t *testing.T) {
	ca := pki.NewCA(t, "FlinkCA")
	other := pki.NewCA(t, "SomeoneElse")
	dir := t.TempDir()
	caFile := pki.Write(t, filepath.Join(dir, "ca.crt"), pki.CertPEM(ca.Cert))
	otherCAFile := pki.Write(t, filepath.Join(dir, "other.crt"), pki.CertPEM(other.Cert))
	// Upstream's example: a wildcard for the namespace's Services.
	srv := server(t, ca.Issue(t, "FlinkDeployment", "*.flink.svc", "*.svc.cluster.local"), nil)

	stores := t.TempDir()
	jks := pki.Write(t, filepath.Join(stores, "truststore.jks"), ca.TruststoreJKS(t, password))
	p12 := pki.Write(t, filepath.Join(stores, "truststore.p12"), ca.TruststorePKCS12(t, password))
	keystoreAsTrust := pki.Write(t, filepath.Join(stores, "keystore.jks"), ca.Issue(t, "x").KeystoreJKS(t, password))
	garbage := pki.Write(t, filepath.Join(stores, "truststore.txt"), []byte("not a store"))
	outside := pki.Write(t, filepath.Join(t.TempDir(), "truststore.jks"), ca.TruststoreJKS(t, password))
	require.NoError(t, os.Symlink(outside, filepath.Join(stores, "link.jks")))
	require.NoError(t, os.Mkdir(filepath.Join(stores, "sub"), 0o755))

	tests := []struct {
		name     string
		settings resttls.Settings
		conf     map[string]string
		names    []string
		// configErr is a substring of Config's error; dialErr one of the handshake's.
		configErr, dialErr string
	}{
		{name: "no trust configured", conf: restOn,
			configErr: "the operator trusts no CA for JobManagers: give it one with --flink-rest-ca-file"},
		{name: "the cluster's truststore is not read without a directory", conf: with(restOn, "security.ssl.rest.truststore", jks, "security.ssl.rest.truststore-password", password),
			configErr: "--flink-rest-truststore-dir"},
		{name: "operator CA file", settings: resttls.Settings{CAFile: caFile}, conf: restOn},
		{name: "operator CA file, wrong CA", settings: resttls.Settings{CAFile: otherCAFile}, conf: restOn,
			dialErr: "certificate signed by unknown authority"},
		{name: "wrong CA fails also without the name check", settings: resttls.Settings{CAFile: otherCAFile},
			conf: with(restOn, "security.ssl.rest.verify-hostname", "false"), dialErr: "certificate signed by unknown authority"},
		{name: "upstream's operator truststore (JKS)", settings: resttls.Settings{Truststore: jks, StorePassword: password}, conf: restOn},
		{name: "upstream's operator truststore (PKCS12)", settings: resttls.Settings{Truststore: p12, StorePassword: password}, conf: restOn},
		{name: "operator truststore, bad password", settings: resttls.Settings{Truststore: jks, StorePassword: "wrong"}, conf: restOn,
			configErr: "OPERATOR_TRUSTSTORE_PATH"},
		{name: "cluster truststore below the directory (JKS)", settings: resttls.Settings{TruststoreDir: stores},
			conf: with(restOn, "security.ssl.rest.truststore", jks, "security.ssl.rest.truststore-password", password)},
		{name: "cluster truststore below the directory (PKCS12, deprecated keys)", settings: resttls.Settings{TruststoreDir: stores},
			conf: with(restOn, "security.ssl.truststore", p12, "security.ssl.truststore-password", password)},
		{name: "cluster keystore used as truststore", settings: resttls.Settings{TruststoreDir: stores},
			conf: with(restOn, "security.ssl.rest.truststore", keystoreAsTrust, "security.ssl.rest.truststore-password", password)},
		{name: "cluster truststore, bad password", settings: resttls.Settings{TruststoreDir: stores},
			conf:      with(restOn, "security.ssl.rest.truststore", jks, "security.ssl.rest.truststore-password", "wrong-pw"),
			configErr: "security.ssl.rest.truststore " + jks + ": JKS (wrong password?)"},
		{name: "cluster truststore, bad password (PKCS12)", settings: resttls.Settings{TruststoreDir: stores},
			conf:      with(restOn, "security.ssl.rest.truststore", p12, "security.ssl.rest.truststore-password", "wrong-pw"),
			configErr: "PKCS12"},
		{name: "cluster truststore of the wrong type", settings: resttls.Settings{TruststoreDir: stores},
			conf:      with(restOn, "security.ssl.rest.truststore", garbage, "security.ssl.rest.truststore-password", password),
			configErr: "not a JKS, PKCS12 or PEM store"},
		{name: "cluster truststore outside the directory", settings: resttls.Settings{TruststoreDir: stores},
			conf:      with(restOn, "security.ssl.rest.truststore", outside, "security.ssl.rest.truststore-password", password),
			configErr: "only below"},
		{name: "the service account token", settings: resttls.Settings{TruststoreDir: stores},
			conf:      with(restOn, "security.ssl.rest.truststore", "/var/run/secrets/kubernetes.io/serviceaccount/token"),
			configErr: "only below"},
		{name: "dot-dot out of the directory", settings: resttls.Settings{TruststoreDir: stores},
			conf:      with(restOn, "security.ssl.rest.truststore", stores+"/sub/../../"+filepath.Base(filepath.Dir(outside))+"/truststore.jks"),
			configErr: "only below"},
		{name: "symlink out of the directory", settings: resttls.Settings{TruststoreDir: stores},
			conf:      with(restOn, "security.ssl.rest.truststore", filepath.Join(stores, "link.jks"), "security.ssl.rest.truststore-password", password),
			configErr: "escapes"},
		{name: "relative path", settings: resttls.Settings{TruststoreDir: stores},
			conf: with(restOn, "security.ssl.rest.truststore", "truststore.jks"), configErr: "absolute path"},
		{name: "a directory", settings: resttls.Settings{TruststoreDir: stores},
			conf: with(restOn, "security.ssl.rest.truststore", filepath.Join(stores, "sub")), configErr: "not a regular file"},
		{name: "certificate not for this cluster", settings: resttls.Settings{CAFile: caFile}, conf: restOn,
			names: []string{"other-rest.team-b", "other-rest.team-b.svc"}, dialErr: resttls.ErrName.Error()},
		{name: "name check off: the chain is enough", settings: resttls.Settings{CAFile: caFile},
			conf: with(restOn, "security.ssl.verify-hostname", "false"), names: []string{"other-rest.team-b"}},
		{name: "name check off (Flink 2 key)", settings: resttls.Settings{CAFile: caFile},
			conf: with(restOn, "security.ssl.rest.verify-hostname", "false"), names: []string{"other-rest.team-b"}},
		{name: "mutual TLS asked but no client certificate", settings: resttls.Settings{CAFile: caFile},
			conf: with(restOn, "security.ssl.rest.authentication-enabled", "true"), configErr: "--flink-rest-client-cert-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names := tt.names
			if names == nil {
				names = clusterNames
			}
			cfg, err := tt.settings.Config(tt.conf, names, true)
			if tt.configErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.configErr)
				assert.NotContains(t, err.Error(), password, "a store password must not reach errors")
				assert.NotContains(t, err.Error(), "wrong-pw", "a store password must not reach errors")
				return
			}
			require.NoError(t, err)
			assert.Nil(t, cfg.RootCAs, "only VerifyConnection decides")
			err = get(t, srv, cfg)
			if tt.dialErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.dialErr)
				return
			}
			require.NoError(t, err)
		})
	}
}

func TestMutualTLS(t *testing.T) {
	ca := pki.NewCA(t, "FlinkCA")
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(ca.Cert)
	srv := server(t, ca.Issue(t, "jm", "127.0.0.1"), clientCAs)
	dir := t.TempDir()
	caFile := pki.Write(t, filepath.Join(dir, "ca.crt"), pki.CertPEM(ca.Cert))
	operator := ca.Issue(t, "FlinkOperator")
	stranger := pki.NewCA(t, "Stranger").Issue(t, "FlinkOperator")
	certFile := pki.Write(t, filepath.Join(dir, "tls.crt"), pki.CertPEM(operator.Cert))
	keyFile := pki.Write(t, filepath.Join(dir, "tls.key"), operator.KeyPEM(t))
	jks := pki.Write(t, filepath.Join(dir, "keystore.jks"), operator.KeystoreJKS(t, password))
	p12 := pki.Write(t, filepath.Join(dir, "keystore.p12"), operator.KeystorePKCS12(t, password))
	strangerJKS := pki.Write(t, filepath.Join(dir, "stranger.jks"), stranger.KeystoreJKS(t, password))
	mtls := with(restOn, "security.ssl.rest.authentication-enabled", "true")

	for name, s := range map[string]resttls.Settings{
		"PEM files":                    {CAFile: caFile, ClientCertFile: certFile, ClientKeyFile: keyFile},
		"upstream's keystore (JKS)":    {CAFile: caFile, Keystore: jks, StorePassword: password},
		"upstream's keystore (PKCS12)": {CAFile: caFile, Keystore: p12, StorePassword: password},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, s.Check())
			cfg, err := s.Config(mtls, clusterNames, true)
			require.NoError(t, err)
			require.NoError(t, get(t, srv, cfg))
		})
	}
	t.Run("a certificate the JobManager does not trust", func(t *testing.T) {
		cfg, err := resttls.Settings{CAFile: caFile, Keystore: strangerJKS, StorePassword: password}.Config(mtls, clusterNames, true)
		require.NoError(t, err)
		require.Error(t, get(t, srv, cfg))
	})
	t.Run("without authentication-enabled no certificate is sent", func(t *testing.T) {
		cfg, err := resttls.Settings{CAFile: caFile, Keystore: jks, StorePassword: password}.Config(restOn, clusterNames, true)
		require.NoError(t, err)
		require.Error(t, get(t, srv, cfg))
	})
}

func TestCheck(t *testing.T) {
	ca := pki.NewCA(t, "FlinkCA")
	dir := t.TempDir()
	jks := pki.Write(t, filepath.Join(dir, "keystore.jks"), ca.Issue(t, "op").KeystoreJKS(t, password))
	trust := pki.Write(t, filepath.Join(dir, "truststore.jks"), ca.TruststoreJKS(t, password))
	notDir := pki.Write(t, filepath.Join(dir, "file"), []byte("x"))
	tests := []struct {
		name     string
		settings resttls.Settings
		wantErr  string
	}{
		{name: "nothing", settings: resttls.Settings{}},
		{name: "missing CA file", settings: resttls.Settings{CAFile: filepath.Join(dir, "missing.crt")}, wantErr: "--flink-rest-ca-file"},
		{name: "CA file without certificates", settings: resttls.Settings{CAFile: notDir}, wantErr: "no PEM certificate"},
		{name: "truststore with a bad password", settings: resttls.Settings{Truststore: trust, StorePassword: "nope-nope"}, wantErr: "OPERATOR_TRUSTSTORE_PATH"},
		{name: "keystore with a bad password", settings: resttls.Settings{Keystore: jks, StorePassword: "nope-nope"}, wantErr: "OPERATOR_KEYSTORE_PATH"},
		{name: "a truststore is no keystore", settings: resttls.Settings{Keystore: trust, StorePassword: password}, wantErr: "no key entry"},
		{name: "cert without key", settings: resttls.Settings{ClientCertFile: notDir}, wantErr: "go together"},
		{name: "directory is a file", settings: resttls.Settings{TruststoreDir: notDir}, wantErr: "not a directory"},
		{name: "good stores", settings: resttls.Settings{Truststore: trust, Keystore: jks, StorePassword: password, TruststoreDir: dir}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.settings.Check()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.False(t, strings.Contains(err.Error(), "nope-nope"), "password in %q", err)
		})
	}
}

func TestWithEnv(t *testing.T) {
	env := map[string]string{"OPERATOR_TRUSTSTORE_PATH": "/certs/truststore.jks", "OPERATOR_KEYSTORE_PATH": "/certs/keystore.jks",
		"OPERATOR_KEYSTORE_PASSWORD": "pw"}
	s := resttls.Settings{Truststore: "/flag/truststore.p12"}.WithEnv(func(k string) string { return env[k] })
	assert.Equal(t, resttls.Settings{Truststore: "/flag/truststore.p12", Keystore: "/certs/keystore.jks", StorePassword: "pw"}, s)
}

func TestErrNameIsWrapped(t *testing.T) {
	ca := pki.NewCA(t, "FlinkCA")
	srv := server(t, ca.Issue(t, "jm", "a-rest.ns.svc"), nil)
	caFile := pki.Write(t, filepath.Join(t.TempDir(), "ca.crt"), pki.CertPEM(ca.Cert))
	cfg, err := resttls.Settings{CAFile: caFile}.Config(restOn, []string{"b-rest.ns.svc"}, true)
	require.NoError(t, err)
	err = get(t, srv, cfg)
	assert.True(t, errors.Is(err, resttls.ErrName), "%v", err)
}

// TestCipherSuites: a Flink 1.x REST endpoint speaks only its security.ssl.algorithms over
// TLS 1.2, by default an RSA key exchange suite Go no longer offers on its own.
func TestCipherSuites(t *testing.T) {
	ca := pki.NewCA(t, "FlinkCA")
	caFile := pki.Write(t, filepath.Join(t.TempDir(), "ca.crt"), pki.CertPEM(ca.Cert))
	flink1 := func(suites ...uint16) *httptest.Server {
		srv := server(t, ca.Issue(t, "jm", "127.0.0.1"), nil)
		srv.TLS.MaxVersion = tls.VersionTLS12 // security.ssl.protocol: TLSv1.2
		srv.TLS.CipherSuites = suites
		return srv
	}
	s := resttls.Settings{CAFile: caFile}

	t.Run("Flink 1.x default", func(t *testing.T) {
		srv := flink1(tls.TLS_RSA_WITH_AES_128_CBC_SHA)
		cfg, err := s.Config(restOn, clusterNames, false)
		require.NoError(t, err)
		require.NoError(t, get(t, srv, cfg))
		// Go's own choice (what Flink 2's default needs) finds no common suite.
		cfg, err = s.Config(restOn, clusterNames, true)
		require.NoError(t, err)
		require.Error(t, get(t, srv, cfg))
	})
	t.Run("the cluster's list", func(t *testing.T) {
		srv := flink1(tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)
		cfg, err := s.Config(with(restOn, "security.ssl.algorithms", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_RSA_WITH_AES_128_CBC_SHA"), clusterNames, false)
		require.NoError(t, err)
		require.NoError(t, get(t, srv, cfg))
	})
	for _, bad := range []string{"TLS_RSA_WITH_RC4_128_SHA", "TLS_RSA_WITH_3DES_EDE_CBC_SHA", "SSL_NOT_A_SUITE"} {
		t.Run("refused: "+bad, func(t *testing.T) {
			_, err := s.Config(with(restOn, "security.ssl.algorithms", bad), clusterNames, false)
			assert.ErrorContains(t, err, "security.ssl.algorithms: \""+bad+"\" is not a cipher suite the operator uses")
		})
	}
}
