// Package deploy_test checks the plain-cluster installs of `make deploy`: config/default, where
// the operator issues its own webhook certificate, and config/certmanager, where cert-manager
// does, built with kustomize's Go library as `kustomize build` builds them; the OLM bundle's
// input (config/manifests) keeps OLM's certificate. The e2e test of this package
// (deploy_test.go, build tag e2e) installs config/default on the local cluster.
package deploy_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/pkg/webhookcert"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/operatorinstall"
)

// defaultCertDir is where the webhook server reads its certificate unless --webhook-cert-dir
// says otherwise (controller-runtime's default; OLM mounts there).
const defaultCertDir = "/tmp/k8s-webhook-server/serving-certs"

// install is one kustomize build of config/<dir>.
type install = operatorinstall.Install

// build builds the kustomization in config/<dir> as `kustomize build` does, in its order.
func build(t *testing.T, dir string) install {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	in, err := operatorinstall.Build(filepath.Join(root, "config", dir))
	require.NoError(t, err)
	return in
}

// certVolume returns the volume mounted where the webhook server reads its certificate.
func certVolume(in install) (*corev1.Volume, *corev1.VolumeMount) {
	dir := defaultCertDir
	if d := in.Flags["webhook-cert-dir"]; d != "" {
		dir = d
	}
	for _, m := range in.Manager().VolumeMounts {
		if strings.TrimSuffix(m.MountPath, "/") == dir {
			for _, v := range in.Deployment.Spec.Template.Spec.Volumes {
				if v.Name == m.Name {
					return &v, &m
				}
			}
		}
	}
	return nil, nil
}

// webhookServices returns, per webhook configuration, the Services its webhooks call.
func webhookServices(t *testing.T, in install) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, o := range append(in.All("ValidatingWebhookConfiguration"), in.All("MutatingWebhookConfiguration")...) {
		hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
		require.NoError(t, err)
		for _, h := range hooks {
			ns, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "service", "namespace")
			name, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "service", "name")
			out[o.GetKind()+"/"+o.GetName()] = append(out[o.GetKind()+"/"+o.GetName()], ns+"/"+name)
		}
	}
	return out
}

// TestDefaultInstallIssuesItsOwnCertificate checks config/default, what `make deploy` applies:
// the operator manages its certificate, for the Service the webhooks call, in a Secret the
// install ships, into every webhook configuration of the install, written to a writable
// in-memory volume where the webhook server reads it.
func TestDefaultInstallIssuesItsOwnCertificate(t *testing.T) {
	in := build(t, "default")
	require.Equal(t, "self", in.Flags["webhook-cert-management"], "config/default: the operator issues its webhook certificate")

	secret := in.Get("Secret", in.Flags["webhook-cert-secret"])
	require.NotNil(t, secret, "the Secret of --webhook-cert-secret=%s is part of the install", in.Flags["webhook-cert-secret"])
	assert.Equal(t, in.Namespace(), secret.GetNamespace())
	_, hasData := secret.Object["data"]
	assert.False(t, hasData, "shipped without data, so re-applying the install keeps the operator's certificates")

	svc := in.Get("Service", in.Flags["webhook-service"])
	require.NotNil(t, svc, "the Service of --webhook-service=%s is part of the install", in.Flags["webhook-service"])
	assert.Equal(t, in.Namespace(), svc.GetNamespace())

	targets, err := webhookcert.ParseTargets(in.Flags["webhook-ca-targets"])
	require.NoError(t, err)
	var targetNames []string
	for _, tg := range targets {
		targetNames = append(targetNames, tg.String())
		require.NotNil(t, in.Get(string(tg.Kind), tg.Name), "--webhook-ca-targets: %s is part of the install", tg)
	}
	services := webhookServices(t, in)
	require.NotEmpty(t, services)
	for cfg, called := range services {
		assert.Contains(t, targetNames, cfg, "every webhook configuration of the install gets the CA")
		for _, s := range called {
			assert.Equal(t, in.Namespace()+"/"+svc.GetName(), s, "%s calls the Service the certificate is issued for", cfg)
		}
	}
	for _, crd := range in.All("CustomResourceDefinition") {
		strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
		if strategy == "Webhook" {
			assert.Contains(t, targetNames, "CustomResourceDefinition/"+crd.GetName(), "a conversion webhook gets the CA too")
		}
	}

	vol, mount := certVolume(in)
	require.NotNil(t, vol, "a volume where the webhook server reads its certificate")
	require.NotNil(t, vol.EmptyDir, "the operator writes the certificate: an emptyDir")
	assert.Equal(t, corev1.StorageMediumMemory, vol.EmptyDir.Medium, "the key stays off the node's disk")
	assert.False(t, mount.ReadOnly)
}

