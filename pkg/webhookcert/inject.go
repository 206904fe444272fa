package webhookcert

import (
	"encoding/base64"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is a kind of object whose clientConfig calls a webhook.
type Kind string

// The kinds the CA bundle is put into.
const (
	ValidatingWebhookConfiguration Kind = "ValidatingWebhookConfiguration"
	MutatingWebhookConfiguration   Kind = "MutatingWebhookConfiguration"
	// CustomResourceDefinition with a conversion webhook (spec.conversion.webhook.clientConfig).
	CustomResourceDefinition Kind = "CustomResourceDefinition"
)

var kindGVK = map[Kind]schema.GroupVersionKind{
	ValidatingWebhookConfiguration: {Group: "admissionregistration.k8s.io", Version: "v1", Kind: string(ValidatingWebhookConfiguration)},
	MutatingWebhookConfiguration:   {Group: "admissionregistration.k8s.io", Version: "v1", Kind: string(MutatingWebhookConfiguration)},
	CustomResourceDefinition:       {Group: "apiextensions.k8s.io", Version: "v1", Kind: string(CustomResourceDefinition)},
}

// Target is a cluster-scoped object that gets the CA bundle.
type Target struct {
	Kind Kind
	Name string
}

func (t Target) String() string { return string(t.Kind) + "/" + t.Name }

// ParseTargets parses a comma-separated list of Kind/name.
func ParseTargets(s string) ([]Target, error) {
	var out []Target
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		kind, name, ok := strings.Cut(item, "/")
		if !ok || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%q: want Kind/name, e.g. %s/my-webhooks", item, ValidatingWebhookConfiguration)
		}
		if _, known := kindGVK[Kind(kind)]; !known {
			return nil, fmt.Errorf("%q: kind %q is not one of %s, %s, %s", item, kind,
				ValidatingWebhookConfiguration, MutatingWebhookConfiguration, CustomResourceDefinition)
		}
		out = append(out, Target{Kind: Kind(kind), Name: name})
	}
	return out, nil
}

// Service is the Service the webhooks are called through.
type Service struct {
	Namespace, Name string
}

// DNSNames are the names the API server may use for the Service, which the serving
// certificate must carry (it calls <name>.<namespace>.svc).
func (s Service) DNSNames() []string {
	return []string{s.Name + "." + s.Namespace + ".svc", s.Name + "." + s.Namespace + ".svc.cluster.local"}
}

// Inject sets caBundle on every clientConfig of obj (of kind t.Kind) that calls svc and reports
// whether anything changed. ClientConfigs that call another Service or a URL keep theirs: the
// operator's CA vouches for the operator only. An object with no clientConfig calling svc is an
// error, so a misnamed Service or object shows up instead of webhooks without a CA.
func Inject(obj *unstructured.Unstructured, kind Kind, svc Service, caBundle []byte) (bool, error) {
	encoded := base64.StdEncoding.EncodeToString(caBundle)
	switch kind {
	case ValidatingWebhookConfiguration, MutatingWebhookConfiguration:
		hooks, _, err := unstructured.NestedSlice(obj.Object, "webhooks")
		if err != nil {
			return false, fmt.Errorf("%s %s: webhooks: %w", kind, obj.GetName(), err)
		}
		matched, changed := 0, false
		for i, h := range hooks {
			hook, ok := h.(map[string]any)
			if !ok {
				return false, fmt.Errorf("%s %s: webhooks[%d] is not an object", kind, obj.GetName(), i)
			}
			cfg, _, _ := unstructured.NestedMap(hook, "clientConfig")
			c, err := setBundle(cfg, svc, encoded)
			if err != nil {
				return false, fmt.Errorf("%s %s: webhooks[%d]: %w", kind, obj.GetName(), i, err)
			}
			if cfg != nil && calls(cfg, svc) {
				matched++
				hook["clientConfig"] = cfg
			}
			changed = changed || c
		}
		if matched == 0 {
			return false, fmt.Errorf("%s %s: no webhook calls Service %s/%s", kind, obj.GetName(), svc.Namespace, svc.Name)
		}
		if changed {
			if err := unstructured.SetNestedSlice(obj.Object, hooks, "webhooks"); err != nil {
				return false, fmt.Errorf("%s %s: %w", kind, obj.GetName(), err)
			}
		}
		return changed, nil
	case CustomResourceDefinition:
		cfg, found, err := unstructured.NestedMap(obj.Object, "spec", "conversion", "webhook", "clientConfig")
		if err != nil || !found || !calls(cfg, svc) {
			return false, fmt.Errorf("%s %s: no conversion webhook calls Service %s/%s", kind, obj.GetName(), svc.Namespace, svc.Name)
		}
		changed, err := setBundle(cfg, svc, encoded)
		if err != nil || !changed {
			return false, err
		}
		return true, unstructured.SetNestedMap(obj.Object, cfg, "spec", "conversion", "webhook", "clientConfig")
	default:
		return false, fmt.Errorf("kind %q: not a kind with webhook clientConfigs", kind)
	}
}

// calls reports whether a clientConfig calls svc.
func calls(cfg map[string]any, svc Service) bool {
	name, _, _ := unstructured.NestedString(cfg, "service", "name")
	ns, _, _ := unstructured.NestedString(cfg, "service", "namespace")
	return name == svc.Name && ns == svc.Namespace
}

// setBundle sets the caBundle of a clientConfig that calls svc.
func setBundle(cfg map[string]any, svc Service, encoded string) (bool, error) {
	if cfg == nil || !calls(cfg, svc) {
		return false, nil
	}
	if old, _, _ := unstructured.NestedString(cfg, "caBundle"); old == encoded {
		return false, nil
	}
	return true, unstructured.SetNestedField(cfg, encoded, "caBundle")
}
