package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

func fastIntervals() Intervals {
	return Intervals{Reconcile: time.Second, ProgressCheck: 100 * time.Millisecond}
}

func newDeployment(t *testing.T, ns, name string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
spec:
  image: flink:1.20
  flinkVersion: v1_20
  serviceAccount: flink
  flinkConfiguration: {state.checkpoints.dir: "file:///cp", state.savepoints.dir: "file:///sp", taskmanager.numberOfTaskSlots: "2"}
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
  job: {jarURI: "local:///opt/flink/examples/streaming/TopSpeedWindowing.jar", parallelism: 2, upgradeMode: savepoint}
`), dep))
	dep.Namespace, dep.Name = ns, name
	return dep
}

const phaseJobID = "0123456789abcdef0123456789abcdef"

func eventWithReason(events []string, reason string) bool {
	for _, e := range events {
		if strings.Contains(e, " "+reason+" ") {
			return true
		}
	}
	return false
}

func newBlueGreen(t *testing.T, ns, name, abortGrace string) *flinkv1beta1.FlinkBlueGreenDeployment {
	t.Helper()
	bg := &flinkv1beta1.FlinkBlueGreenDeployment{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(fmt.Sprintf(`
spec:
  configuration:
    kubernetes.operator.bluegreen.abort.grace-period: %q
    kubernetes.operator.bluegreen.reconciliation.reschedule-interval: "200ms"
    kubernetes.operator.bluegreen.deployment-deletion.delay: "0ms"
  ingress: {template: "{{name}}.{{namespace}}.example.com"}
  template:
    metadata: {labels: {team: orders}}
    spec:
      image: flink:1.20
      flinkVersion: v1_20
      serviceAccount: flink
      flinkConfiguration: {state.checkpoints.dir: "file:///cp", state.savepoints.dir: "file:///sp", taskmanager.numberOfTaskSlots: "2"}
      jobManager: {resource: {memory: 1g, cpu: 1}}
      taskManager: {resource: {memory: 1g, cpu: 1}}
      job: {jarURI: "local:///opt/flink/examples/streaming/TopSpeedWindowing.jar", parallelism: 2, upgradeMode: savepoint}
`, abortGrace)), bg))
	bg.Namespace, bg.Name = ns, name
	return bg
}

func getBlueGreen(t *testing.T, c client.Client, ns, name string) *flinkv1beta1.FlinkBlueGreenDeployment {
	t.Helper()
	bg := &flinkv1beta1.FlinkBlueGreenDeployment{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, bg))
	return bg
}

func ingressBackend(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	ing := &networkingv1.Ingress{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: native.IngressName(name)}, ing); err != nil {
		return ""
	}
	return ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name
}

// Vertex ids of the scripted jobs (Flink's are 32 hex characters).
const (
	vertexSource = autoscaler.VertexID("bc764cd8ddf7a0cff126f51c16239658")
	vertexMap    = autoscaler.VertexID("0a448493b4782967b150582570326227")
	vertexSink   = autoscaler.VertexID("ea632d67b7d595e5b851708ae9ad79d6")
)

func ptr[T any](v T) *T { return &v }
