package native

import (
	"fmt"
	"net/url"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// AnnotationRewriteTarget is the ingress-nginx annotation a path-form ingress needs, so that
// /<namespace>/<name>/overview reaches the JobManager as /overview.
const AnnotationRewriteTarget = "nginx.ingress.kubernetes.io/rewrite-target"

// BuildIngress turns spec.ingress into an Ingress to the REST Service. The template's
// {{name}} and {{namespace}} are replaced; it is read as a URL (scheme optional):
//
//   - host form, "{{name}}.{{namespace}}.flink.example.com": a rule for that host, path /;
//   - path form, "example.com/{{namespace}}/{{name}}" or "/{{namespace}}/{{name}}": the path
//     with a regular-expression suffix capturing the rest, and the ingress-nginx rewrite
//     annotation, unless the user set one (other controllers need their own annotations).
func BuildIngress(dep *flinkv1beta1.FlinkDeployment, restPort int) (*networkingv1.Ingress, error) {
	spec := dep.Spec.Ingress
	if strings.TrimSpace(spec.Template) == "" {
		return nil, fmt.Errorf("spec.ingress.template: required, e.g. {{name}}.{{namespace}}.flink.example.com or example.com/{{namespace}}/{{name}}")
	}
	expanded := strings.NewReplacer("{{name}}", dep.Name, "{{namespace}}", dep.Namespace).Replace(spec.Template)
	raw := expanded
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("spec.ingress.template: %q is not a host or URL: %v", spec.Template, err)
	}
	if strings.ContainsAny(u.Host, "{}") || strings.ContainsAny(u.Path, "{}") {
		return nil, fmt.Errorf("spec.ingress.template: %q has placeholders other than {{name}} and {{namespace}}", spec.Template)
	}
	host := u.Hostname()
	pathType := networkingv1.PathTypeImplementationSpecific
	path := "/"
	annotations := mergeStrings(spec.Annotations)
	if p := strings.TrimRight(u.Path, "/"); p != "" {
		path = p + "(/|$)(.*)"
		if _, set := annotations[AnnotationRewriteTarget]; !set {
			annotations[AnnotationRewriteTarget] = "/$2"
		}
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
							Name: RESTServiceName(dep.Name), Port: networkingv1.ServiceBackendPort{Number: int32(restPort)}}},
					}},
				}},
			}},
			TLS: spec.TLS,
		},
	}
	if len(annotations) > 0 {
		ing.Annotations = annotations
	}
	if spec.ClassName != "" {
		cn := spec.ClassName
		ing.Spec.IngressClassName = &cn
	}
	return ing, nil
}
