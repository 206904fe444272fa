// Package webhookcert gives the operator's admission webhooks a serving certificate on a cluster
// where neither OLM nor cert-manager provides one: it keeps a private CA and a serving
// certificate in one Secret of the operator's namespace, renews them before they expire, writes
// the serving pair where the webhook server reads it, and puts the CA bundle into the
// clientConfig of the webhook configurations (and CRD conversion webhooks) that call the
// operator's Service.
//
// It reads and writes named objects only (get and update, no list or watch), so its RBAC is
// restricted by resourceNames: the Secret through a Role, the webhook configurations through a
// ClusterRole (config/default).
//
// Not github.com/open-policy-agent/cert-controller (v0.14.0 is its newest release on our
// controller-runtime v0.21): its informers list and watch every Secret of the namespace and
// every webhook configuration of the cluster, which resourceNames cannot restrict, and it waits
// for the kubelet to project the Secret into a volume (a minute or more, and it gives up after
// its backoff), where this package writes the files itself.
package webhookcert

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"time"
)

// Keys of the certificate Secret. tls.crt and tls.key are the serving pair (the names the
// webhook server reads), ca.crt is the CA bundle put into the webhook configurations (the
// signing CA first, then older CAs that are still valid), ca.key the signing CA's key.
const (
	KeyServingCert = "tls.crt"
	KeyServingKey  = "tls.key"
	KeyCABundle    = "ca.crt"
	KeyCAKey       = "ca.key"
	// KeyRetiredCAs records which CAs after the signing one in ca.crt the operator issued (it
	// renewed them): their SHA-256 fingerprints, signed with the signing CA's key. Any other
	// certificate in ca.crt (one appended to the Secret, which takes no key) is dropped, never
	// trusted or injected.
	KeyRetiredCAs = "ca-retired.json"
)

// Policy is how long certificates are valid and how early they are replaced.
type Policy struct {
	// CAValidity is the lifetime of a new CA; CARenewBefore how long before its expiry a new
	// CA replaces it. The old CA stays in the bundle until it expires, so serving certificates
	// it signed are trusted while replicas pick up the new one.
	CAValidity, CARenewBefore time.Duration
	// CertValidity is the lifetime of a serving certificate; CertRenewBefore how long before
	// its expiry it is replaced.
	CertValidity, CertRenewBefore time.Duration
}

// DefaultPolicy: a CA for five years, replaced one year before it expires; serving
// certificates for 90 days, replaced 30 days before they expire.
var DefaultPolicy = Policy{
	CAValidity: 5 * 365 * 24 * time.Hour, CARenewBefore: 365 * 24 * time.Hour,
	CertValidity: 90 * 24 * time.Hour, CertRenewBefore: 30 * 24 * time.Hour,
}

// check refuses a policy under which certificates would be replaced as soon as they are issued.
func (p Policy) check() error {
	if p.CAValidity <= p.CARenewBefore || p.CARenewBefore < 0 {
		return fmt.Errorf("CA validity %s must exceed its renewal lead %s (>= 0)", p.CAValidity, p.CARenewBefore)
	}
	if p.CertValidity <= p.CertRenewBefore || p.CertRenewBefore < 0 {
		return fmt.Errorf("serving certificate validity %s must exceed its renewal lead %s (>= 0)", p.CertValidity, p.CertRenewBefore)
	}
	if p.CertValidity > p.CAValidity-p.CARenewBefore {
		return fmt.Errorf("serving certificate validity %s must fit in the CA's life before its renewal (%s)",
			p.CertValidity, p.CAValidity-p.CARenewBefore)
	}
	return nil
}

// Reason says what Ensure did.
type Reason string

const (
	// ReasonUpToDate: the Secret's CA and serving certificate are valid and not due.
	ReasonUpToDate Reason = "UpToDate"
	// ReasonCAIssued: there was no usable CA (first start, or a CA that does not parse or
	// whose key does not match); a new CA and serving certificate were issued.
	ReasonCAIssued Reason = "CAIssued"
	// ReasonCARenewed: the CA was due; a new one signs from now on, the old one stays in
	// the bundle until it expires.
	ReasonCARenewed Reason = "CARenewed"
	// ReasonCertIssued: the serving certificate was missing, unusable (does not parse, its
	// key does not match, not signed by the CA, other DNS names) and was issued anew.
	ReasonCertIssued Reason = "CertIssued"
	// ReasonCertRenewed: the serving certificate was due and was replaced.
	ReasonCertRenewed Reason = "CertRenewed"
	// ReasonBundlePruned: expired CAs (or entries that are not CA certificates) were dropped
	// from the CA bundle; the certificates were kept.
	ReasonBundlePruned Reason = "BundlePruned"
)

