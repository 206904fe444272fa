package localenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// WebhookAddress is where the operator's webhook server is reached inside package podnet's
// network namespace: an address of the pod range (routed to the namespace's loopback, where
// the operator listens on every address), which the webhook Service's endpoints name.
const WebhookAddress = "10.244.255.250"

// webhookPort is the operator's webhook port (config/webhook/service.yaml's targetPort).
const webhookPort = 9443

// installWebhooks installs config/webhook, built by kustomize (its patches add the
// webhooks' matchConditions), as a user's install does (the mutating and validating
// configurations, with a CA bundle). With loopbackPort 0 they are served through the webhook
// Service: it has no selector here (the operator is a process, not a pod) and its endpoints
// point at WebhookAddress. Otherwise (no network namespace: make run-local) each webhook
// names its URL on loopback instead, https://127.0.0.1:loopbackPort/<its path>, which the
// API server on the same machine calls directly. It returns the directory holding the
// serving certificate.
func (e *Env) installWebhooks(ctx context.Context, root string, loopbackPort int) (string, error) {
	objs, err := kustomizeBuild(filepath.Join(root, "config", "webhook"))
	if err != nil {
		return "", err
	}
	service := ""
	for _, o := range objs {
		if o.GetKind() == "Service" {
			service = o.GetName()
		}
	}
	if service == "" {
		return "", fmt.Errorf("config/webhook has no Service")
	}
	certDir := filepath.Join(e.Dir, "webhook-certs")
	caPEM, err := writeServingCertificate(certDir, service+"."+OperatorNamespace+".svc")
	if err != nil {
		return "", err
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Service":
			if loopbackPort != 0 {
				continue
			}
			unstructured.RemoveNestedField(o.Object, "spec", "selector")
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				hook := h.(map[string]any)
				if err := unstructured.SetNestedField(hook, base64.StdEncoding.EncodeToString(caPEM), "clientConfig", "caBundle"); err != nil {
					return "", err
				}
				if loopbackPort != 0 {
					path, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
					unstructured.RemoveNestedField(hook, "clientConfig", "service")
					url := fmt.Sprintf("https://127.0.0.1:%d%s", loopbackPort, path)
					if err := unstructured.SetNestedField(hook, url, "clientConfig", "url"); err != nil {
						return "", err
					}
					continue
				}
				if ns, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "namespace"); ns == kustomizeNamespace {
					if err := unstructured.SetNestedField(hook, OperatorNamespace, "clientConfig", "service", "namespace"); err != nil {
						return "", err
					}
				}
			}
			if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
				return "", err
			}
		}
		if err := e.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("install %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if o.GetKind() != "Service" {
			e.webhookConfigs = append(e.webhookConfigs, o)
		}
	}
	if loopbackPort != 0 {
		return certDir, nil
	}
	// The API server resolves a Service through its Endpoints (1.33's endpoint resolver); the
	// EndpointSlice mirroring controller derives the slice from it, as for a selector-less
	// Service in a real cluster. (Endpoints are deprecated for clients, not for this resolver.)
	endpoints := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: OperatorNamespace, Name: service}, //nolint:staticcheck // SA1019: see above
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: WebhookAddress}}, //nolint:staticcheck // SA1019: as above
			Ports: []corev1.EndpointPort{{Port: webhookPort, Protocol: corev1.ProtocolTCP}}}}}
	if err := e.Client.Create(ctx, endpoints); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("install the webhook Service's endpoints: %w", err)
	}
	return certDir, nil
}

// kustomizeBuild builds the kustomization in dir as `kustomize build` does, patches included,
// and moves what it puts in the placeholder namespace into OperatorNamespace.
func kustomizeBuild(dir string) ([]*unstructured.Unstructured, error) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		// Through JSON: kustomize's maps hold Go ints, which unstructured cannot deep-copy.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		if o.GetNamespace() == kustomizeNamespace {
			o.SetNamespace(OperatorNamespace)
		}
		out = append(out, o)
	}
	return out, nil
}

// writeServingCertificate writes tls.crt and tls.key for dnsName, signed by a new CA, into dir
// (controller-runtime's webhook server reads them there) and returns the CA in PEM.
func writeServingCertificate(dir, dnsName string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flink-operator local webhook CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serving := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName},
		DNSNames: []string{dnsName, dnsName + ".cluster.local"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, serving, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// WithoutWebhooks runs change while the API server calls none of the operator's admission
// webhooks: their configurations are removed, then put back. With the webhooks' failurePolicy
// Fail, nothing can be written while the operator is down; an install without the webhooks
// (upstream's chart can leave them out) can, and this is how a test makes such a change.
func (e *Env) WithoutWebhooks(ctx context.Context, change func()) error {
	for _, o := range e.webhookConfigs {
		if err := e.Client.Delete(ctx, o.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	change()
	for _, o := range e.webhookConfigs {
		again := o.DeepCopy()
		again.SetResourceVersion("")
		again.SetUID("")
		if err := e.Client.Create(ctx, again); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("restore %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// PauseOperator stops the operator's processes with SIGSTOP, as a hung operator looks from the
// outside: its listening sockets stay open and the kernel still accepts connections, but
// nothing answers, so the API server waits for the webhooks' timeoutSeconds (a stopped process
// refuses connections at once instead). ResumeOperator continues them.
func (e *Env) PauseOperator() error {
	if e.operator == nil {
		return fmt.Errorf("the operator is not running")
	}
	return syscall.Kill(-e.operator.Process.Pid, syscall.SIGSTOP)
}

// ResumeOperator continues the operator's processes after PauseOperator.
func (e *Env) ResumeOperator() error {
	if e.operator == nil {
		return fmt.Errorf("the operator is not running")
	}
	return syscall.Kill(-e.operator.Process.Pid, syscall.SIGCONT)
}
