package webhookcert

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/flink-operator/flink-operator/test/kubeenv"
)

var shared kubeenv.Shared

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

// install creates the Secret and two webhook configurations calling the Service hooks in a new
// namespace, and returns a rotator for them.
func install(t *testing.T) (*Rotator, client.Client) {
	t.Helper()
	env := shared.Get(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "webhookcert")
	c := env.Client
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "certs", Namespace: ns}}))
	svc := admissionregistrationv1.ServiceReference{Namespace: ns, Name: "hooks"}
	none := admissionregistrationv1.SideEffectClassNone
	rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"things"}}}}
	require.NoError(t, c.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &svc},
			Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}}))
	require.NoError(t, c.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "m.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &svc},
			Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}}))
	return newRotator(t, c, ns), c
}

func newRotator(t *testing.T, c client.Client, ns string) *Rotator {
	return &Rotator{Client: c, Secret: types.NamespacedName{Namespace: ns, Name: "certs"}, Service: Service{Namespace: ns, Name: "hooks"},
		Targets: []Target{{ValidatingWebhookConfiguration, ns}, {MutatingWebhookConfiguration, ns}}, CertDir: t.TempDir(), Log: logr.Discard()}
}

// state is what the cluster and the rotator's directory hold.
type state struct {
	secret             map[string][]byte
	validating, mutate []byte
	files              map[string][]byte
}

func read(t *testing.T, c client.Client, r *Rotator) state {
	t.Helper()
	ctx := context.Background()
	var s corev1.Secret
	require.NoError(t, c.Get(ctx, r.Secret, &s))
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: r.Targets[0].Name}, &v))
	var m admissionregistrationv1.MutatingWebhookConfiguration
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: r.Targets[1].Name}, &m))
	files := map[string][]byte{}
	for _, name := range []string{KeyServingCert, KeyServingKey} {
		b, err := os.ReadFile(filepath.Join(r.CertDir, name))
		if err == nil {
			files[name] = b
		}
	}
	return state{s.Data, v.Webhooks[0].ClientConfig.CABundle, m.Webhooks[0].ClientConfig.CABundle, files}
}

func requireConsistent(t *testing.T, r *Rotator, st state) {
	t.Helper()
	require.NotEmpty(t, st.secret[KeyCABundle])
	assert.Equal(t, st.secret[KeyCABundle], st.validating, "validating webhook caBundle")
	assert.Equal(t, st.secret[KeyCABundle], st.mutate, "mutating webhook caBundle")
	assert.Equal(t, st.secret[KeyServingCert], st.files[KeyServingCert], "tls.crt on disk")
	assert.Equal(t, st.secret[KeyServingKey], st.files[KeyServingKey], "tls.key on disk")
	verifyFor(t, st.secret, r.Service.Name+"."+r.Service.Namespace+".svc", time.Now())
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestRotatorIssuesInjectsAndWrites(t *testing.T) {
	r, c := install(t)
	require.Error(t, r.ReadyCheck()(nil), "not ready before the first sync")
	require.False(t, closed(r.CertReady()))

	require.NoError(t, r.Sync(context.Background()))
	st := read(t, c, r)
	requireConsistent(t, r, st)
	assert.NoError(t, r.ReadyCheck()(nil))
	assert.True(t, closed(r.CertReady()))
	info, err := os.Stat(filepath.Join(r.CertDir, KeyServingKey))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the key is readable by the operator only")

	// A second pass writes nothing: same Secret version, same files.
	var before corev1.Secret
	require.NoError(t, c.Get(context.Background(), r.Secret, &before))
	require.NoError(t, r.Sync(context.Background()))
	var after corev1.Secret
	require.NoError(t, c.Get(context.Background(), r.Secret, &after))
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion)
}

// TestRotatorReplicasAgree runs the rotators of two replicas at once on an empty Secret: one
// issues, the other adopts its certificate after the conflict, and both serve the same one.
func TestRotatorReplicasAgree(t *testing.T) {
	a, c := install(t)
	b := newRotator(t, c, a.Secret.Namespace)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, r := range []*Rotator{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = r.Sync(context.Background()) }()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	requireConsistent(t, a, read(t, c, a))
	requireConsistent(t, b, read(t, c, b))
}

