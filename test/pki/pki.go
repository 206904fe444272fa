// Package pki makes throwaway certificate authorities, certificates and Java key/trust
// stores for tests of TLS to JobManagers. Keys are RSA: Flink's default REST cipher suites
// (security.ssl.algorithms) are ECDHE_RSA only. Test-only code; the product never imports it.
package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// CA is a certificate authority.
type CA struct {
	Cert *x509.Certificate
	key  *rsa.PrivateKey
}

// Leaf is a certificate with its key, signed by a CA.
type Leaf struct {
	Cert *x509.Certificate
	Key  *rsa.PrivateKey
	CA   *CA
}

// NewCA makes a self-signed CA.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key}
}

// Issue makes a certificate for server and client authentication, valid for names (DNS names
// or IP addresses).
func (ca *CA) Issue(t testing.TB, cn string, names ...string) *Leaf {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &Leaf{Cert: cert, Key: key, CA: ca}
}

// TLS is the leaf as a tls.Certificate with its CA in the chain.
func (l *Leaf) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{l.Cert.Raw, l.CA.Cert.Raw}, PrivateKey: l.Key, Leaf: l.Cert}
}

// CertPEM is the certificate in PEM.
func CertPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// KeyPEM is the leaf's key in PEM (PKCS #8).
func (l *Leaf) KeyPEM(t testing.TB) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// KeystoreJKS is a JKS keystore with the leaf's key and chain under alias "flink".
func (l *Leaf) KeystoreJKS(t testing.TB, password string) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		t.Fatal(err)
	}
	ks := keystore.New()
	entry := keystore.PrivateKeyEntry{CreationTime: time.Now(), PrivateKey: der, CertificateChain: []keystore.Certificate{
		{Type: "X509", Content: l.Cert.Raw}, {Type: "X509", Content: l.CA.Cert.Raw}}}
	if err := ks.SetPrivateKeyEntry("flink", entry, []byte(password)); err != nil {
		t.Fatal(err)
	}
	return storeJKS(t, ks, password)
}

// KeystorePKCS12 is a PKCS12 keystore with the leaf's key and chain.
func (l *Leaf) KeystorePKCS12(t testing.TB, password string) []byte {
	t.Helper()
	data, err := pkcs12.Modern.Encode(l.Key, l.Cert, []*x509.Certificate{l.CA.Cert}, password)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TruststoreJKS is a JKS truststore trusting the CA.
func (ca *CA) TruststoreJKS(t testing.TB, password string) []byte {
	t.Helper()
	ks := keystore.New()
	if err := ks.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{CreationTime: time.Now(),
		Certificate: keystore.Certificate{Type: "X509", Content: ca.Cert.Raw}}); err != nil {
		t.Fatal(err)
	}
	return storeJKS(t, ks, password)
}

// TruststorePKCS12 is a PKCS12 truststore (Java's trusted-certificate bags) trusting the CA.
func (ca *CA) TruststorePKCS12(t testing.TB, password string) []byte {
	t.Helper()
	data, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func storeJKS(t testing.TB, ks keystore.KeyStore, password string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(password)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Write writes data to path (0600) and returns path.
func Write(t testing.TB, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
