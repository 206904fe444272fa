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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/flink-operator/flink-operator/pkg/webhookcert"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// defaultCertDir is where the webhook server reads its certificate unless --webhook-cert-dir
// says otherwise (controller-runtime's default; OLM mounts there).
const defaultCertDir = "/tmp/k8s-webhook-server/serving-certs"

// install is one kustomize build.
type install struct {
	objects    []*unstructured.Unstructured
	deployment *appsv1.Deployment
	// flags are the manager container's --name=value arguments.
	flags map[string]string
}

// build builds the kustomization in config/<dir> as `kustomize build` does, in its order.
func build(t *testing.T, dir string) install {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // the kustomize command's order: namespaces and CRDs first
	res, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", dir))
	require.NoError(t, err, "kustomize build config/%s", dir)
	in := install{flags: map[string]string{}}
	for _, r := range res.Resources() {
		// Through JSON: kustomize's maps hold Go ints, which unstructured cannot deep-copy.
		data, err := r.MarshalJSON()
		require.NoError(t, err)
		o := &unstructured.Unstructured{}
		require.NoError(t, json.Unmarshal(data, &o.Object), r.CurId().String())
		in.objects = append(in.objects, o)
		if o.GetKind() == "Deployment" {
			require.Nil(t, in.deployment, "one Deployment")
			in.deployment = &appsv1.Deployment{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, in.deployment))
		}
	}
	require.NotNil(t, in.deployment, "config/%s has the operator's Deployment", dir)
	for _, a := range in.manager().Args {
		if name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok {
			in.flags[name] = value
		}
	}
	return in
}

func (in install) manager() corev1.Container {
	for _, c := range in.deployment.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c
		}
	}
	panic("no manager container")
}

func (in install) namespace() string { return in.deployment.Namespace }

