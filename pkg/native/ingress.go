package native

import (
	"fmt"
	"net/url"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// BuildIngress turns spec.ingress into an Ingress to the REST Service. The template's
// {{name}} and {{namespace}} are replaced; it is read as a URL (scheme optional):
//
//   - host form, "{{name}}.{{namespace}}.flink.example.com": a rule for that host, path /;
//   - path form, "/{{namespace}}/{{name}}(/|$)(.*)", optionally with a host: the path as
//     written, as upstream. The rewrite the ingress controller needs (for ingress-nginx,
//     nginx.ingress.kubernetes.io/rewrite-target: /$2) is the user's to annotate, because it
//     differs between controllers.
func BuildIngress(dep *flinkv1beta1.FlinkDeployment, restPort int32) (*networkingv1.Ingress, error) {
	spec := dep.Spec.Ingress
	if strings.TrimSpace(spec.Template) == "" {
		return nil, fmt.Errorf("spec.ingress.template: required, e.g. {{name}}.{{namespace}}.flink.example.com or example.com/{{namespace}}/{{name}}")
	}
	expanded := strings.NewReplacer("{{name}}", dep.Name, "{{namespace}}", dep.Namespace).Replace(spec.Template)
	if strings.Contains(expanded, "{{") || strings.Contains(expanded, "}}") {
		return nil, fmt.Errorf("spec.ingress.template: %q has placeholders other than {{name}} and {{namespace}}", spec.Template)
	}
	raw := expanded
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("spec.ingress.template: %q is not a host or URL: %v", spec.Template, err)
	}
	host := u.Hostname()
	pathType := networkingv1.PathTypeImplementationSpecific
	path := "/"
	if u.Path != "" {
		path = u.Path
	}
	labels := mergeStrings(spec.Labels, map[string]string{LabelApp: dep.Name, LabelComponent: ComponentIngress})
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{Name: IngressName(dep.Name), Namespace: dep.Namespace, Labels: labels, OwnerReferences: []metav1.OwnerReference{ownerRef(dep)}},
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     path,
						PathType: &pathType,
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: flinkconf.RESTServiceName(dep.Name), Port: networkingv1.ServiceBackendPort{Number: restPort}}},
					}},
				}},
			}},
			TLS: spec.TLS,
		},
	}
	if len(spec.Annotations) > 0 {
		ing.Annotations = mergeStrings(spec.Annotations)
	}
	if spec.ClassName != "" {
		cn := spec.ClassName
		ing.Spec.IngressClassName = &cn
	}
	return ing, nil
}
