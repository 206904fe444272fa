package native

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
)

func TestBuildIngress(t *testing.T) {
	tests := []struct {
		name        string
		ingress     string
		host, path  string
		annotations map[string]string
		class       string
		tls         int
	}{
		{name: "host form", ingress: `{template: "{{name}}.{{namespace}}.flink.example.com"}`,
			host: "web.team-a.flink.example.com", path: "/"},
		{name: "host form with scheme and class", ingress: `{template: "https://{{name}}.example.com", className: nginx, tls: [{hosts: [web.example.com], secretName: tls}]}`,
			host: "web.example.com", path: "/", class: "nginx", tls: 1},
		{name: "path form with host", ingress: `{template: "example.com/{{namespace}}/{{name}}", annotations: {a: b}}`,
			host: "example.com", path: "/team-a/web", annotations: map[string]string{"a": "b"}},
		{name: "path form with the user's regular expression and rewrite (upstream's advanced example)",
			ingress: `{template: "/{{namespace}}/{{name}}(/|$)(.*)", annotations: {"nginx.ingress.kubernetes.io/rewrite-target": "/$2"}}`,
			host:    "", path: "/team-a/web(/|$)(.*)",
			annotations: map[string]string{"nginx.ingress.kubernetes.io/rewrite-target": "/$2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep := deployment(t, `{metadata: {name: web}, spec: {ingress: `+tt.ingress+`}}`)
			ing, err := BuildIngress(dep, 8081)
			require.NoError(t, err)
			require.Len(t, ing.Spec.Rules, 1)
			rule := ing.Spec.Rules[0]
			assert.Equal(t, tt.host, rule.Host)
			require.Len(t, rule.HTTP.Paths, 1)
			p := rule.HTTP.Paths[0]
			assert.Equal(t, tt.path, p.Path)
			assert.Equal(t, networkingv1.PathTypeImplementationSpecific, *p.PathType)
			assert.Equal(t, "web-rest", p.Backend.Service.Name)
			assert.Equal(t, int32(8081), p.Backend.Service.Port.Number)
			assert.Equal(t, tt.annotations, ing.Annotations)
			assert.Equal(t, "ingress", ing.Labels[LabelComponent])
			if tt.class != "" {
				assert.Equal(t, tt.class, *ing.Spec.IngressClassName)
			} else {
				assert.Nil(t, ing.Spec.IngressClassName)
			}
			assert.Len(t, ing.Spec.TLS, tt.tls)
			require.Len(t, ing.OwnerReferences, 1)
			assert.Equal(t, "FlinkDeployment", ing.OwnerReferences[0].Kind)
		})
	}
	for _, bad := range []string{`{template: ""}`, `{template: "{{name}}.{{cluster}}.example.com"}`} {
		_, err := BuildIngress(deployment(t, `{metadata: {name: web}, spec: {ingress: `+bad+`}}`), 8081)
		assert.ErrorContains(t, err, "spec.ingress.template")
	}
}
