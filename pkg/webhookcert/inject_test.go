package webhookcert

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var ours = Service{Namespace: "ops", Name: "hooks"}

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	return u
}

const webhooks = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: v}
webhooks:
- name: ours.example.com
  clientConfig: {service: {name: hooks, namespace: ops, path: /validate}}
- name: other-service.example.com
  clientConfig: {service: {name: hooks, namespace: elsewhere}, caBundle: b3RoZXI=}
- name: url.example.com
  clientConfig: {url: "https://example.com/validate"}
`

func TestInjectSetsOnlyOurService(t *testing.T) {
	obj := object(t, webhooks)
	changed, err := Inject(obj, ValidatingWebhookConfiguration, ours, []byte("CA"))
	require.NoError(t, err)
	assert.True(t, changed)
	hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
	bundle := func(i int) any {
		v, _, _ := unstructured.NestedFieldNoCopy(hooks[i].(map[string]any), "clientConfig", "caBundle")
		return v
	}
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("CA")), bundle(0))
	assert.Equal(t, "b3RoZXI=", bundle(1), "another Service keeps its CA")
	assert.Nil(t, bundle(2), "a URL webhook gets no CA of ours")

	again, err := Inject(obj, ValidatingWebhookConfiguration, ours, []byte("CA"))
	require.NoError(t, err)
	assert.False(t, again, "nothing to write the second time")
}

func TestInjectRefusesObjectsNotCallingOurService(t *testing.T) {
	obj := object(t, webhooks)
	_, err := Inject(obj, MutatingWebhookConfiguration, Service{Namespace: "ops", Name: "typo"}, []byte("CA"))
	assert.ErrorContains(t, err, "no webhook calls Service ops/typo")

	crd := object(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec: {conversion: {strategy: None}}
`)
	_, err = Inject(crd, CustomResourceDefinition, ours, []byte("CA"))
	assert.ErrorContains(t, err, "no conversion webhook calls Service ops/hooks")

	bad := object(t, `{"webhooks": ["not an object"]}`)
	_, err = Inject(bad, ValidatingWebhookConfiguration, ours, []byte("CA"))
	assert.ErrorContains(t, err, "webhooks[0] is not an object")

	_, err = Inject(obj, Kind("APIService"), ours, []byte("CA"))
	assert.ErrorContains(t, err, `kind "APIService"`)
}

func TestInjectConversionWebhook(t *testing.T) {
	crd := object(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {service: {name: hooks, namespace: ops, path: /convert}}
`)
	changed, err := Inject(crd, CustomResourceDefinition, ours, []byte("CA"))
	require.NoError(t, err)
	assert.True(t, changed)
	got, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("CA")), got)
	path, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service", "path")
	assert.Equal(t, "/convert", path)
}

func TestParseTargets(t *testing.T) {
	got, err := ParseTargets(" ValidatingWebhookConfiguration/a, MutatingWebhookConfiguration/b ,CustomResourceDefinition/c.example.com,")
	require.NoError(t, err)
	assert.Equal(t, []Target{{ValidatingWebhookConfiguration, "a"}, {MutatingWebhookConfiguration, "b"},
		{CustomResourceDefinition, "c.example.com"}}, got)
	for in, want := range map[string]string{
		"a":                                  "want Kind/name",
		"ValidatingWebhookConfiguration/":    "want Kind/name",
		"Secret/x":                           `kind "Secret" is not one of`,
		"ValidatingWebhookConfiguration/a/b": "want Kind/name",
	} {
		_, err := ParseTargets(in)
		assert.ErrorContains(t, err, want, in)
	}
}
