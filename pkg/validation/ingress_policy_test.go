package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/yamlmerge"
)

// blueGreen is a FlinkBlueGreenDeployment with patch merged over a valid one.
func blueGreen(t *testing.T, patch string) *flinkv1beta1.FlinkBlueGreenDeployment {
	t.Helper()
	const base = `
metadata: {name: orders, namespace: team-a}
spec:
  template:
    spec:
      image: flink:1.20
      flinkVersion: v1_20
      serviceAccount: flink
      jobManager: {resource: {memory: 2048m, cpu: 1}}
      taskManager: {resource: {memory: 2048m, cpu: 1}}
      job: {jarURI: "local:///opt/flink/job.jar", parallelism: 1, upgradeMode: stateless}
`
	var b, p map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(base), &b))
	require.NoError(t, yaml.Unmarshal([]byte(patch), &p))
	raw, err := yaml.Marshal(yamlmerge.Merge(b, p))
	require.NoError(t, err)
	bg := &flinkv1beta1.FlinkBlueGreenDeployment{}
	require.NoError(t, yaml.UnmarshalStrict(raw, bg))
	return bg
}

func policyConfig(kv ...string) func() map[string]string {
	conf := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		conf[kv[i]] = kv[i+1]
	}
	return func() map[string]string { return conf }
}

// TestBlueGreenIngressAnnotationsPolicy: the annotation allowlist applies to a
// FlinkBlueGreenDeployment's own Ingress (spec.ingress) as to a FlinkDeployment's. With
// cert-manager.io/* allowed, an ingress-nginx configuration snippet on the blue/green Ingress
// used to be admitted (no error at all).
func TestBlueGreenIngressAnnotationsPolicy(t *testing.T) {
	const snippet = `{spec: {ingress: {template: "{{name}}.{{namespace}}.example.com", annotations: {
  cert-manager.io/cluster-issuer: letsencrypt,
  nginx.ingress.kubernetes.io/configuration-snippet: "more_set_headers \"X: y\";"}}}}`
	v := &Validator{}
	assert.Empty(t, v.ValidateBlueGreenDeployment(blueGreen(t, snippet)), "unset: all allowed, as upstream")

	v.OperatorConfig = policyConfig("kubernetes.operator.ingress.annotations.allowed", "cert-manager.io/*")
	assert.Equal(t, []string{
		`spec.ingress.annotations[nginx.ingress.kubernetes.io/configuration-snippet]: Forbidden: not allowed by the operator's kubernetes.operator.ingress.annotations.allowed (allowed: cert-manager.io/*)`,
	}, messages(v.ValidateBlueGreenDeployment(blueGreen(t, snippet))))

	// The children's own ingress (spec.template.spec.ingress) is held to it too.
	assert.Equal(t, []string{
		`spec.template.spec.ingress.annotations[nginx.ingress.kubernetes.io/configuration-snippet]: Forbidden: not allowed by the operator's kubernetes.operator.ingress.annotations.allowed (allowed: cert-manager.io/*)`,
	}, messages(v.ValidateBlueGreenDeployment(blueGreen(t, `{spec: {template: {spec: {ingress: {template: "{{name}}.example.com",
  annotations: {nginx.ingress.kubernetes.io/configuration-snippet: "x"}}}}}}`))))
}

// TestBlueGreenPodSecurityPolicy: the children's pods are held to the pod security level, at the
// template's field paths.
func TestBlueGreenPodSecurityPolicy(t *testing.T) {
	v := &Validator{OperatorConfig: policyConfig("kubernetes.operator.pod-security.level", "baseline")}
	assert.Equal(t, []string{
		`spec.template.spec.taskManager.podTemplate: Forbidden: the TaskManager pod violates the pod security level "baseline" the operator enforces (kubernetes.operator.pod-security.level): hostPath volumes (volume "data")`,
	}, messages(v.ValidateBlueGreenDeployment(blueGreen(t,
		`{spec: {template: {spec: {taskManager: {podTemplate: {spec: {volumes: [{name: data, hostPath: {path: /var/lib/data}}]}}}}}}}`))))
	assert.Empty(t, v.ValidateBlueGreenDeployment(blueGreen(t, `{}`)))
}