// Ensure returns the Secret data with a valid CA and a serving certificate for dnsNames that
// are not due at now under p, and what it changed. Data that is already valid is returned
// unchanged (the same map, ReasonUpToDate); anything unusable is replaced, never trusted: a
// serving certificate is kept only if the Secret's own CA key signed it.
func Ensure(data map[string][]byte, dnsNames []string, now time.Time, p Policy) (map[string][]byte, Reason, error) {
	if len(dnsNames) == 0 {
		return nil, "", errors.New("no DNS names for the serving certificate")
	}
	if err := p.check(); err != nil {
		return nil, "", err
	}
	ca, bundle, retired, caReason, err := ensureCA(data, now, p)
	if err != nil {
		return nil, "", err
	}
	out := make(map[string][]byte, len(data)+4)
	for k, v := range data {
		out[k] = v
	}
	out[KeyCABundle], out[KeyCAKey] = bundle, ca.keyPEM
	if retired == nil {
		delete(out, KeyRetiredCAs)
	} else {
		out[KeyRetiredCAs] = retired
	}
	reason := caReason
	if caReason == ReasonUpToDate {
		if reason = servingCertState(data, ca, dnsNames, now, p); reason == ReasonUpToDate {
			if bytes.Equal(bundle, data[KeyCABundle]) && bytes.Equal(retired, data[KeyRetiredCAs]) {
				return data, ReasonUpToDate, nil
			}
			return out, ReasonBundlePruned, nil
		}
	}
	certPEM, keyPEM, err := issueServing(ca, dnsNames, now, p.CertValidity)
	if err != nil {
		return nil, "", err
	}
	out[KeyServingCert], out[KeyServingKey] = certPEM, keyPEM
	return out, reason, nil
}

// authority is a CA that can sign.
type authority struct {
	cert   *x509.Certificate
	key    crypto.Signer
	keyPEM []byte
}

