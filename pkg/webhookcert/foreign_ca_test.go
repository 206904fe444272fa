package webhookcert

import (
	"context"
	"encoding/pem"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// foreignCA is a CA the operator did not issue, as whoever may write the Secret could append
// it to ca.crt (no key needed): it must never be trusted.
func foreignCA(t *testing.T) []byte {
	t.Helper()
	other, _ := mustEnsure(t, nil, t0)
	return other[KeyCABundle]
}

func appended(data map[string][]byte, key string, extra []byte) map[string][]byte {
	d := maps.Clone(data)
	d[key] = append(append([]byte{}, data[key]...), extra...)
	return d
}

// TestEnsureDropsCAsItDidNotIssue: an unexpired CA appended after the signing CA is dropped
// from the bundle; the operator's own retired CA is kept through a renewal, but not when its
// record was forged or belongs to another CA key.
func TestEnsureDropsCAsItDidNotIssue(t *testing.T) {
	data, _ := mustEnsure(t, nil, t0)
	own := parseCerts(data[KeyCABundle])

	out, reason := mustEnsure(t, appended(data, KeyCABundle, foreignCA(t)), t0.Add(time.Hour))
	assert.Equal(t, ReasonBundlePruned, reason)
	assert.Equal(t, string(data[KeyCABundle]), string(out[KeyCABundle]), "only the operator's CA")
	assert.Equal(t, data[KeyServingCert], out[KeyServingCert], "nothing else changes")

	// Through a CA renewal the old CA is kept, the foreign one is not.
	due := t0.Add(DefaultPolicy.CAValidity - DefaultPolicy.CARenewBefore)
	data, _ = mustEnsure(t, data, due.Add(-10*24*time.Hour))
	renewed, reason := mustEnsure(t, appended(data, KeyCABundle, foreignCA(t)), due)
	require.Equal(t, ReasonCARenewed, reason)
	bundle := parseCerts(renewed[KeyCABundle])
	require.Len(t, bundle, 2, "the new CA and the operator's old one")
	assert.Equal(t, own[0].Raw, bundle[1].Raw)
	again, reason := mustEnsure(t, renewed, due.Add(time.Hour))
	assert.Equal(t, ReasonUpToDate, reason, "the record of the retired CA is kept as written")
	assert.Equal(t, renewed, again)

	// A foreign CA appended after the renewal is dropped; the retired CA stays.
	out, reason = mustEnsure(t, appended(renewed, KeyCABundle, foreignCA(t)), due.Add(time.Hour))
	assert.Equal(t, ReasonBundlePruned, reason)
	assert.Equal(t, string(renewed[KeyCABundle]), string(out[KeyCABundle]))

	// A record of retired CAs copied from another Secret (signed by another CA key) vouches
	// for nothing here.
	other, _ := mustEnsure(t, nil, t0)
	other, _ = mustEnsure(t, other, due)
	otherRetired := parseCerts(other[KeyCABundle])[1]
	forged := appended(renewed, KeyCABundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: otherRetired.Raw}))
	forged[KeyRetiredCAs] = other[KeyRetiredCAs]
	out, reason = mustEnsure(t, forged, due.Add(time.Hour))
	assert.Equal(t, ReasonBundlePruned, reason)
	assert.Len(t, parseCerts(out[KeyCABundle]), 1, "no record signed by this CA's key: no retired CA trusted")
}

// TestRotatorDropsAForeignCA: a foreign CA appended to the Secret's ca.crt is neither kept in
// the Secret nor injected into the webhook configurations.
func TestRotatorDropsAForeignCA(t *testing.T) {
	r, c := install(t)
	ctx := context.Background()
	require.NoError(t, r.Sync(ctx))
	first := read(t, c, r)

	var s corev1.Secret
	require.NoError(t, c.Get(ctx, r.Secret, &s))
	s.Data = appended(s.Data, KeyCABundle, foreignCA(t))
	require.NoError(t, c.Update(ctx, &s))

	require.NoError(t, r.Sync(ctx))
	st := read(t, c, r)
	requireConsistent(t, r, st)
	assert.Equal(t, string(first.secret[KeyCABundle]), string(st.secret[KeyCABundle]), "the Secret's bundle: the operator's CA alone")
	assert.Equal(t, string(first.secret[KeyCABundle]), string(st.validating), "validating webhook caBundle")
	assert.Equal(t, string(first.secret[KeyCABundle]), string(st.mutate), "mutating webhook caBundle")
}

// staleSecretClient lets another replica renew the CA while this one is between reading the
// Secret and updating a target: the first Get of a target updates the Secret first.
type staleSecretClient struct {
	client.Client
	renew func()
	done  bool
}

func (s *staleSecretClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); !ok && !s.done {
		s.done = true
		s.renew()
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// TestRotatorDoesNotInjectAStaleBundle: a replica whose Secret read is older than another
// replica's CA renewal does not put the old bundle back into the webhook configurations.
func TestRotatorDoesNotInjectAStaleBundle(t *testing.T) {
	a, c := install(t)
	ctx := context.Background()
	require.NoError(t, a.Sync(ctx))
	b := newRotator(t, c, a.Secret.Namespace)
	b.Now = func() time.Time {
		return time.Now().Add(DefaultPolicy.CAValidity - DefaultPolicy.CARenewBefore + time.Hour)
	}
	a.Client = &staleSecretClient{Client: c, renew: func() { require.NoError(t, b.Sync(ctx)) }}
	// A renews the serving certificate (so it has a bundle to inject) while B renews the CA.
	a.Now = func() time.Time {
		return time.Now().Add(DefaultPolicy.CertValidity - DefaultPolicy.CertRenewBefore + time.Hour)
	}

	err := a.Sync(ctx)
	st := read(t, c, a)
	assert.Len(t, parseCerts(st.secret[KeyCABundle]), 2, "B's renewal: new CA and old")
	assert.Equal(t, string(st.secret[KeyCABundle]), string(st.validating), "the webhook trusts the Secret's bundle, not A's stale one")
	assert.Equal(t, string(st.secret[KeyCABundle]), string(st.mutate))
	if err != nil {
		assert.ErrorContains(t, err, "changed")
		a.Client, a.Now = c, b.Now
		require.NoError(t, a.Sync(ctx), "the next pass adopts B's certificates")
	}
	st = read(t, c, a)
	assert.Equal(t, string(st.secret[KeyCABundle]), string(st.validating))
	assert.Equal(t, string(st.secret[KeyServingCert]), string(st.files[KeyServingCert]), "A serves B's certificate")
	verifyFor(t, st.secret, a.Service.Name+"."+a.Service.Namespace+".svc", b.Now())
}