// TestDefaultInstallRBACIsLeastPrivilege applies config/default to a real API server and runs
// the certificate rotator as the operator's ServiceAccount with the Deployment's flags: the
// install's RBAC is enough for it, and grants nothing beyond its Secret and webhook
// configurations (resourceNames).
func TestDefaultInstallRBACIsLeastPrivilege(t *testing.T) {
	in := build(t, "default")
	env := kubeenv.Start(t)
	ctx := context.Background()
	for _, o := range in.Objects {
		obj := o.DeepCopy()
		require.NoError(t, env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("kubectl"), client.ForceOwnership), "apply %s %s", o.GetKind(), o.GetName())
	}

	sa := in.Deployment.Spec.Template.Spec.ServiceAccountName
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + in.Namespace() + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + in.Namespace(), "system:authenticated"}}
	asOperator, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)

	targets, err := webhookcert.ParseTargets(in.Flags["webhook-ca-targets"])
	require.NoError(t, err)
	r := &webhookcert.Rotator{Client: asOperator, CertDir: t.TempDir(), Targets: targets, Log: logr.Discard(),
		Secret:  types.NamespacedName{Namespace: in.Namespace(), Name: in.Flags["webhook-cert-secret"]},
		Service: webhookcert.Service{Namespace: in.Namespace(), Name: in.Flags["webhook-service"]}}
	require.NoError(t, r.Sync(ctx), "the rotator works with the install's RBAC")

	var secret corev1.Secret
	require.NoError(t, env.Client.Get(ctx, r.Secret, &secret))
	require.NotEmpty(t, secret.Data[webhookcert.KeyCABundle])
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: targets[0].Name}, &v))
	for _, w := range v.Webhooks {
		assert.Equal(t, secret.Data[webhookcert.KeyCABundle], w.ClientConfig.CABundle, w.Name)
	}

	// Nothing more: other Secrets of its namespace, listing Secrets, other webhook configurations.
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses", Namespace: in.Namespace()}}
	require.NoError(t, env.Client.Create(ctx, other))
	err = asOperator.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Secret{})
	assert.True(t, apierrors.IsForbidden(err), "get another Secret: %v", err)
	err = asOperator.List(ctx, &corev1.SecretList{}, client.InNamespace(in.Namespace()))
	assert.True(t, apierrors.IsForbidden(err), "list Secrets: %v", err)
	err = asOperator.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: in.Namespace()}})
	assert.True(t, apierrors.IsForbidden(err), "create a Secret: %v", err)
	foreign := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}}
	require.NoError(t, env.Client.Create(ctx, foreign))
	err = asOperator.Get(ctx, client.ObjectKeyFromObject(foreign), &admissionregistrationv1.ValidatingWebhookConfiguration{})
	assert.True(t, apierrors.IsForbidden(err), "get another webhook configuration: %v", err)
	err = asOperator.List(ctx, &admissionregistrationv1.ValidatingWebhookConfigurationList{})
	assert.True(t, apierrors.IsForbidden(err), "list webhook configurations: %v", err)
}

