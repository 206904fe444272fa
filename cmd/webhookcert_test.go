package main

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

func TestWebhookCertManagementFlags(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	parse := func(t *testing.T, args ...string) *options {
		t.Helper()
		var o options
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		o.bind(fs)
		require.NoError(t, fs.Parse(args))
		return &o
	}

	// The default leaves the certificate to OLM or cert-manager: no rotator, no RBAC needed.
	r, err := parse(t).certRotator(cfg, newScheme())
	require.NoError(t, err)
	assert.Nil(t, r)

	_, err = parse(t, "--webhook-cert-management=selfish").certRotator(cfg, newScheme())
	assert.ErrorContains(t, err, `--webhook-cert-management "selfish": allowed: self, external`)

	o := parse(t, "--webhook-cert-management=self")
	o.operatorNamespace = ""
	_, err = o.certRotator(cfg, newScheme())
	assert.ErrorContains(t, err, "needs the operator's namespace")

	o = parse(t, "--webhook-cert-management=self", "--webhook-ca-targets=Secret/x")
	o.operatorNamespace = "ops"
	_, err = o.certRotator(cfg, newScheme())
	assert.ErrorContains(t, err, `--webhook-ca-targets: "Secret/x"`)

	o = parse(t, "--webhook-cert-management=self", "--webhook-cert-dir=/certs")
	o.operatorNamespace = "ops"
	r, err = o.certRotator(cfg, newScheme())
	require.NoError(t, err)
	assert.Equal(t, "ops/flink-operator-webhook-server-cert", r.Secret.String())
	assert.Equal(t, "flink-operator-webhook-service.ops.svc", r.Service.DNSNames()[0])
	assert.Equal(t, "/certs", r.CertDir)
	assert.Len(t, r.Targets, 2)

	// Webhooks off: nothing to serve, so no certificate either.
	o = parse(t, "--webhook-cert-management=self", "--enable-webhooks=false")
	o.operatorNamespace = "ops"
	r, err = o.certRotator(cfg, newScheme())
	require.NoError(t, err)
	assert.Nil(t, r)
}
