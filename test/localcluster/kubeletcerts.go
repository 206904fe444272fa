package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// KubeletCerts are how the API server and a node agent's kubelet API (nodeagent.KubeletAPI)
// trust each other, as in a real cluster: one CA signs the kubelet's serving certificate,
// which the API server verifies (--kubelet-certificate-authority), and the API server's
// kubelet client certificate (--kubelet-client-certificate), the only one the kubelet API
// accepts. Through it the API server proxies `kubectl logs` and `kubectl exec`.
type KubeletCerts struct {
	// CAFile is the CA's certificate (PEM).
	CAFile string
	// ServingCertFile and ServingKeyFile are the kubelet API's, valid for 127.0.0.1.
	ServingCertFile, ServingKeyFile string
	// ClientCertFile and ClientKeyFile are the API server's kubelet client certificate.
	ClientCertFile, ClientKeyFile string
}

// writeKubeletCerts makes a CA and both certificates in dir. They live as long as a local
// cluster can: a year.
func writeKubeletCerts(dir string) (KubeletCerts, error) {
	files := KubeletCerts{CAFile: filepath.Join(dir, "kubelet-ca.crt"),
		ServingCertFile: filepath.Join(dir, "kubelet-serving.crt"), ServingKeyFile: filepath.Join(dir, "kubelet-serving.key"),
		ClientCertFile: filepath.Join(dir, "apiserver-kubelet-client.crt"), ClientKeyFile: filepath.Join(dir, "apiserver-kubelet-client.key")}
	notBefore := time.Now().Add(-time.Hour)
	notAfter := notBefore.Add(365 * 24 * time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "local cluster kubelet CA"},
		NotBefore: notBefore, NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return files, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return files, err
	}
	if err := writePEM(files.CAFile, "CERTIFICATE", caDER); err != nil {
		return files, err
	}
	leaves := []struct {
		tmpl              *x509.Certificate
		certFile, keyFile string
	}{
		{&x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "local-node"},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, files.ServingCertFile, files.ServingKeyFile},
		// The name and group kubeadm gives the API server's kubelet client.
		{&x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client",
			Organization: []string{"system:masters"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, files.ClientCertFile, files.ClientKeyFile},
	}
	for _, l := range leaves {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return files, err
		}
		l.tmpl.NotBefore, l.tmpl.NotAfter, l.tmpl.KeyUsage = notBefore, notAfter, x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, l.tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return files, err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return files, err
		}
		if err := writePEM(l.certFile, "CERTIFICATE", der); err != nil {
			return files, err
		}
		if err := writePEM(l.keyFile, "PRIVATE KEY", keyDER); err != nil {
			return files, err
		}
	}
	return files, nil
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