// TestRotatorPutsBackARemovedCABundle: a re-apply or an edit that drops the caBundle is undone
// by the next pass.
func TestRotatorPutsBackARemovedCABundle(t *testing.T) {
	r, c := install(t)
	ctx := context.Background()
	require.NoError(t, r.Sync(ctx))
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: r.Targets[0].Name}, &v))
	v.Webhooks[0].ClientConfig.CABundle = []byte("-----BEGIN CERTIFICATE-----\nattacker\n-----END CERTIFICATE-----\n")
	require.NoError(t, c.Update(ctx, &v))
	require.NoError(t, r.Sync(ctx))
	requireConsistent(t, r, read(t, c, r))
}

// TestRotatorRenewsBeforeExpiry moves the rotator's clock to where the serving certificate is
// due: the Secret, the files and (for a CA renewal) the bundles change, in that order of trust.
func TestRotatorRenewsBeforeExpiry(t *testing.T) {
	r, c := install(t)
	ctx := context.Background()
	require.NoError(t, r.Sync(ctx))
	first := read(t, c, r)

	r.Now = func() time.Time {
		return time.Now().Add(DefaultPolicy.CertValidity - DefaultPolicy.CertRenewBefore + time.Hour)
	}
	require.NoError(t, r.Sync(ctx))
	renewed := read(t, c, r)
	assert.NotEqual(t, first.files[KeyServingCert], renewed.files[KeyServingCert], "new serving certificate on disk")
	assert.Equal(t, first.secret[KeyCABundle], renewed.secret[KeyCABundle], "same CA")
	assert.Equal(t, renewed.secret[KeyServingCert], renewed.files[KeyServingCert])

	r.Now = func() time.Time {
		return time.Now().Add(DefaultPolicy.CAValidity - DefaultPolicy.CARenewBefore + time.Hour)
	}
	require.NoError(t, r.Sync(ctx))
	rotated := read(t, c, r)
	assert.Len(t, parseCerts(rotated.validating), 2, "new and old CA in the webhook configuration")
	assert.True(t, bytes.HasSuffix(rotated.validating, first.secret[KeyCABundle]), "the old CA stays trusted")
	assert.Equal(t, rotated.secret[KeyServingCert], rotated.files[KeyServingCert])
}

func TestRotatorWithoutItsSecret(t *testing.T) {
	r, c := install(t)
	require.NoError(t, c.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: r.Secret.Name, Namespace: r.Secret.Namespace}}))
	err := r.Sync(context.Background())
	require.ErrorContains(t, err, "secret "+r.Secret.String()+" not found")
	assert.Error(t, r.ReadyCheck()(nil))
	assert.False(t, closed(r.CertReady()))
	_, statErr := os.Stat(filepath.Join(r.CertDir, KeyServingCert))
	assert.True(t, os.IsNotExist(statErr), "no certificate written")
}

func TestRotatorTargetMissingOrNotCallingTheService(t *testing.T) {
	r, _ := install(t)
	missing := newRotator(t, r.Client, r.Secret.Namespace)
	missing.Targets = append(missing.Targets, Target{ValidatingWebhookConfiguration, "does-not-exist"})
	assert.ErrorContains(t, missing.Sync(context.Background()), "ValidatingWebhookConfiguration/does-not-exist")

	other := newRotator(t, r.Client, r.Secret.Namespace)
	other.Service.Name = "typo"
	assert.ErrorContains(t, other.Sync(context.Background()), "no webhook calls Service "+r.Secret.Namespace+"/typo")
	assert.Error(t, other.ReadyCheck()(nil))
}

// fakeServer records whether the webhook server was started.
type fakeServer struct {
	webhook.Server
	started chan struct{}
}

func (f *fakeServer) Start(ctx context.Context) error { close(f.started); <-ctx.Done(); return nil }

func TestGatedServerWaitsForTheCertificate(t *testing.T) {
	ready := make(chan struct{})
	inner := &fakeServer{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- GatedServer{Server: inner, Ready: ready}.Start(ctx) }()
	// The gate holds until ready is closed (checked after ready closes: started must follow it).
	assert.False(t, closed(inner.started))
	close(ready)
	<-inner.started
	cancel()
	require.NoError(t, <-done)

	// Stopped before a certificate: returns without serving.
	never := &fakeServer{started: make(chan struct{})}
	stopped, stop := context.WithCancel(context.Background())
	stop()
	require.NoError(t, GatedServer{Server: never, Ready: make(chan struct{})}.Start(stopped))
	assert.False(t, closed(never.started))
}
