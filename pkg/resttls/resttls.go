// Package resttls builds the TLS configuration of the operator's calls to a JobManager whose
// REST endpoint has SSL on (security.ssl.rest.enabled). It decides from a cluster's effective
// Flink configuration whether https is used, and loads what the operator trusts:
//
//   - operator-wide material the operator's administrator gives it (a PEM CA bundle, upstream's
//     OPERATOR_TRUSTSTORE_PATH/OPERATOR_KEYSTORE_PATH stores, a client certificate), and
//   - the truststore a cluster's configuration names (security.ssl.rest.truststore), read only
//     when it lies below a directory the administrator chose, through os.Root, so that a tenant
//     cannot make the operator read any other file.
//
// The operator never reads Secrets: whatever it trusts is mounted into its pod.
package resttls

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/flink-operator/flink-operator/pkg/options"
)

// Flink's configuration keys read here (SecurityOptions).
const (
	KeyRESTEnabled = "security.ssl.rest.enabled"
	// KeySSLEnabled is the deprecated switch Flink 1.x falls back to when
	// security.ssl.rest.enabled is unset; Flink 2 dropped it.
	KeySSLEnabled                   = "security.ssl.enabled"
	KeyRESTAuthentication           = "security.ssl.rest.authentication-enabled"
	KeyRESTTruststore               = "security.ssl.rest.truststore"
	KeyTruststore                   = "security.ssl.truststore"
	KeyRESTTruststorePassword       = "security.ssl.rest.truststore-password" //nolint:gosec // G101: a key name, not a credential
	KeyTruststorePassword           = "security.ssl.truststore-password"      //nolint:gosec // G101: a key name, not a credential
	KeyRESTVerifyHostname           = "security.ssl.rest.verify-hostname"
	KeyVerifyHostname               = "security.ssl.verify-hostname"
	KeyAlgorithms                   = "security.ssl.algorithms"
	maxStoreBytes             int64 = 1 << 20 // trust material is a few KiB
)

// Environment variables upstream's Helm chart sets on the operator pod (its own certificate,
// mounted from a Secret by the chart, not read by the operator).
const (
	EnvTruststorePath   = "OPERATOR_TRUSTSTORE_PATH"
	EnvKeystorePath     = "OPERATOR_KEYSTORE_PATH"
	EnvKeystorePassword = "OPERATOR_KEYSTORE_PASSWORD"
)

// Flags of the operator-wide settings, named in errors so that the fix is obvious.
const (
	FlagCAFile         = "--flink-rest-ca-file"
	FlagTruststoreDir  = "--flink-rest-truststore-dir"
	FlagClientCertFile = "--flink-rest-client-cert-file"
	FlagClientKeyFile  = "--flink-rest-client-key-file"
)

// Settings are the operator-wide TLS material, all files the administrator mounts into the
// operator's pod. The zero value trusts nothing: a cluster with REST SSL then gets a clear
// error instead of a connection that trusts the system's CAs or no one.
type Settings struct {
	// CAFile is a PEM bundle of CAs trusted for every JobManager.
	CAFile string
	// Truststore is a JKS or PKCS12 truststore trusted for every JobManager (upstream's
	// OPERATOR_TRUSTSTORE_PATH); StorePassword opens it and Keystore.
	Truststore string
	// Keystore is a JKS or PKCS12 keystore with the operator's client certificate and key
	// (upstream's OPERATOR_KEYSTORE_PATH), sent to clusters with
	// security.ssl.rest.authentication-enabled.
	Keystore string
	// StorePassword opens Truststore and Keystore (upstream's OPERATOR_KEYSTORE_PASSWORD).
	StorePassword string
	// ClientCertFile and ClientKeyFile are a PEM client certificate and key, the alternative
	// to Keystore.
	ClientCertFile, ClientKeyFile string
	// TruststoreDir, when set, lets a cluster's own truststore (security.ssl.rest.truststore,
	// or security.ssl.truststore) be trusted for that cluster, if it is below this directory.
	TruststoreDir string
}

// WithEnv fills what is unset from upstream's environment variables.
func (s Settings) WithEnv(getenv func(string) string) Settings {
	if s.Truststore == "" {
		s.Truststore = getenv(EnvTruststorePath)
	}
	if s.Keystore == "" {
		s.Keystore = getenv(EnvKeystorePath)
	}
	if s.StorePassword == "" {
		s.StorePassword = getenv(EnvKeystorePassword)
	}
	return s
}

