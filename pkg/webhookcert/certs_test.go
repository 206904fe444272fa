package webhookcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	testNames = Service{Namespace: "ops", Name: "hooks"}.DNSNames()
	t0        = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// verify checks that the Secret's serving pair is trusted by its CA bundle for the Service's
// name at the given time, as the API server checks it.
func verify(t *testing.T, data map[string][]byte, at time.Time) *x509.Certificate {
	t.Helper()
	return verifyFor(t, data, "hooks.ops.svc", at)
}

func verifyFor(t *testing.T, data map[string][]byte, dnsName string, at time.Time) *x509.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(data[KeyServingCert], data[KeyServingKey])
	require.NoError(t, err, "serving pair")
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(data[KeyCABundle]), "CA bundle")
	_, err = cert.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: roots, CurrentTime: at,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	require.NoError(t, err, "the bundle trusts the serving certificate")
	return cert
}

func mustEnsure(t *testing.T, data map[string][]byte, at time.Time) (map[string][]byte, Reason) {
	t.Helper()
	out, reason, err := Ensure(data, testNames, at, DefaultPolicy)
	require.NoError(t, err)
	return out, reason
}

func TestEnsureIssuesThenKeeps(t *testing.T) {
	data, reason := mustEnsure(t, nil, t0)
	assert.Equal(t, ReasonCAIssued, reason)
	cert := verify(t, data, t0)
	assert.ElementsMatch(t, testNames, cert.DNSNames)
	assert.Equal(t, t0.Add(DefaultPolicy.CertValidity), cert.NotAfter)

	// The next day nothing is due: the same data, no write.
	again, reason := mustEnsure(t, data, t0.Add(24*time.Hour))
	assert.Equal(t, ReasonUpToDate, reason)
	assert.Equal(t, data, again)
}

func TestEnsureRenewsServingCertKeepingCA(t *testing.T) {
	data, _ := mustEnsure(t, nil, t0)
	due := t0.Add(DefaultPolicy.CertValidity - DefaultPolicy.CertRenewBefore)
	renewed, reason := mustEnsure(t, data, due)
	assert.Equal(t, ReasonCertRenewed, reason)
	assert.Equal(t, data[KeyCABundle], renewed[KeyCABundle], "same CA")
	assert.Equal(t, data[KeyCAKey], renewed[KeyCAKey])
	assert.NotEqual(t, data[KeyServingCert], renewed[KeyServingCert])
	cert := verify(t, renewed, due)
	assert.Equal(t, due.Add(DefaultPolicy.CertValidity), cert.NotAfter)
}

func TestEnsureRenewsCAKeepingTheOldInTheBundle(t *testing.T) {
	data, _ := mustEnsure(t, nil, t0)
	oldCA := parseCerts(data[KeyCABundle])[0]
	due := t0.Add(DefaultPolicy.CAValidity - DefaultPolicy.CARenewBefore)
	// The serving certificate was last renewed ten days before the CA is due.
	data, reason := mustEnsure(t, data, due.Add(-10*24*time.Hour))
	require.Equal(t, ReasonCertRenewed, reason)
	renewed, reason := mustEnsure(t, data, due)
	assert.Equal(t, ReasonCARenewed, reason)
	bundle := parseCerts(renewed[KeyCABundle])
	require.Len(t, bundle, 2, "new CA first, the old one until it expires")
	assert.NotEqual(t, oldCA.Raw, bundle[0].Raw)
	assert.Equal(t, oldCA.Raw, bundle[1].Raw)
	cert := verify(t, renewed, due)
	require.NoError(t, cert.CheckSignatureFrom(bundle[0]), "the new CA signs")

	// A replica still serving the certificate the old CA signed stays trusted by the new bundle.
	old := maps.Clone(renewed)
	old[KeyServingCert], old[KeyServingKey] = data[KeyServingCert], data[KeyServingKey]
	verify(t, old, due)

	// Once the old CA has expired it leaves the bundle; nothing else changes.
	renewed, reason = mustEnsure(t, renewed, oldCA.NotAfter.Add(-10*24*time.Hour))
	require.Equal(t, ReasonCertRenewed, reason)
	require.Len(t, parseCerts(renewed[KeyCABundle]), 2, "the old CA is still valid")
	pruned, reason := mustEnsure(t, renewed, oldCA.NotAfter.Add(time.Minute))
	assert.Equal(t, ReasonBundlePruned, reason)
	assert.Len(t, parseCerts(pruned[KeyCABundle]), 1)
	assert.Equal(t, renewed[KeyServingCert], pruned[KeyServingCert])
}