// TestIngressHostsPolicy: kubernetes.operator.ingress.hosts.allowed confines the hosts a
// namespace's Ingresses (rule host and TLS hosts) may claim, for both kinds; {{namespace}} in
// an entry is the resource's namespace. Unset, any host is allowed, as upstream.
func TestIngressHostsPolicy(t *testing.T) {
	const allowed = "{{namespace}}.apps.example.com, shared.example.com"
	const detail = `not allowed by the operator's kubernetes.operator.ingress.hosts.allowed in namespace team-a (allowed: team-a.apps.example.com, shared.example.com and their subdomains)`
	tests := []struct {
		name    string
		allowed string // "" is unset
		ingress string
		want    []string
	}{
		{name: "unset: any host", ingress: `{template: "{{name}}.team-b.apps.example.com"}`},
		{name: "unset: no host", ingress: `{template: "/{{namespace}}/{{name}}"}`},
		{name: "a subdomain of the namespace's entry", allowed: allowed, ingress: `{template: "{{name}}.{{namespace}}.apps.example.com"}`},
		{name: "the entry itself, path form", allowed: allowed, ingress: `{template: "team-a.apps.example.com/{{name}}(/|$)(.*)"}`},
		{name: "an entry without the placeholder", allowed: allowed, ingress: `{template: "https://{{name}}.shared.example.com/"}`},
		{name: "case and a trailing dot do not matter", allowed: allowed, ingress: `{template: "Orders.Team-A.Apps.Example.Com."}`},
		{name: "another namespace's subdomain", allowed: allowed, ingress: `{template: "{{name}}.team-b.apps.example.com"}`,
			want: []string{`spec.ingress.template: Forbidden: host "orders.team-b.apps.example.com" ` + detail}},
		{name: "a look-alike suffix", allowed: allowed, ingress: `{template: "{{name}}.evilteam-a.apps.example.com"}`,
			want: []string{`spec.ingress.template: Forbidden: host "orders.evilteam-a.apps.example.com" ` + detail}},
		{name: "the suffix without a dot", allowed: allowed, ingress: `{template: "xteam-a.apps.example.com"}`,
			want: []string{`spec.ingress.template: Forbidden: host "xteam-a.apps.example.com" ` + detail}},
		{name: "no host: every host of the ingress controller", allowed: allowed, ingress: `{template: "/{{namespace}}/{{name}}"}`,
			want: []string{`spec.ingress.template: Forbidden: the Ingress rule has no host, so it serves every host; the operator's kubernetes.operator.ingress.hosts.allowed asks for a host in namespace team-a (allowed: team-a.apps.example.com, shared.example.com and their subdomains)`}},
		{name: "a TLS host", allowed: allowed, ingress: `{template: "{{name}}.team-a.apps.example.com", tls: [{hosts: ["orders.team-a.apps.example.com", "login.example.com"], secretName: s}]}`,
			want: []string{`spec.ingress.tls[0].hosts[1]: Forbidden: host "login.example.com" ` + detail}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := &Validator{}
			if tc.allowed != "" {
				v.OperatorConfig = policyConfig("kubernetes.operator.ingress.hosts.allowed", tc.allowed)
			}
			got := messages(v.ValidateDeployment(patched(t, validDeployment, `{spec: {ingress: `+tc.ingress+`}}`), nil))
			bgGot := messages(v.ValidateBlueGreenDeployment(blueGreen(t, `{spec: {ingress: `+tc.ingress+`}}`)))
			if tc.want == nil {
				assert.Empty(t, got, "FlinkDeployment")
				assert.Empty(t, bgGot, "FlinkBlueGreenDeployment")
				return
			}
			assert.Equal(t, tc.want, got, "FlinkDeployment")
			assert.Equal(t, tc.want, bgGot, "FlinkBlueGreenDeployment")
		})
	}
}

// TestBlueGreenChildIngressHosts: a child's own ingress is checked with the host it is
// deployed with (the controller prefixes the template with the child's color, so the two
// children's hosts differ).
func TestBlueGreenChildIngressHosts(t *testing.T) {
	v := &Validator{OperatorConfig: policyConfig("kubernetes.operator.ingress.hosts.allowed", "{{namespace}}.apps.example.com")}
	assert.Empty(t, v.ValidateBlueGreenDeployment(blueGreen(t, `{spec: {template: {spec: {ingress: {template: "{{name}}.team-a.apps.example.com"}}}}}`)))
	assert.Equal(t, []string{
		`spec.template.spec.ingress.template: Forbidden: host "green-team-a.apps.example.com" not allowed by the operator's kubernetes.operator.ingress.hosts.allowed in namespace team-a (allowed: team-a.apps.example.com and their subdomains)`,
	}, messages(v.ValidateBlueGreenDeployment(blueGreen(t, `{spec: {template: {spec: {ingress: {template: "team-a.apps.example.com"}}}}}`))))
}

func TestPolicyIngressHosts(t *testing.T) {
	p, err := PolicyFromOperatorConfig(map[string]string{"kubernetes.operator.ingress.hosts.allowed": " {{namespace}}.Apps.example.com.;b.example.com,"})
	require.NoError(t, err)
	assert.Equal(t, []string{"{{namespace}}.apps.example.com", "b.example.com"}, p.IngressHosts)
	for _, bad := range []string{"*.example.com", "{{name}}.example.com", "ex ample.com", "https://example.com"} {
		_, err := PolicyFromOperatorConfig(map[string]string{"kubernetes.operator.ingress.hosts.allowed": bad})
		assert.Error(t, err, bad)
	}
}