// Check loads the operator-wide material once, so that a wrong file or password stops the
// operator at start instead of failing every reconcile.
func (s Settings) Check() error {
	if _, err := s.operatorRoots(); err != nil {
		return err
	}
	if (s.ClientCertFile == "") != (s.ClientKeyFile == "") {
		return fmt.Errorf("%s and %s go together", FlagClientCertFile, FlagClientKeyFile)
	}
	if s.ClientCertFile != "" && s.Keystore != "" {
		return fmt.Errorf("%s and %s (%s) both give a client certificate: keep one", FlagClientCertFile, EnvKeystorePath, s.Keystore)
	}
	if _, err := s.clientCertificate(); err != nil {
		return err
	}
	if s.TruststoreDir != "" {
		st, err := os.Stat(s.TruststoreDir)
		if err != nil {
			return fmt.Errorf("%s: %w", FlagTruststoreDir, err)
		}
		if !st.IsDir() {
			return fmt.Errorf("%s %s is not a directory", FlagTruststoreDir, s.TruststoreDir)
		}
	}
	return nil
}

// Enabled reports whether a cluster's REST endpoint serves https, by Flink's rule:
// security.ssl.rest.enabled, or when it is unset the deprecated security.ssl.enabled, which
// Flink 2 no longer reads (flink2 says the cluster runs Flink 2 or later).
func Enabled(conf map[string]string, flink2 bool) (bool, error) {
	if on, set, err := boolKey(conf, KeyRESTEnabled); err != nil || set {
		return on, err
	}
	if flink2 {
		return false, nil
	}
	on, _, err := boolKey(conf, KeySSLEnabled)
	return on, err
}

// Flink's defaults of security.ssl.algorithms, the only TLS 1.2 cipher suites its REST
// endpoint accepts. Flink 1.x's is an RSA key exchange suite, which Go no longer offers
// unless asked to.
const (
	defaultAlgorithmsFlink1 = "TLS_RSA_WITH_AES_128_CBC_SHA"
	defaultAlgorithmsFlink2 = "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
)

// rsaKeyExchangeAES are the suites without forward secrecy that Go counts as insecure but
// that Flink 1.x speaks by default (its default is the first): accepted, since a cluster's
// own connection is at stake, while RC4, 3DES and CBC-SHA256 suites stay refused.
var rsaKeyExchangeAES = map[uint16]bool{
	tls.TLS_RSA_WITH_AES_128_CBC_SHA: true, tls.TLS_RSA_WITH_AES_256_CBC_SHA: true,
	tls.TLS_RSA_WITH_AES_128_GCM_SHA256: true, tls.TLS_RSA_WITH_AES_256_GCM_SHA384: true,
}

// cipherSuites are the suites of security.ssl.algorithms (or Flink's default); an unknown or
// broken one is an error naming the key.
func cipherSuites(conf map[string]string, flink2 bool) ([]uint16, error) {
	list := strings.TrimSpace(conf[KeyAlgorithms])
	if list == "" {
		list = defaultAlgorithmsFlink1
		if flink2 {
			list = defaultAlgorithmsFlink2
		}
	}
	known := map[string]uint16{}
	for _, cs := range tls.CipherSuites() {
		known[cs.Name] = cs.ID
	}
	for _, cs := range tls.InsecureCipherSuites() {
		if rsaKeyExchangeAES[cs.ID] {
			known[cs.Name] = cs.ID
		}
	}
	var out []uint16
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		id, ok := known[name]
		if !ok {
			return nil, fmt.Errorf("flinkConfiguration %s: %q is not a cipher suite the operator uses: allowed: %s", KeyAlgorithms, name, strings.Join(sortedKeys(known), ", "))
		}
		out = append(out, id)
	}
	return out, nil
}