// TestEnsureReplacesWhatItCannotTrust feeds Secrets an attacker or an accident could leave:
// none of their certificates may be served or trusted.
func TestEnsureReplacesWhatItCannotTrust(t *testing.T) {
	good, _ := mustEnsure(t, nil, t0)
	other, _ := mustEnsure(t, nil, t0) // a second, unrelated CA and serving pair
	otherNames, _, err := Ensure(nil, Service{Namespace: "ops", Name: "elsewhere"}.DNSNames(), t0, DefaultPolicy)
	require.NoError(t, err)
	strangerKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	strangerKeyPEM, err := encodeKey(strangerKey)
	require.NoError(t, err)
	with := func(kv ...any) map[string][]byte {
		d := maps.Clone(good)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(d, kv[i].(string))
			} else {
				d[kv[i].(string)] = kv[i+1].([]byte)
			}
		}
		return d
	}
	for _, tc := range []struct {
		name string
		data map[string][]byte
		want Reason
	}{
		{"serving certificate of another CA", with(KeyServingCert, other[KeyServingCert], KeyServingKey, other[KeyServingKey]), ReasonCertIssued},
		{"serving certificate for other names", with(KeyServingCert, otherNames[KeyServingCert], KeyServingKey, otherNames[KeyServingKey],
			KeyCABundle, otherNames[KeyCABundle], KeyCAKey, otherNames[KeyCAKey]), ReasonCertIssued},
		{"serving key of another certificate", with(KeyServingKey, other[KeyServingKey]), ReasonCertIssued},
		{"serving certificate not PEM", with(KeyServingCert, []byte("-----BEGIN CERTIFICATE-----\ngarbage\n")), ReasonCertIssued},
		{"serving certificate missing", with(KeyServingCert, nil), ReasonCertIssued},
		{"CA key of another CA", with(KeyCAKey, other[KeyCAKey]), ReasonCAIssued},
		{"CA key that is no key", with(KeyCAKey, []byte("not a key")), ReasonCAIssued},
		{"CA key missing", with(KeyCAKey, nil), ReasonCAIssued},
		{"CA certificate that is no CA", with(KeyCABundle, good[KeyServingCert], KeyCAKey, good[KeyServingKey]), ReasonCAIssued},
		{"CA bundle garbage", with(KeyCABundle, []byte("garbage")), ReasonCAIssued},
		{"stranger's key as CA key", with(KeyCAKey, strangerKeyPEM), ReasonCAIssued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, reason, err := Ensure(tc.data, testNames, t0.Add(time.Hour), DefaultPolicy)
			require.NoError(t, err)
			assert.Equal(t, tc.want, reason)
			verify(t, out, t0.Add(time.Hour))
			if tc.want == ReasonCertIssued {
				assert.Equal(t, tc.data[KeyCAKey], out[KeyCAKey], "the usable CA is kept")
			} else {
				assert.NotEqual(t, tc.data[KeyCAKey], out[KeyCAKey], "an unusable CA is replaced")
				assert.Len(t, parseCerts(out[KeyCABundle]), 1, "nothing of an unusable CA bundle is trusted")
			}
			assert.NotEqual(t, tc.data[KeyServingCert], out[KeyServingCert], "the serving certificate is not kept")
		})
	}
}

func TestEnsureKeepsOtherKeysAndDoesNotModifyItsInput(t *testing.T) {
	in := map[string][]byte{"note": []byte("kept")}
	out, _ := mustEnsure(t, in, t0)
	assert.Equal(t, []byte("kept"), out["note"])
	assert.Len(t, in, 1, "input untouched")
}

func TestEnsureRefusesBadPolicyAndNoNames(t *testing.T) {
	_, _, err := Ensure(nil, nil, t0, DefaultPolicy)
	assert.ErrorContains(t, err, "no DNS names")
	p := DefaultPolicy
	p.CertRenewBefore = p.CertValidity
	_, _, err = Ensure(nil, testNames, t0, p)
	assert.ErrorContains(t, err, "serving certificate validity")
	p = DefaultPolicy
	p.CAValidity = p.CARenewBefore
	_, _, err = Ensure(nil, testNames, t0, p)
	assert.ErrorContains(t, err, "CA validity")
	p = DefaultPolicy
	p.CertValidity = p.CAValidity
	_, _, err = Ensure(nil, testNames, t0, p)
	assert.ErrorContains(t, err, "must fit in the CA's life")
}

func TestServingKeyIsPKCS8ECDSA(t *testing.T) {
	data, _ := mustEnsure(t, nil, t0)
	block, _ := pem.Decode(data[KeyServingKey])
	require.NotNil(t, block)
	assert.Equal(t, "PRIVATE KEY", block.Type)
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	require.NoError(t, err)
	assert.IsType(t, &ecdsa.PrivateKey{}, key)
}