// certificate is the part of cert-manager's Certificate (cert-manager.io/v1) this install
// sets; decoding strictly refuses a misspelt field.
type certificate struct {
	DNSNames   []string `json:"dnsNames"`
	SecretName string   `json:"secretName"`
	IssuerRef  struct {
		Name  string `json:"name"`
		Kind  string `json:"kind"`
		Group string `json:"group,omitempty"`
	} `json:"issuerRef"`
	PrivateKey struct {
		Algorithm      string `json:"algorithm"`
		Size           int    `json:"size"`
		RotationPolicy string `json:"rotationPolicy"`
	} `json:"privateKey"`
}

// TestCertManagerInstall checks config/certmanager: cert-manager issues a certificate for the
// Service the webhooks call into the Secret mounted where the webhook server reads it, its CA
// injector fills every webhook configuration, and the operator manages no certificate.
func TestCertManagerInstall(t *testing.T) {
	in := build(t, "certmanager")
	assert.NotContains(t, []string{"self"}, in.Flags["webhook-cert-management"], "the operator leaves the certificate to cert-manager")
	assert.Nil(t, in.Get("Role", "flink-operator-webhook-cert"), "no certificate RBAC")

	certs := in.All("Certificate")
	require.Len(t, certs, 1)
	require.Equal(t, "cert-manager.io/v1", certs[0].GetAPIVersion())
	specJSON, err := json.Marshal(certs[0].Object["spec"])
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(specJSON)))
	dec.DisallowUnknownFields()
	var spec certificate
	require.NoError(t, dec.Decode(&spec), "Certificate spec")

	issuer := in.Get("Issuer", spec.IssuerRef.Name)
	require.NotNil(t, issuer, "issuerRef names the Issuer of the install")
	assert.Equal(t, "Issuer", spec.IssuerRef.Kind)
	assert.Equal(t, "cert-manager.io/v1", issuer.GetAPIVersion())
	assert.Equal(t, certs[0].GetNamespace(), issuer.GetNamespace())
	_, selfSigned, _ := unstructured.NestedMap(issuer.Object, "spec", "selfSigned")
	assert.True(t, selfSigned)

	vol, mount := certVolume(in)
	require.NotNil(t, vol, "a volume where the webhook server reads its certificate")
	require.NotNil(t, vol.Secret, "cert-manager's Secret")
	assert.Equal(t, spec.SecretName, vol.Secret.SecretName)
	assert.True(t, mount.ReadOnly)
	assert.Nil(t, in.Get("Secret", spec.SecretName), "cert-manager creates the Secret")

	services := webhookServices(t, in)
	require.NotEmpty(t, services)
	for cfg, called := range services {
		kind, name, _ := strings.Cut(cfg, "/")
		assert.Equal(t, certs[0].GetNamespace()+"/"+certs[0].GetName(), in.Get(kind, name).GetAnnotations()["cert-manager.io/inject-ca-from"],
			"%s: cert-manager injects the Certificate's CA", cfg)
		for _, s := range called {
			ns, svc, _ := strings.Cut(s, "/")
			assert.Contains(t, spec.DNSNames, svc+"."+ns+".svc", "%s calls a name the certificate carries", cfg)
			assert.NotNil(t, in.Get("Service", svc), s)
		}
	}
}

// TestOLMBundleKeepsOLMCertificate: config/manifests, the input of the OLM bundle, carries
// nothing of config/default's certificate handling; OLM mounts its own certificate in the
// default directory and injects its CA.
func TestOLMBundleKeepsOLMCertificate(t *testing.T) {
	in := build(t, "manifests")
	assert.NotContains(t, []string{"self"}, in.Flags["webhook-cert-management"])
	vol, _ := certVolume(in)
	assert.Nil(t, vol, "nothing mounted where OLM mounts its certificate")
	assert.Nil(t, in.Get("Secret", "flink-operator-webhook-server-cert"))
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, o := range in.All(kind) {
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			for _, r := range rules {
				resources, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
				assert.False(t, slices.Contains(resources, "secrets") || slices.Contains(resources, "validatingwebhookconfigurations") ||
					slices.Contains(resources, "mutatingwebhookconfigurations"), "%s %s: %v", kind, o.GetName(), resources)
			}
		}
	}
}