func sortedKeys(m map[string]uint16) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Config is the TLS configuration of the client of one cluster with REST SSL on, running
// Flink 2 or later when flink2. names are the names the JobManager's certificate may be
// valid for (the URL's host and the REST Service's DNS names); its chain is always verified,
// the name unless the configuration sets security.ssl.rest.verify-hostname (or
// security.ssl.verify-hostname) to false. The TLS 1.2 cipher suites are the cluster's
// (security.ssl.algorithms).
func (s Settings) Config(conf map[string]string, names []string, flink2 bool) (*tls.Config, error) {
	roots, err := s.operatorRoots()
	if err != nil {
		return nil, err
	}
	clusterRoots, err := s.clusterRoots(conf)
	if err != nil {
		return nil, err
	}
	roots = append(roots, clusterRoots...)
	if len(roots) == 0 {
		return nil, fmt.Errorf("%s is on but the operator trusts no CA for JobManagers: give it one with %s (PEM), %s (JKS or PKCS12) "+
			"or %s (to read the cluster's %s below that directory)", KeyRESTEnabled, FlagCAFile, EnvTruststorePath, FlagTruststoreDir, KeyRESTTruststore)
	}
	pool := x509.NewCertPool()
	for _, c := range roots {
		pool.AddCert(c)
	}
	checkName := true
	for _, k := range []string{KeyRESTVerifyHostname, KeyVerifyHostname} {
		v, set, err := boolKey(conf, k)
		if err != nil {
			return nil, err
		}
		if set {
			checkName = v
			break
		}
	}
	suites, err := cipherSuites(conf, flink2)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: suites,
		// Go's own check accepts a single name, while a JobManager's certificate is issued for
		// one of its Service's names (the URL may even be a pod IP), and Flink lets a cluster
		// turn the name check off. So Go's check is replaced, never dropped: VerifyConnection
		// verifies the whole chain against the trusted CAs on every handshake, then the name.
		InsecureSkipVerify: true, //nolint:gosec // verification is done by VerifyConnection
		VerifyConnection:   verify(pool, names, checkName),
	}
	auth, _, err := boolKey(conf, KeyRESTAuthentication)
	if err != nil {
		return nil, err
	}
	if auth {
		cert, err := s.clientCertificate()
		if err != nil {
			return nil, err
		}
		if cert == nil {
			return nil, fmt.Errorf("%s is on but the operator has no client certificate: give it one with %s and %s (PEM) or %s (JKS or PKCS12)",
				KeyRESTAuthentication, FlagClientCertFile, FlagClientKeyFile, EnvKeystorePath)
		}
		// Always offered: Go's default choice drops a certificate whose issuer is not among
		// the CAs the server lists, which would turn a CA mismatch into a bare handshake error.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return cfg, nil
}

// ErrName is wrapped by the error of a certificate whose chain is trusted but that is not
// valid for the cluster's names.
var ErrName = errors.New("certificate is not valid for the JobManager's names")

func verify(roots *x509.CertPool, names []string, checkName bool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the JobManager sent no certificate")
		}
		leaf := cs.PeerCertificates[0]
		intermediates := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			intermediates.AddCert(c)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return fmt.Errorf("JobManager certificate %q: %w", leaf.Subject.CommonName, err)
		}
		if !checkName {
			return nil
		}
		for _, n := range names {
			if leaf.VerifyHostname(n) == nil {
				return nil
			}
		}
		return fmt.Errorf("JobManager certificate %q (names %s): %w %s (set %s: false to check the chain only)",
			leaf.Subject.CommonName, strings.Join(append(leaf.DNSNames, ipStrings(leaf)...), ", "), ErrName, strings.Join(names, ", "), KeyRESTVerifyHostname)
	}
}

func ipStrings(c *x509.Certificate) []string {
	out := make([]string, 0, len(c.IPAddresses))
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

// operatorRoots are the CAs trusted for every cluster.
func (s Settings) operatorRoots() ([]*x509.Certificate, error) {
	var roots []*x509.Certificate
	if s.CAFile != "" {
		data, err := readFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", FlagCAFile, err)
		}
		certs, err := pemCertificates(data)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", FlagCAFile, s.CAFile, err)
		}
		roots = append(roots, certs...)
	}
	if s.Truststore != "" {
		data, err := readFile(s.Truststore)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvTruststorePath, err)
		}
		certs, err := TrustedCertificates(data, s.StorePassword)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", EnvTruststorePath, s.Truststore, err)
		}
		roots = append(roots, certs...)
	}
	return roots, nil
}