// ensureCA returns the signing CA, the bundle to trust and the record of the retired CAs in
// it (KeyRetiredCAs, nil for none): the Secret's CA when usable and not due; when due, a new
// one followed by the operator's earlier CAs that have not expired yet (they signed serving
// certificates replicas may still serve); when unusable (missing, not a CA, its key missing or
// not its own), a new one alone. Of the certificates after the signing CA only those the
// record, signed with the signing CA's key, names are kept.
func ensureCA(data map[string][]byte, now time.Time, p Policy) (*authority, []byte, []byte, Reason, error) {
	certs := parseCerts(data[KeyCABundle])
	var current *authority
	if len(certs) > 0 && certs[0].IsCA && !now.Before(certs[0].NotBefore) && now.Before(certs[0].NotAfter) {
		if key, err := parseKey(data[KeyCAKey]); err == nil && publicKeyMatches(certs[0], key) {
			current = &authority{cert: certs[0], key: key, keyPEM: data[KeyCAKey]}
		}
	}
	var keep []*x509.Certificate
	if current != nil {
		issued := readRetired(data[KeyRetiredCAs], current)
		for _, c := range certs[1:] {
			if c.IsCA && now.Before(c.NotAfter) && issued[fingerprint(c)] && !slices.ContainsFunc(keep, c.Equal) {
				keep = append(keep, c)
			}
		}
	}
	reason := ReasonUpToDate
	switch {
	case current == nil:
		reason = ReasonCAIssued
	case !now.Add(p.CARenewBefore).Before(current.cert.NotAfter):
		reason = ReasonCARenewed
		keep = append([]*x509.Certificate{current.cert}, keep...)
	}
	if reason != ReasonUpToDate {
		var err error
		if current, err = issueCA(now, p.CAValidity); err != nil {
			return nil, nil, nil, "", err
		}
	}
	var bundle bytes.Buffer
	for _, c := range append([]*x509.Certificate{current.cert}, keep...) {
		_ = pem.Encode(&bundle, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	retired, err := recordRetired(data[KeyRetiredCAs], current, keep)
	if err != nil {
		return nil, nil, nil, "", err
	}
	return current, bundle.Bytes(), retired, reason, nil
}

// retiredRecord is KeyRetiredCAs: the fingerprints of the operator's retired CAs, bound to the
// signing CA by its signature.
type retiredRecord struct {
	Fingerprints []string `json:"fingerprints"`
	// Signature is the signing CA key's ASN.1 ECDSA signature over retiredDigest.
	Signature []byte `json:"signature"`
}

// retiredDigest is what the signing CA signs: its own fingerprint and the retired ones.
func retiredDigest(signer *x509.Certificate, fingerprints []string) []byte {
	h := sha256.New()
	h.Write([]byte("flink-operator webhook CAs retired by " + fingerprint(signer) + "\n"))
	for _, f := range fingerprints {
		h.Write([]byte(f + "\n"))
	}
	return h.Sum(nil)
}

func fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

// readRetired returns the fingerprints raw names if current's key signed it, else none.
func readRetired(raw []byte, current *authority) map[string]bool {
	var rec retiredRecord
	pub, ok := current.cert.PublicKey.(*ecdsa.PublicKey)
	if len(raw) == 0 || !ok || json.Unmarshal(raw, &rec) != nil ||
		!ecdsa.VerifyASN1(pub, retiredDigest(current.cert, rec.Fingerprints), rec.Signature) {
		return nil
	}
	out := make(map[string]bool, len(rec.Fingerprints))
	for _, f := range rec.Fingerprints {
		out[f] = true
	}
	return out
}

// recordRetired is the record of keep for current: the Secret's own when it says the same
// (a signature is not deterministic, and an unchanged Secret is not written), else signed anew.
func recordRetired(old []byte, current *authority, keep []*x509.Certificate) ([]byte, error) {
	if len(keep) == 0 {
		return nil, nil
	}
	fingerprints := make([]string, len(keep))
	for i, c := range keep {
		fingerprints[i] = fingerprint(c)
	}
	var rec retiredRecord
	if json.Unmarshal(old, &rec) == nil && slices.Equal(rec.Fingerprints, fingerprints) && readRetired(old, current) != nil {
		return old, nil
	}
	sig, err := current.key.Sign(rand.Reader, retiredDigest(current.cert, fingerprints), crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("sign the record of retired CAs: %w", err)
	}
	raw, err := json.Marshal(retiredRecord{Fingerprints: fingerprints, Signature: sig})
	if err != nil {
		return nil, fmt.Errorf("encode the record of retired CAs: %w", err)
	}
	return raw, nil
}

// servingCertState says whether the Secret's serving pair can be kept.
func servingCertState(data map[string][]byte, ca *authority, dnsNames []string, now time.Time, p Policy) Reason {
	pair, err := tls.X509KeyPair(data[KeyServingCert], data[KeyServingKey])
	if err != nil {
		return ReasonCertIssued
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || cert.CheckSignatureFrom(ca.cert) != nil || !sameNames(cert.DNSNames, dnsNames) ||
		now.Before(cert.NotBefore) || !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		return ReasonCertIssued
	}
	if !now.Add(p.CertRenewBefore).Before(cert.NotAfter) {
		return ReasonCertRenewed
	}
	return ReasonUpToDate
}

func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func issueCA(now time.Time, validity time.Duration) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// The issue time in the name tells CAs of a bundle apart, as Kubernetes' own
		// self-signed certificates do.
		Subject:               pkix.Name{CommonName: "flink-operator-webhook-ca@" + strconv.FormatInt(now.Unix(), 10)},
		NotBefore:             now.Add(-time.Hour), // tolerate clocks of other machines running behind
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("sign CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse new CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, keyPEM: keyPEM}, nil
}

func issueServing(ca *authority, dnsNames []string, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate serving key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: dnsNames[0]},
		DNSNames:     dnsNames,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign serving certificate: %w", err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n, nil
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// parseCerts returns the certificates of a PEM bundle, skipping blocks that are not.
func parseCerts(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("no PKCS#8 private key")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("private key cannot sign")
	}
	return signer, nil
}

func publicKeyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}
