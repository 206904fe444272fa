package crd

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// schemaNode is what the compatibility check compares at every property path of a CRD schema:
// a manifest means the same to two schemas when every path it uses has the same type and enum.
type schemaNode struct {
	Type string
	Enum string
}

// flattenSchema lists the schema's property paths: ".a.b" for properties, "[]" for array
// items, "{}" for map values.
func flattenSchema(path string, s *apiextensionsv1.JSONSchemaProps, out map[string]schemaNode) {
	var enum []string
	for _, e := range s.Enum {
		enum = append(enum, string(e.Raw))
	}
	sort.Strings(enum)
	out[path] = schemaNode{Type: s.Type, Enum: strings.Join(enum, ",")}
	for name, p := range s.Properties {
		flattenSchema(path+"."+name, &p, out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		flattenSchema(path+"[]", s.Items.Schema, out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		flattenSchema(path+"{}", s.AdditionalProperties.Schema, out)
	}
}

func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.Unmarshal(data, crd), path)
	require.Len(t, crd.Spec.Versions, 1, "%s: one served version", path)
	return crd
}

// embeddedObjectMetaOnly are the ObjectMeta fields upstream's schema lists inside templates that
// this project's schema leaves out, as for every embedded pod template: controller-gen's embedded
// ObjectMeta keeps name, namespace, labels, annotations and finalizers, the fields a template
// can meaningfully set (upstream ignores the rest when it creates the children).
var embeddedObjectMetaOnly = []string{
	"creationTimestamp", "deletionGracePeriodSeconds", "deletionTimestamp", "generateName",
	"generation", "managedFields", "ownerReferences", "resourceVersion", "selfLink", "uid",
}

// isEmbeddedObjectMetaOnly says whether path is one of those fields (or below one) of a
// template's metadata.
func isEmbeddedObjectMetaOnly(path string) bool {
	for _, f := range embeddedObjectMetaOnly {
		if strings.Contains(path, ".metadata."+f) {
			return true
		}
	}
	return false
}

// TestBlueGreenCRDMatchesUpstream compares the generated FlinkBlueGreenDeployment CRD with
// upstream's (copied into testdata/upstream/crds): same names, scope, version and subresources,
// upstream's printer column, and every property path of upstream's schema present here with
// the same type and enum. Additions are limited to the documented ones.
func TestBlueGreenCRDMatchesUpstream(t *testing.T) {
	upstream := readCRD(t, filepath.Join("testdata", "upstream", "crds", "flinkbluegreendeployments.flink.apache.org-v1.yml"))
	ours := readCRD(t, filepath.Join("..", "..", "config", "crd", "bases", "flink.apache.org_flinkbluegreendeployments.yaml"))

	assert.Equal(t, upstream.Name, ours.Name)
	assert.Equal(t, upstream.Spec.Group, ours.Spec.Group)
	assert.Equal(t, upstream.Spec.Scope, ours.Spec.Scope)
	assert.Equal(t, upstream.Spec.Names.Kind, ours.Spec.Names.Kind)
	assert.Equal(t, upstream.Spec.Names.Plural, ours.Spec.Names.Plural)
	assert.Equal(t, upstream.Spec.Names.Singular, ours.Spec.Names.Singular)
	assert.Equal(t, upstream.Spec.Names.ShortNames, ours.Spec.Names.ShortNames)
	assert.Equal(t, []string{"flink"}, ours.Spec.Names.Categories, "category flink, as the other kinds")

	uv, ov := upstream.Spec.Versions[0], ours.Spec.Versions[0]
	assert.Equal(t, uv.Name, ov.Name)
	assert.True(t, ov.Served && ov.Storage)
	assert.Equal(t, uv.Subresources, ov.Subresources)
	columns := map[string]string{}
	for _, c := range ov.AdditionalPrinterColumns {
		columns[c.Name] = c.JSONPath
	}
	for _, c := range uv.AdditionalPrinterColumns {
		assert.Equal(t, c.JSONPath, columns[c.Name], "printer column %q", c.Name)
	}

	want, got := map[string]schemaNode{}, map[string]schemaNode{}
	flattenSchema("", uv.Schema.OpenAPIV3Schema, want)
	flattenSchema("", ov.Schema.OpenAPIV3Schema, got)
	require.Greater(t, len(want), 1000, "upstream's schema has the full FlinkDeploymentSpec")

	for path, w := range want {
		g, ok := got[path]
		if !ok {
			// A template's pod status is never read; upstream's copy has fields of a newer
			// Kubernetes release than the one this project builds with.
			if !isEmbeddedObjectMetaOnly(path) && !strings.Contains(path, ".podTemplate.status.") {
				t.Errorf("%s: missing", path)
			}
			continue
		}
		if path == ".spec.template.spec.flinkConfiguration" {
			// Upstream leaves the type open (x-kubernetes-preserve-unknown-fields); this project
			// requires an object, as for FlinkDeployment (docs/compatibility.md).
			assert.Equal(t, "object", g.Type, path)
			continue
		}
		assert.Equal(t, w, g, path)
	}

	// Additions outside embedded pod templates (whose Kubernetes fields are newer than
	// upstream's copy) are the root's apiVersion/kind/metadata, the standard status fields and
	// the history of operations (docs/compatibility.md).
	allowedExtra := map[string]bool{".apiVersion": true, ".kind": true, ".metadata": true, ".status.observedGeneration": true}
	for path := range got {
		if _, ok := want[path]; ok || allowedExtra[path] || strings.Contains(path, "podTemplate") ||
			strings.HasPrefix(path, ".status.conditions") || strings.HasPrefix(path, ".status.operations") {
			continue
		}
		t.Errorf("%s: not in upstream's schema", path)
	}

	// The states are upstream's, spelled as upstream.
	assert.Equal(t, want[".status.blueGreenState"], got[".status.blueGreenState"])
	assert.Equal(t, fmt.Sprint(7), fmt.Sprint(len(strings.Split(got[".status.blueGreenState"].Enum, ","))))
}
