package flink_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/resttls"
	"github.com/flink-operator/flink-operator/test/flinkcluster"
	"github.com/flink-operator/flink-operator/test/pki"
)

// TestRealFlinkRESTSSL runs a JobManager with REST SSL and mutual TLS on
// (security.ssl.rest.enabled, security.ssl.rest.authentication-enabled), its keystore and
// truststore laid out as upstream's basic-secure example has cert-manager make them, and
// talks to it through the clients the reconcilers use (clients.Factory): https is
// chosen from the configuration, the JobManager's certificate is checked against the
// configured trust and the cluster's Service names, and the operator's client certificate is
// sent.
func TestRealFlinkRESTSSL(t *testing.T) {
	for _, version := range flinkcluster.Versions(t) {
		t.Run(version, func(t *testing.T) {
			dist := flinkcluster.DistFor(t, version)
			testRealFlinkRESTSSL(t, dist)
		})
	}
}

func testRealFlinkRESTSSL(t *testing.T, dist flinkcluster.Dist) {
	const (
		name, namespace = "basic-secure", "flink"
		storePassword   = "password1234"
	)
	ca := pki.NewCA(t, "FlinkCA")
	// As upstream's example: a certificate for the namespace's Services, not for the address
	// the operator dials here (127.0.0.1, as in pod-ip mode).
	jmCert := ca.Issue(t, "FlinkDeployment", "*.flink.svc", "*.svc.cluster.local", name+"-rest")
	operatorCert := ca.Issue(t, "FlinkOperator", "*.flink.svc")

	// The cluster's secret, as mounted into the JobManager and, at the same path, the operator.
	certDir := t.TempDir()
	keystore := pki.Write(t, filepath.Join(certDir, "keystore.jks"), jmCert.KeystoreJKS(t, storePassword))
	truststore := pki.Write(t, filepath.Join(certDir, "truststore.jks"), ca.TruststoreJKS(t, storePassword))
	pki.Write(t, filepath.Join(certDir, "ca.crt"), pki.CertPEM(ca.Cert))
	// The operator's own secret (upstream's OPERATOR_KEYSTORE_PATH / _PASSWORD).
	operatorDir := t.TempDir()
	operatorKeystore := pki.Write(t, filepath.Join(operatorDir, "keystore.p12"), operatorCert.KeystorePKCS12(t, storePassword))

	sslConf := map[string]string{
		"security.ssl.rest.enabled":                "true",
		"security.ssl.rest.authentication-enabled": "true",
		"security.ssl.rest.keystore":               keystore,
		"security.ssl.rest.keystore-password":      storePassword,
		"security.ssl.rest.key-password":           storePassword,
		"security.ssl.rest.truststore":             truststore,
		"security.ssl.rest.truststore-password":    storePassword,
	}
	// The harness polls with the operator's certificate and Flink's default cipher suites
	// (1.x: TLS_RSA_WITH_AES_128_CBC_SHA, 2.x: ECDHE_RSA with AES-GCM).
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	cluster := flinkcluster.StartSession(t, dist, flinkcluster.Options{Config: sslConf,
		RESTTLS: &tls.Config{RootCAs: roots, ServerName: name + "-rest", Certificates: []tls.Certificate{operatorCert.TLS()},
			MinVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}})
	restURL, err := url.Parse(cluster.RESTURL)
	require.NoError(t, err)
	require.Equal(t, "https", restURL.Scheme)

	// The resource's effective configuration, as the reconcilers compute it; the URL template
	// is http and reaches the test's loopback JobManager.
	conf := flinkconf.Config{"rest.port": restURL.Port()}
	for k, v := range sslConf {
		conf[k] = v
	}
	flinkVersion := flinkv1beta1.FlinkVersion("v" + strings.Join(strings.SplitN(dist.Version, ".", 3)[:2], "_"))
	factory := func(s resttls.Settings) *clients.Factory {
		return &clients.Factory{URLTemplate: "http://127.0.0.1:{{port}}", Timeout: 30 * time.Second, TLS: s}
	}
	ctx := context.Background()

	compatible := resttls.Settings{TruststoreDir: certDir, Keystore: operatorKeystore, StorePassword: storePassword}
	for desc, s := range map[string]resttls.Settings{
		"upstream's layout: the cluster's truststore below --flink-rest-truststore-dir, OPERATOR_KEYSTORE_PATH": compatible,
		"an operator CA bundle and PEM client certificate": {
			CAFile:         filepath.Join(certDir, "ca.crt"),
			ClientCertFile: pki.Write(t, filepath.Join(operatorDir, "tls.crt"), pki.CertPEM(operatorCert.Cert)),
			ClientKeyFile:  pki.Write(t, filepath.Join(operatorDir, "tls.key"), operatorCert.KeyPEM(t)),
		},
	} {
		t.Run(desc, func(t *testing.T) {
			require.NoError(t, s.Check())
			c, err := factory(s).For(ctx, namespace, name, flinkVersion, conf)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(c.URL(), "https://127.0.0.1:"), c.URL())
			cfg, err := c.Config(ctx)
			require.NoError(t, err)
			assert.Equal(t, dist.Version, cfg.FlinkVersion)
			o, err := c.Overview(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, o.TaskManagers)
		})
	}

	t.Run("no trust configured: a clear error naming the options", func(t *testing.T) {
		_, err := factory(resttls.Settings{Keystore: operatorKeystore, StorePassword: storePassword}).For(ctx, namespace, name, flinkVersion, conf)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "security.ssl.rest.enabled is on but the operator trusts no CA for JobManagers")
		assert.Contains(t, err.Error(), "--flink-rest-ca-file")
		assert.NotContains(t, err.Error(), storePassword)
	})

	t.Run("the wrong CA: verification fails", func(t *testing.T) {
		other := pki.NewCA(t, "NotFlinkCA")
		s := compatible
		s.TruststoreDir = ""
		s.CAFile = pki.Write(t, filepath.Join(t.TempDir(), "other.crt"), pki.CertPEM(other.Cert))
		c, err := factory(s).For(ctx, namespace, name, flinkVersion, conf)
		require.NoError(t, err)
		_, err = c.Config(ctx)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "certificate signed by unknown authority")
	})

	t.Run("another cluster's names: verification fails", func(t *testing.T) {
		c, err := factory(compatible).For(ctx, "team-b", "other", flinkVersion, conf)
		require.NoError(t, err)
		_, err = c.Config(ctx)
		assert.ErrorIs(t, err, resttls.ErrName)
	})

	t.Run("mutual TLS without the operator's certificate", func(t *testing.T) {
		s := compatible
		s.Keystore = ""
		_, err := factory(s).For(ctx, namespace, name, flinkVersion, conf)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "security.ssl.rest.authentication-enabled is on but the operator has no client certificate")
	})

	t.Run("a client certificate the JobManager does not trust is refused", func(t *testing.T) {
		stranger := pki.NewCA(t, "Stranger").Issue(t, "FlinkOperator")
		s := compatible
		s.Keystore = pki.Write(t, filepath.Join(t.TempDir(), "keystore.jks"), stranger.KeystoreJKS(t, storePassword))
		c, err := factory(s).For(ctx, namespace, name, flinkVersion, conf)
		require.NoError(t, err)
		_, err = c.Config(ctx)
		require.Error(t, err)
	})

	t.Run("plain http is not what this cluster speaks", func(t *testing.T) {
		plain := flinkconf.Config{"rest.port": restURL.Port()}
		c, err := factory(compatible).For(ctx, namespace, name, flinkVersion, plain)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(c.URL(), "http://"), c.URL())
		_, err = c.Config(ctx)
		require.Error(t, err, fmt.Sprintf("Flink %s answered plain http on its SSL port", dist.Version))
	})
}

