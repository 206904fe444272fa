package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// hardened is what the restricted level asks of every container, given once for both
// components in spec.podTemplate.
const hardened = `{spec: {podTemplate: {spec: {securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}},
  containers: [{name: flink-main-container, securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}}]}}}}`

// TestPodSecurityPolicy (review finding F11): under kubernetes.operator.pod-security.level the
// pods a FlinkDeployment asks for are refused when they break the level, with the template that
// asks for it named; the default (privileged) allows what upstream allows.
func TestPodSecurityPolicy(t *testing.T) {
	tests := []struct {
		name  string
		level string // "" is the default
		patch string
		want  []string
	}{
		{name: "privileged container, default level", patch: `{spec: {podTemplate: {spec: {containers: [{name: flink-main-container, securityContext: {privileged: true}}]}}}}`},
		{name: "privileged container, baseline", level: "baseline",
			patch: `{spec: {podTemplate: {spec: {containers: [{name: flink-main-container, securityContext: {privileged: true}}]}}}}`,
			want: []string{
				`spec.podTemplate: Forbidden: the JobManager pod violates the pod security level "baseline" the operator enforces (kubernetes.operator.pod-security.level): privileged (container "flink-main-container" must not set securityContext.privileged=true)`,
				`spec.podTemplate: Forbidden: the TaskManager pod violates the pod security level "baseline" the operator enforces (kubernetes.operator.pod-security.level): privileged (container "flink-main-container" must not set securityContext.privileged=true)`}},
		{name: "hostPath volume of the TaskManagers, baseline", level: "baseline",
			patch: `{spec: {taskManager: {podTemplate: {spec: {volumes: [{name: data, hostPath: {path: /var/lib/data}}]}}}}}`,
			want:  []string{`spec.taskManager.podTemplate: Forbidden: the TaskManager pod violates the pod security level "baseline" the operator enforces (kubernetes.operator.pod-security.level): hostPath volumes (volume "data")`}},
		{name: "hostPath volume, default level (upstream users mount host paths)",
			patch: `{spec: {podTemplate: {spec: {volumes: [{name: data, hostPath: {path: /var/lib/data}}]}}}}`},
		{name: "hostNetwork of the JobManager, baseline", level: "Baseline",
			patch: `{spec: {jobManager: {podTemplate: {spec: {hostNetwork: true}}}}}`,
			want:  []string{`spec.jobManager.podTemplate: Forbidden: the JobManager pod violates the pod security level "baseline" the operator enforces (kubernetes.operator.pod-security.level): host namespaces (hostNetwork=true)`}},
		{name: "standalone TaskManagers are checked too", level: "baseline",
			patch: `{spec: {mode: standalone, taskManager: {podTemplate: {spec: {hostPID: true}}}}}`,
			want:  []string{`spec.taskManager.podTemplate: Forbidden: the TaskManager pod violates the pod security level "baseline" the operator enforces (kubernetes.operator.pod-security.level): host namespaces (hostPID=true)`}},
		{name: "plain cluster, baseline", level: "baseline", patch: `{}`},
		{name: "plain cluster, restricted: the securityContext is missing", level: "restricted", patch: `{}`,
			want: []string{
				`spec.podTemplate: Forbidden: the JobManager pod violates the pod security level "restricted" the operator enforces (kubernetes.operator.pod-security.level): allowPrivilegeEscalation != false (container "flink-main-container" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "flink-main-container" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "flink-main-container" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "flink-main-container" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
				`spec.podTemplate: Forbidden: the TaskManager pod violates the pod security level "restricted" the operator enforces (kubernetes.operator.pod-security.level): allowPrivilegeEscalation != false (container "flink-main-container" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "flink-main-container" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "flink-main-container" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "flink-main-container" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`}},
		{name: "hardened cluster, restricted", level: "restricted", patch: hardened},
		{name: "a resource cannot set the policy", patch: `{spec: {flinkConfiguration: {kubernetes.operator.pod-security.level: privileged}}}`,
			want: []string{`spec.flinkConfiguration[kubernetes.operator.pod-security.level]: Forbidden: an operator-wide policy, set in the operator configuration only`}},
		{name: "an invalid level refuses everything", level: "strict", patch: `{}`,
			want: []string{`spec: Internal error: operator configuration kubernetes.operator.pod-security.level: "strict" is not one of privileged, baseline, restricted`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := &Validator{}
			if tc.level != "" {
				v.Defaults = flinkconf.Defaults{Operator: map[string]string{"kubernetes.operator.pod-security.level": tc.level}}
			}
			got := messages(v.ValidateDeployment(patched(t, validDeployment, tc.patch), nil))
			if tc.want == nil {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestIngressAnnotationsPolicy (review finding F11): kubernetes.operator.ingress.annotations.allowed
// refuses the other annotations (e.g. ingress-nginx snippets, which configure the shared
// ingress controller); unset, every annotation is allowed as upstream.
func TestIngressAnnotationsPolicy(t *testing.T) {
	const snippet = `{spec: {ingress: {template: "/{{namespace}}/{{name}}(/|$)(.*)", annotations: {
  nginx.ingress.kubernetes.io/rewrite-target: "/$2",
  nginx.ingress.kubernetes.io/configuration-snippet: "more_set_headers \"X: y\";"}}}}`
	v := &Validator{}
	assert.Empty(t, v.ValidateDeployment(patched(t, validDeployment, snippet), nil), "unset: all allowed")

	v.OperatorConfig = func() map[string]string {
		return map[string]string{"kubernetes.operator.ingress.annotations.allowed": "nginx.ingress.kubernetes.io/rewrite-target, cert-manager.io/*"}
	}
	assert.Equal(t, []string{
		`spec.ingress.annotations[nginx.ingress.kubernetes.io/configuration-snippet]: Forbidden: not allowed by the operator's kubernetes.operator.ingress.annotations.allowed (allowed: nginx.ingress.kubernetes.io/rewrite-target, cert-manager.io/*)`,
	}, messages(v.ValidateDeployment(patched(t, validDeployment, snippet), nil)))
	assert.Empty(t, v.ValidateDeployment(patched(t, validDeployment,
		`{spec: {ingress: {template: "{{name}}.example.com", annotations: {cert-manager.io/cluster-issuer: letsencrypt}}}}`), nil), "a prefix")
}

func TestPolicyFromOperatorConfig(t *testing.T) {
	p, err := PolicyFromOperatorConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, Policy{PodSecurity: "privileged"}, p, "upstream's behaviour by default")
	p, err = PolicyFromOperatorConfig(map[string]string{"kubernetes.operator.pod-security.level": "RESTRICTED",
		"kubernetes.operator.ingress.annotations.allowed": "a;b/*, "})
	require.NoError(t, err)
	assert.Equal(t, Policy{PodSecurity: "restricted", IngressAnnotations: []string{"a", "b/*"}}, p)
}
