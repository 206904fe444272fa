package crd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readyColumn is the printer column every kind adds after upstream's: the Ready condition's
// status, what `kubectl wait --for=condition=Ready` waits for.
var readyColumn = apiextensionsv1.CustomResourceColumnDefinition{
	Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`,
}

// kinds are the four kinds' CRD files, upstream's (testdata/upstream/crds) and this project's.
var kinds = []struct{ kind, upstream, ours string }{
	{"FlinkDeployment", "flinkdeployments.flink.apache.org-v1.yml", "flink.apache.org_flinkdeployments.yaml"},
	{"FlinkSessionJob", "flinksessionjobs.flink.apache.org-v1.yml", "flink.apache.org_flinksessionjobs.yaml"},
	{"FlinkStateSnapshot", "flinkstatesnapshots.flink.apache.org-v1.yml", "flink.apache.org_flinkstatesnapshots.yaml"},
	{"FlinkBlueGreenDeployment", "flinkbluegreendeployments.flink.apache.org-v1.yml", "flink.apache.org_flinkbluegreendeployments.yaml"},
}

// TestPrinterColumnsKeepUpstreamsAndAddReady: each kind's printer columns begin with
// upstream's, unchanged and in upstream's order (scripts that read `kubectl get` columns by
// position keep working), then this project's, Ready among them.
func TestPrinterColumnsKeepUpstreamsAndAddReady(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			upstream := readCRD(t, filepath.Join("testdata", "upstream", "crds", k.upstream))
			ours := readCRD(t, filepath.Join("..", "..", "config", "crd", "bases", k.ours))
			uc, oc := upstream.Spec.Versions[0].AdditionalPrinterColumns, ours.Spec.Versions[0].AdditionalPrinterColumns
			require.NotEmpty(t, uc)
			require.Greater(t, len(oc), len(uc))
			for i, c := range uc {
				assert.Equal(t, c.Name, oc[i].Name, "column %d", i)
				assert.Equal(t, c.JSONPath, oc[i].JSONPath, "column %q", c.Name)
				assert.Equal(t, c.Type, oc[i].Type, "column %q", c.Name)
			}
			assert.Contains(t, oc[len(uc):], readyColumn, "added after upstream's columns")
		})
	}
}

const validBlueGreen = `
apiVersion: flink.apache.org/v1beta1
kind: FlinkBlueGreenDeployment
metadata: {name: bg}
spec:
  template:
    spec:
      image: flink:1.20
      flinkVersion: v1_20
      serviceAccount: flink
      jobManager: {resource: {memory: 2048m, cpu: 1}}
      taskManager: {resource: {memory: 2048m, cpu: 1}}
      job: {jarURI: "local:///opt/flink/examples/streaming/StateMachineExample.jar", parallelism: 2, upgradeMode: stateless}
`

// TestKubectlWaitForReadyOnEveryKind: for each kind, `kubectl wait --for=condition=Ready` waits
// for a Ready condition of the current generation, and `kubectl get` shows it in the READY
// column.
func TestKubectlWaitForReadyOnEveryKind(t *testing.T) {
	ctx := context.Background()
	const ns = "ready"
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for _, doc := range []string{validDeployment, validSessionJob, validSnapshot, validBlueGreen} {
		obj := mustObject(t, doc)
		obj.SetNamespace(ns)
		require.NoError(t, env.Client.Create(ctx, obj))
		ref := strings.ToLower(obj.GetKind()) + "/" + obj.GetName()
		t.Run(obj.GetKind(), func(t *testing.T) {
			out, err := env.Kubectl("wait", "-n", ns, ref, "--for=condition=Ready", "--timeout=1s")
			require.Error(t, err, "no Ready condition yet: %s", out)

			// What the operator writes once the resource is ready.
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: obj.GetName()}, got))
			require.NoError(t, unstructured.SetNestedSlice(got.Object, []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "Stable", "message": "ready",
				"observedGeneration": got.GetGeneration(), "lastTransitionTime": "2026-01-01T00:00:00Z",
			}}, "status", "conditions"))
			require.NoError(t, env.Client.Status().Update(ctx, got))

			out, err = env.Kubectl("wait", "-n", ns, ref, "--for=condition=Ready", "--timeout=10s")
			require.NoError(t, err, out)
			assert.Contains(t, out, "condition met")

			out, err = env.Kubectl("get", "-n", ns, ref)
			require.NoError(t, err, out)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			require.Len(t, lines, 2, out)
			header, row := strings.Fields(lines[0]), lines[1]
			assert.Contains(t, header, "READY", out)
			assert.Contains(t, strings.Fields(row), "True", out)
		})
	}
}