// TestRealFlinkDeprecatedSSLSwitch: upstream's basic-secure example turns SSL on with the
// deprecated security.ssl.enabled and the generic security.ssl.keystore keys. Flink 1.x then
// serves its REST endpoint over https; Flink 2 no longer reads the switch and serves plain
// http. The operator's choice of scheme follows each.
func TestRealFlinkDeprecatedSSLSwitch(t *testing.T) {
	for _, version := range flinkcluster.Versions(t) {
		t.Run(version, func(t *testing.T) {
			dist := flinkcluster.DistFor(t, version)
			const storePassword = "password1234"
			ca := pki.NewCA(t, "FlinkCA")
			certDir := t.TempDir()
			conf := map[string]string{
				"security.ssl.enabled": "true",
				// Only REST here: internal SSL would need certificates for 127.0.0.1.
				"security.ssl.internal.enabled":    "false",
				"security.ssl.keystore":            pki.Write(t, filepath.Join(certDir, "keystore.jks"), ca.Issue(t, "FlinkDeployment", "*.flink.svc").KeystoreJKS(t, storePassword)),
				"security.ssl.keystore-password":   storePassword,
				"security.ssl.key-password":        storePassword,
				"security.ssl.truststore":          pki.Write(t, filepath.Join(certDir, "truststore.jks"), ca.TruststoreJKS(t, storePassword)),
				"security.ssl.truststore-password": storePassword,
			}
			flink2 := dist.AtLeast(2, 0)
			opts := flinkcluster.Options{Config: conf}
			if !flink2 {
				roots := x509.NewCertPool()
				roots.AddCert(ca.Cert)
				opts.RESTTLS = &tls.Config{RootCAs: roots, ServerName: "basic-secure-rest.flink.svc", MinVersion: tls.VersionTLS12,
					CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA}}
			}
			cluster := flinkcluster.StartSession(t, dist, opts)
			restURL, err := url.Parse(cluster.RESTURL)
			require.NoError(t, err)

			effective := flinkconf.Config{"rest.port": restURL.Port()}
			for k, v := range conf {
				effective[k] = v
			}
			factory := &clients.Factory{URLTemplate: "http://127.0.0.1:{{port}}", Timeout: 30 * time.Second,
				TLS: resttls.Settings{TruststoreDir: certDir}}
			flinkVersion := flinkv1beta1.FlinkVersion("v" + strings.Join(strings.SplitN(dist.Version, ".", 3)[:2], "_"))
			c, err := factory.For(context.Background(), "flink", "basic-secure", flinkVersion, effective)
			require.NoError(t, err)
			want := "https"
			if flink2 {
				want = "http"
			}
			assert.Equal(t, want+"://127.0.0.1:"+restURL.Port(), c.URL())
			// The call succeeds only if Flink serves the scheme chosen (the harness's own
			// polling, http or https as set above, proved the same while starting it).
			cfg, err := c.Config(context.Background())
			require.NoError(t, err)
			assert.Equal(t, dist.Version, cfg.FlinkVersion)
		})
	}
}
