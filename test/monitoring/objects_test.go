package monitoring

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// TestShippedObjectsApplyStrictly installs what make deploy applies with config/base's components
// line uncommented (and config/manifests/prometheus for OLM installs, and the dashboard ConfigMap) into an API server that
// has the Prometheus Operator's CRDs: every object must pass their schemas strictly, the
// ServiceMonitor must select the metrics Service and its port, and Prometheus's ServiceAccount
// must be bound to the metrics-reader ClusterRole of the same install.
func TestShippedObjectsApplyStrictly(t *testing.T) {
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	install := buildWithMonitoring(t, root)
	bundleExtras := build(t, filepath.Join(root, "config", "manifests", "prometheus"))
	dashboard := build(t, filepath.Join(root, "config", "grafana"))

	var monitor, service *unstructured.Unstructured
	var binding, reader *unstructured.Unstructured
	for _, o := range install {
		switch {
		case o.GetKind() == "ServiceMonitor":
			monitor = o
		case o.GetKind() == "Service" && strings.HasSuffix(o.GetName(), "metrics-service"):
			service = o
		case o.GetKind() == "ClusterRoleBinding" && strings.HasSuffix(o.GetName(), "metrics-reader-prometheus"):
			binding = o
		case o.GetKind() == "ClusterRole" && strings.HasSuffix(o.GetName(), "metrics-reader"):
			reader = o
		}
	}
	require.NotNil(t, monitor, "ServiceMonitor in the install")
	require.NotNil(t, service, "metrics Service in the install")
	require.NotNil(t, binding, "metrics-reader binding in the install")
	require.NotNil(t, reader, "metrics-reader ClusterRole in the install")

	t.Run("ServiceMonitor selects the metrics Service and port", func(t *testing.T) {
		selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
		require.NotEmpty(t, selector)
		for k, v := range selector {
			assert.Equal(t, v, service.GetLabels()[k], "Service label %s", k)
		}
		assert.Equal(t, service.GetNamespace(), monitor.GetNamespace(), "same namespace (no namespaceSelector)")
		endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
		require.Len(t, endpoints, 1)
		ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
		var names []string
		for _, p := range ports {
			names = append(names, p.(map[string]any)["name"].(string))
		}
		ep := endpoints[0].(map[string]any)
		assert.Contains(t, names, ep["port"])
		assert.Equal(t, "https", ep["scheme"], "--metrics-secure serves HTTPS")
		assert.NotEmpty(t, ep["bearerTokenFile"], "--metrics-secure needs a token")
	})
	t.Run("Prometheus is bound to this install's metrics-reader", func(t *testing.T) {
		name, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name")
		assert.Equal(t, reader.GetName(), name)
	})
	t.Run("the OLM install's set has the ServiceMonitor and PrometheusRule, and no binding", func(t *testing.T) {
		var kinds []string
		for _, o := range bundleExtras {
			kinds = append(kinds, o.GetKind())
		}
		assert.ElementsMatch(t, []string{"ServiceMonitor", "PrometheusRule"}, kinds)
	})

	env := kubeenv.Start(t)
	crds, err := MonitoringCRDs(ctx, root)
	require.NoError(t, err)
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true})
	require.NoError(t, err)
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flink-operator-system"}}))
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "olm-install"}}))
	apply := func(o *unstructured.Unstructured) {
		t.Run(o.GetKind()+" "+o.GetName(), func(t *testing.T) {
			// Strict: an unknown or misplaced field is an error, not a silently dropped value.
			require.NoError(t, env.Client.Create(ctx, o, client.FieldValidation(metav1.FieldValidationStrict)))
		})
	}
	for _, o := range []*unstructured.Unstructured{monitor, binding} {
		apply(o)
	}
	for _, o := range install {
		if o.GetKind() == "PrometheusRule" {
			apply(o)
		}
	}
	for _, o := range bundleExtras { // as OLM creates them: in the namespace the operator is installed in
		o.SetNamespace("olm-install")
		apply(o)
	}
	for _, o := range dashboard {
		o.SetNamespace("flink-operator-system")
		apply(o)
	}
}

// buildWithMonitoring builds config/default (make deploy) with config/base's commented
// components line turned on, as docs/operations/metrics.md tells users to.
func buildWithMonitoring(t *testing.T, root string) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "config"), os.DirFS(filepath.Join(root, "config"))))
	path := filepath.Join(dir, "config", "base", "kustomization.yaml")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	const line = "#components: [../prometheus]"
	require.Contains(t, string(raw), line, "config/base lost the line that turns monitoring on")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(raw), line, line[1:], 1)), 0o600))
	return build(t, filepath.Join(dir, "config", "default"))
}

func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize build %s", dir)
	var out []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		raw, err := r.MarshalJSON()
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(raw))
		out = append(out, u)
	}
	return out
}