// get returns the object of kind and name, or nil.
func (in install) get(kind, name string) *unstructured.Unstructured {
	for _, o := range in.objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func (in install) all(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range in.objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// certVolume returns the volume mounted where the webhook server reads its certificate.
func (in install) certVolume() (*corev1.Volume, *corev1.VolumeMount) {
	dir := defaultCertDir
	if d := in.flags["webhook-cert-dir"]; d != "" {
		dir = d
	}
	for _, m := range in.manager().VolumeMounts {
		if strings.TrimSuffix(m.MountPath, "/") == dir {
			for _, v := range in.deployment.Spec.Template.Spec.Volumes {
				if v.Name == m.Name {
					return &v, &m
				}
			}
		}
	}
	return nil, nil
}

// webhookServices returns, per webhook configuration, the Services its webhooks call.
func (in install) webhookServices(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, o := range append(in.all("ValidatingWebhookConfiguration"), in.all("MutatingWebhookConfiguration")...) {
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
	require.Equal(t, "self", in.flags["webhook-cert-management"], "config/default: the operator issues its webhook certificate")

	secret := in.get("Secret", in.flags["webhook-cert-secret"])
	require.NotNil(t, secret, "the Secret of --webhook-cert-secret=%s is part of the install", in.flags["webhook-cert-secret"])
	assert.Equal(t, in.namespace(), secret.GetNamespace())
	_, hasData := secret.Object["data"]
	assert.False(t, hasData, "shipped without data, so re-applying the install keeps the operator's certificates")

	svc := in.get("Service", in.flags["webhook-service"])
	require.NotNil(t, svc, "the Service of --webhook-service=%s is part of the install", in.flags["webhook-service"])
	assert.Equal(t, in.namespace(), svc.GetNamespace())

	targets, err := webhookcert.ParseTargets(in.flags["webhook-ca-targets"])
	require.NoError(t, err)
	var targetNames []string
	for _, tg := range targets {
		targetNames = append(targetNames, tg.String())
		require.NotNil(t, in.get(string(tg.Kind), tg.Name), "--webhook-ca-targets: %s is part of the install", tg)
	}
	services := in.webhookServices(t)
	require.NotEmpty(t, services)
	for cfg, called := range services {
		assert.Contains(t, targetNames, cfg, "every webhook configuration of the install gets the CA")
		for _, s := range called {
			assert.Equal(t, in.namespace()+"/"+svc.GetName(), s, "%s calls the Service the certificate is issued for", cfg)
		}
	}
	for _, crd := range in.all("CustomResourceDefinition") {
		strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
		if strategy == "Webhook" {
			assert.Contains(t, targetNames, "CustomResourceDefinition/"+crd.GetName(), "a conversion webhook gets the CA too")
		}
	}

	vol, mount := in.certVolume()
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
	for _, o := range in.objects {
		obj := o.DeepCopy()
		require.NoError(t, env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("kubectl"), client.ForceOwnership), "apply %s %s", o.GetKind(), o.GetName())
	}

	sa := in.deployment.Spec.Template.Spec.ServiceAccountName
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + in.namespace() + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + in.namespace(), "system:authenticated"}}
	asOperator, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)

	targets, err := webhookcert.ParseTargets(in.flags["webhook-ca-targets"])
	require.NoError(t, err)
	r := &webhookcert.Rotator{Client: asOperator, CertDir: t.TempDir(), Targets: targets, Log: logr.Discard(),
		Secret:  types.NamespacedName{Namespace: in.namespace(), Name: in.flags["webhook-cert-secret"]},
		Service: webhookcert.Service{Namespace: in.namespace(), Name: in.flags["webhook-service"]}}
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
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses", Namespace: in.namespace()}}
	require.NoError(t, env.Client.Create(ctx, other))
	err = asOperator.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Secret{})
	assert.True(t, apierrors.IsForbidden(err), "get another Secret: %v", err)
	err = asOperator.List(ctx, &corev1.SecretList{}, client.InNamespace(in.namespace()))
	assert.True(t, apierrors.IsForbidden(err), "list Secrets: %v", err)
	err = asOperator.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: in.namespace()}})
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
	assert.NotContains(t, []string{"self"}, in.flags["webhook-cert-management"], "the operator leaves the certificate to cert-manager")
	assert.Nil(t, in.get("Role", "flink-operator-webhook-cert"), "no certificate RBAC")

	certs := in.all("Certificate")
	require.Len(t, certs, 1)
	require.Equal(t, "cert-manager.io/v1", certs[0].GetAPIVersion())
	specJSON, err := json.Marshal(certs[0].Object["spec"])
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(specJSON)))
	dec.DisallowUnknownFields()
	var spec certificate
	require.NoError(t, dec.Decode(&spec), "Certificate spec")

	issuer := in.get("Issuer", spec.IssuerRef.Name)
	require.NotNil(t, issuer, "issuerRef names the Issuer of the install")
	assert.Equal(t, "Issuer", spec.IssuerRef.Kind)
	assert.Equal(t, "cert-manager.io/v1", issuer.GetAPIVersion())
	assert.Equal(t, certs[0].GetNamespace(), issuer.GetNamespace())
	_, selfSigned, _ := unstructured.NestedMap(issuer.Object, "spec", "selfSigned")
	assert.True(t, selfSigned)

	vol, mount := in.certVolume()
	require.NotNil(t, vol, "a volume where the webhook server reads its certificate")
	require.NotNil(t, vol.Secret, "cert-manager's Secret")
	assert.Equal(t, spec.SecretName, vol.Secret.SecretName)
	assert.True(t, mount.ReadOnly)
	assert.Nil(t, in.get("Secret", spec.SecretName), "cert-manager creates the Secret")

	services := in.webhookServices(t)
	require.NotEmpty(t, services)
	for cfg, called := range services {
		kind, name, _ := strings.Cut(cfg, "/")
		assert.Equal(t, certs[0].GetNamespace()+"/"+certs[0].GetName(), in.get(kind, name).GetAnnotations()["cert-manager.io/inject-ca-from"],
			"%s: cert-manager injects the Certificate's CA", cfg)
		for _, s := range called {
			ns, svc, _ := strings.Cut(s, "/")
			assert.Contains(t, spec.DNSNames, svc+"."+ns+".svc", "%s calls a name the certificate carries", cfg)
			assert.NotNil(t, in.get("Service", svc), s)
		}
	}
}

// TestOLMBundleKeepsOLMCertificate: config/manifests, the input of the OLM bundle, carries
// nothing of config/default's certificate handling; OLM mounts its own certificate in the
// default directory and injects its CA.
func TestOLMBundleKeepsOLMCertificate(t *testing.T) {
	in := build(t, "manifests")
	assert.NotContains(t, []string{"self"}, in.flags["webhook-cert-management"])
	vol, _ := in.certVolume()
	assert.Nil(t, vol, "nothing mounted where OLM mounts its certificate")
	assert.Nil(t, in.get("Secret", "flink-operator-webhook-server-cert"))
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, o := range in.all(kind) {
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			for _, r := range rules {
				resources, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
				assert.False(t, slices.Contains(resources, "secrets") || slices.Contains(resources, "validatingwebhookconfigurations") ||
					slices.Contains(resources, "mutatingwebhookconfigurations"), "%s %s: %v", kind, o.GetName(), resources)
			}
		}
	}
}