// clusterRoots are the CAs of the truststore the cluster's configuration names, when the
// operator may read it.
func (s Settings) clusterRoots(conf map[string]string) ([]*x509.Certificate, error) {
	key, path := first(conf, KeyRESTTruststore, KeyTruststore)
	if path == "" || s.TruststoreDir == "" {
		// Without the directory the operator reads no file a tenant names; its own trust
		// (or the error saying there is none) applies.
		return nil, nil
	}
	data, err := readBelow(s.TruststoreDir, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	_, password := first(conf, KeyRESTTruststorePassword, KeyTruststorePassword)
	certs, err := TrustedCertificates(data, password)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", key, path, err)
	}
	return certs, nil
}

// clientCertificate is the operator's client certificate, nil when it has none.
func (s Settings) clientCertificate() (*tls.Certificate, error) {
	switch {
	case s.ClientCertFile != "" && s.ClientKeyFile != "":
		certPEM, err := readFile(s.ClientCertFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", FlagClientCertFile, err)
		}
		keyPEM, err := readFile(s.ClientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", FlagClientKeyFile, err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", FlagClientCertFile, FlagClientKeyFile, err)
		}
		return &cert, nil
	case s.Keystore != "":
		data, err := readFile(s.Keystore)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKeystorePath, err)
		}
		cert, err := KeyPair(data, s.StorePassword)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", EnvKeystorePath, s.Keystore, err)
		}
		return cert, nil
	}
	return nil, nil
}

// first is the first of keys set in conf, and its value.
func first(conf map[string]string, keys ...string) (string, string) {
	for _, k := range keys {
		if v := strings.TrimSpace(conf[k]); v != "" {
			return k, v
		}
	}
	return keys[0], ""
}

// boolKey reads a boolean as Flink does, with the operator's one boolean parser.
func boolKey(conf map[string]string, key string) (value, set bool, err error) {
	return options.Bool(conf, key)
}

// readFile reads one of the operator's own files (named by its administrator).
func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readRegular(f, name)
}

// readBelow reads the file a cluster's configuration names, only if it is below dir. The
// path is checked lexically before anything is touched, then opened through os.Root, which
// refuses symlinks and ".." that lead out of dir.
func readBelow(dir, name string) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", FlagTruststoreDir, dir, err)
	}
	if !filepath.IsAbs(name) {
		return nil, fmt.Errorf("%q: the operator reads a truststore only by an absolute path below %s (%s)", name, abs, FlagTruststoreDir)
	}
	rel, err := filepath.Rel(abs, filepath.Clean(name))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("%q: the operator reads a truststore only below %s (%s)", name, abs, FlagTruststoreDir)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FlagTruststoreDir, err)
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readRegular(f, name)
}

func readRegular(f *os.File, name string) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() { // a FIFO or device could block or never end
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStoreBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > maxStoreBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxStoreBytes)
	}
	return data, nil
}

// Format is the encoding of a key or trust store.
type Format string

// Formats of stores, recognized from their content as Java's keystore compatibility mode
// does (a truststore-type of JKS opens a PKCS12 file and the other way round).
const (
	FormatJKS    Format = "JKS"
	FormatPKCS12 Format = "PKCS12"
	FormatPEM    Format = "PEM"
)

var jksMagic = []byte{0xfe, 0xed, 0xfe, 0xed}

// Detect tells a store's format from its first bytes.
func Detect(data []byte) (Format, error) {
	switch {
	case bytes.HasPrefix(data, jksMagic):
		return FormatJKS, nil
	case len(data) > 0 && data[0] == 0x30: // DER SEQUENCE: a PFX
		return FormatPKCS12, nil
	case bytes.Contains(data, []byte("-----BEGIN ")):
		return FormatPEM, nil
	}
	return "", errors.New("not a JKS, PKCS12 or PEM store")
}

// detectBounded is Detect for a store about to be decoded: one larger than maxStoreBytes,
// or a JKS or PKCS12 store whose structure would make its decoder allocate or compute far
// beyond its size, is refused.
func detectBounded(data []byte) (Format, error) {
	if int64(len(data)) > maxStoreBytes {
		return "", fmt.Errorf("the store has %d bytes: at most %d are allowed", len(data), maxStoreBytes)
	}
	format, err := Detect(data)
	if err != nil {
		return "", err
	}
	switch format {
	case FormatJKS:
		if err := checkJKS(data); err != nil {
			return "", fmt.Errorf("malformed JKS store: %w", err)
		}
	case FormatPKCS12:
		if err := checkPKCS12(data); err != nil {
			return "", fmt.Errorf("malformed PKCS12 store: %w", err)
		}
	}
	return format, nil
}

