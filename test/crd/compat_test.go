package crd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// upstreamDir holds the upstream operator's examples and e2e data (their YAML files, copied
// from its repository into testdata so that a plain clone runs this test).
func upstreamDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("testdata", "upstream")
	_, err := os.Stat(dir)
	require.NoError(t, err, "test/crd/testdata/upstream holds the upstream examples")
	return dir
}

// notCustomResources are the files the upstream README names as not holding custom resources.
var notCustomResources = []string{
	"examples/kustomize/",
	"examples/flink-tls-example/pre-install.yaml",
}

// inScopeKinds are the kinds this operator serves: all of upstream's.
var inScopeKinds = map[string]bool{
	"FlinkDeployment": true, "FlinkSessionJob": true, "FlinkStateSnapshot": true, "FlinkBlueGreenDeployment": true,
}

type upstreamCR struct {
	file string
	obj  *unstructured.Unstructured
}

func loadUpstreamCRs(t *testing.T) []upstreamCR {
	t.Helper()
	base := upstreamDir(t)
	var files []string
	for _, sub := range []string{"examples", filepath.Join("e2e-tests", "data")} {
		err := filepath.WalkDir(filepath.Join(base, sub), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			rel, _ := filepath.Rel(base, path)
			for _, skip := range notCustomResources {
				if strings.HasPrefix(rel, skip) {
					return nil
				}
			}
			files = append(files, path)
			return nil
		})
		require.NoError(t, err)
	}
	sort.Strings(files)

	var crs []upstreamCR
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		rel, _ := filepath.Rel(base, f)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err, rel)
			}
			if m == nil {
				continue
			}
			obj := &unstructured.Unstructured{Object: m}
			if obj.GroupVersionKind().Group != "flink.apache.org" || !inScopeKinds[obj.GetKind()] {
				continue
			}
			crs = append(crs, upstreamCR{file: rel, obj: obj})
		}
	}
	return crs
}

// TestUpstreamResourcesApplyUnchanged creates every upstream example and e2e custom resource with
// strict field validation, reads it back and checks that nothing was pruned or changed.
func TestUpstreamResourcesApplyUnchanged(t *testing.T) {
	ctx := context.Background()
	crs := loadUpstreamCRs(t)

	kinds := map[string]int{}
	for _, cr := range crs {
		kinds[cr.obj.GetKind()]++
	}
	// Guards against a test that passes by finding nothing.
	require.GreaterOrEqual(t, kinds["FlinkDeployment"], 20, "FlinkDeployments found: %v", kinds)
	require.GreaterOrEqual(t, kinds["FlinkSessionJob"], 5, "FlinkSessionJobs found: %v", kinds)
	require.GreaterOrEqual(t, kinds["FlinkStateSnapshot"], 5, "FlinkStateSnapshots found: %v", kinds)
	require.GreaterOrEqual(t, kinds["FlinkBlueGreenDeployment"], 3, "FlinkBlueGreenDeployments found: %v", kinds)
	t.Logf("upstream custom resources: %v", kinds)

	strict := client.WithFieldValidation(env.Client, metav1.FieldValidationStrict)
	for i, cr := range crs {
		name := fmt.Sprintf("%s/%s/%s", cr.file, cr.obj.GetKind(), cr.obj.GetName())
		t.Run(name, func(t *testing.T) {
			ns := fmt.Sprintf("compat-%d", i)
			require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(ctx,
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))

			want := cr.obj.DeepCopy()
			want.SetNamespace(ns)
			created := want.DeepCopy()
			require.NoError(t, strict.Create(ctx, created), "strict create of %s", name)

			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(want.GroupVersionKind())
			require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(want), got))

			for _, diff := range missingOrChanged("", want.Object, got.Object) {
				t.Errorf("%s: %s", name, diff)
			}
		})
	}
}

// missingOrChanged lists every field of want that got lacks or holds a different value.
// Fields got has in addition (server defaults, metadata) are allowed.
func missingOrChanged(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %T", path, got)}
		}
		var diffs []string
		for k, wv := range w {
			gv, present := g[k]
			if !present {
				if wv == nil {
					continue // explicit nulls are dropped by the API server, as for any object
				}
				diffs = append(diffs, fmt.Sprintf("%s.%s: pruned", path, k))
				continue
			}
			diffs = append(diffs, missingOrChanged(path+"."+k, wv, gv)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, missingOrChanged(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return diffs
	default:
		if !scalarEqual(want, got) {
			return []string{fmt.Sprintf("%s: want %v (%T), got %v (%T)", path, want, want, got, got)}
		}
		return nil
	}
}

// scalarEqual compares JSON scalars, treating integer and float forms of one number as equal.
func scalarEqual(a, b any) bool {
	if fa, ok := asFloat(a); ok {
		fb, ok := asFloat(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

func TestMissingOrChanged(t *testing.T) {
	want := map[string]any{"a": map[string]any{"b": int64(1), "c": []any{"x"}}, "n": nil}
	assert.Empty(t, missingOrChanged("", want, map[string]any{"a": map[string]any{"b": float64(1), "c": []any{"x"}, "extra": true}}))
	assert.Equal(t, []string{".a.b: pruned"}, missingOrChanged("", want, map[string]any{"a": map[string]any{"c": []any{"x"}}}))
	assert.Len(t, missingOrChanged("", want, map[string]any{"a": map[string]any{"b": int64(2), "c": []any{"x"}}}), 1)
}