// jksEntryCertificates returns the certificates of a JKS entry: a trusted certificate entry's
// certificate, or a private key entry's chain.
func jksEntryCertificates(ks keystore.KeyStore, alias string) ([]*x509.Certificate, error) {
	var ders [][]byte
	if ks.IsTrustedCertificateEntry(alias) {
		e, err := ks.GetTrustedCertificateEntry(alias)
		if err != nil {
			return nil, err
		}
		ders = append(ders, e.Certificate.Content)
	} else {
		chain, err := ks.GetPrivateKeyEntryCertificateChain(alias)
		if err != nil {
			return nil, err
		}
		for _, c := range chain {
			ders = append(ders, c.Content)
		}
	}
	certs := make([]*x509.Certificate, 0, len(ders))
	for _, der := range ders {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	return certs, nil
}

// TrustedCertificates are the certificates a truststore trusts: its trusted-certificate
// entries and, as Java's trust managers take them too, the chains of its key entries.
//
// A store is decoded only within a budget (at most maxStoreBytes, a JKS store's structure and
// a PKCS12 store's MAC iterations checked first), as it may come from a tenant.
func TrustedCertificates(data []byte, password string) ([]*x509.Certificate, error) {
	format, err := detectBounded(data)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	switch format {
	case FormatPEM:
		return pemCertificates(data)
	case FormatJKS:
		ks, err := loadJKS(data, password)
		if err != nil {
			return nil, err
		}
		for _, alias := range ks.Aliases() {
			cs, err := jksEntryCertificates(ks, alias)
			if err != nil {
				return nil, fmt.Errorf("JKS entry %q: %w", alias, err)
			}
			certs = append(certs, cs...)
		}
	case FormatPKCS12:
		certs, err = pkcs12.DecodeTrustStore(data, password)
		if err != nil {
			// A keystore used as truststore: trust its chain.
			_, leaf, cas, chainErr := pkcs12.DecodeChain(data, password)
			if chainErr != nil {
				return nil, fmt.Errorf("PKCS12: %w", err)
			}
			certs = append([]*x509.Certificate{leaf}, cas...)
		}
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("the %s store holds no certificate", format)
	}
	return certs, nil
}

// KeyPair is the key entry of a keystore (the first, as Java's key manager picks one), with
// its chain.
func KeyPair(data []byte, password string) (*tls.Certificate, error) {
	format, err := detectBounded(data)
	if err != nil {
		return nil, err
	}
	var cert tls.Certificate
	switch format {
	case FormatJKS:
		ks, err := loadJKS(data, password)
		if err != nil {
			return nil, err
		}
		for _, alias := range ks.Aliases() {
			if !ks.IsPrivateKeyEntry(alias) {
				continue
			}
			// Upstream uses one password for the store and its key.
			e, err := ks.GetPrivateKeyEntry(alias, []byte(password))
			if err != nil {
				return nil, fmt.Errorf("JKS key entry %q: %w", alias, err)
			}
			key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
			if err != nil {
				return nil, fmt.Errorf("JKS key entry %q: %w", alias, err)
			}
			cert.PrivateKey = key
			for _, c := range e.CertificateChain {
				cert.Certificate = append(cert.Certificate, c.Content)
			}
			break
		}
		if cert.PrivateKey == nil {
			return nil, errors.New("the JKS store holds no key entry")
		}
	case FormatPKCS12:
		key, leaf, cas, err := pkcs12.DecodeChain(data, password)
		if err != nil {
			return nil, fmt.Errorf("PKCS12: %w", err)
		}
		cert.PrivateKey = key
		cert.Certificate = [][]byte{leaf.Raw}
		for _, c := range cas {
			cert.Certificate = append(cert.Certificate, c.Raw)
		}
	default:
		return nil, fmt.Errorf("a %s file is not a keystore: give PEM files with %s and %s", format, FlagClientCertFile, FlagClientKeyFile)
	}
	if len(cert.Certificate) == 0 {
		return nil, errors.New("the key entry has no certificate")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, err
	}
	cert.Leaf = leaf
	return &cert, nil
}

func loadJKS(data []byte, password string) (keystore.KeyStore, error) {
	ks := keystore.New(keystore.WithMinPasswordLen(0))
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return ks, fmt.Errorf("JKS (wrong password?): %w", err)
	}
	return ks, nil
}

func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return certs, nil
}
