package crd

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flink-operator/flink-operator/test/yamlmerge"
)

const validDeployment = `
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: dep}
spec:
  image: flink:1.20
  flinkVersion: v1_20
  serviceAccount: flink
  jobManager: {resource: {memory: 2048m, cpu: 1}}
  taskManager: {resource: {memory: 2048m, cpu: 1}}
  job: {jarURI: "local:///opt/flink/examples/streaming/StateMachineExample.jar", parallelism: 2, upgradeMode: stateless}
`

const validSessionJob = `
apiVersion: flink.apache.org/v1beta1
kind: FlinkSessionJob
metadata: {name: job}
spec:
  deploymentName: session
  job: {jarURI: "https://example.com/job.jar", parallelism: 1}
`

const validSnapshot = `
apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata: {name: snap}
spec:
  jobReference: {kind: FlinkDeployment, name: dep}
  savepoint: {path: "file:///flink-data/savepoints"}
`

// TestInvalidResourcesAreRejected checks that the schema rejects bad enums, wrong types and
// unknown fields, and that each error names the field (and, for enums, what is allowed).
func TestInvalidResourcesAreRejected(t *testing.T) {
	tests := []struct {
		name  string
		base  string
		patch string // merged into spec
		want  []string
	}{
		{"unknown flinkVersion", validDeployment, `flinkVersion: v9_9`,
			[]string{`spec.flinkVersion`, `Unsupported value: "v9_9"`, `"v1_20"`, `"v2_4"`}},
		{"unknown upgradeMode", validDeployment, `job: {upgradeMode: rolling}`,
			[]string{`spec.job.upgradeMode`, `Unsupported value: "rolling"`, `"last-state"`, `"savepoint"`, `"stateless"`}},
		{"unknown job state", validDeployment, `job: {state: paused}`,
			[]string{`spec.job.state`, `"running"`, `"suspended"`}},
		{"unknown mode", validDeployment, `mode: hybrid`,
			[]string{`spec.mode`, `"native"`, `"standalone"`}},
		{"parallelism not an integer", validDeployment, `job: {parallelism: two}`,
			[]string{`spec.job.parallelism`, `must be of type integer`}},
		{"args not a list", validDeployment, `job: {args: "--input x"}`,
			[]string{`spec.job.args`, `must be of type array`}},
		{"flinkConfiguration not an object", validDeployment, `flinkConfiguration: "a=b"`,
			[]string{`spec.flinkConfiguration`, `must be of type object`}},
		{"legacy cpu not a number", validDeployment, `jobManager: {resource: {cpu: lots}}`,
			[]string{`spec.jobManager.resource.cpu`, `must be of type number`}},
		{"taskManager replicas zero", validDeployment, `taskManager: {replicas: 0}`,
			[]string{`spec.taskManager.replicas`, `greater than or equal to 1`}},
		{"restartNonce not an integer", validDeployment, `restartNonce: soon`,
			[]string{`spec.restartNonce`, `must be of type integer`}},
		{"ingress without template", validDeployment, `ingress: {className: nginx}`,
			[]string{`spec.ingress.template`, `Required value`}},
		{"unknown spec field", validDeployment, `jobb: {}`,
			[]string{`unknown field "spec.jobb"`}},
		{"unknown pod template field", validDeployment, `podTemplate: {spec: {containers: [{name: flink-main-container, imagee: x}]}}`,
			[]string{`unknown field "spec.podTemplate.spec.containers[0].imagee"`}},
		{"session job unknown upgradeMode", validSessionJob, `job: {upgradeMode: fast}`,
			[]string{`spec.job.upgradeMode`, `Unsupported value: "fast"`}},
		{"session job savepointTriggerNonce not an integer", validSessionJob, `job: {savepointTriggerNonce: "x"}`,
			[]string{`spec.job.savepointTriggerNonce`, `must be of type integer`}},
		{"snapshot unknown format", validSnapshot, `savepoint: {formatType: BINARY}`,
			[]string{`spec.savepoint.formatType`, `"CANONICAL"`, `"NATIVE"`}},
		{"snapshot unknown job kind", validSnapshot, `jobReference: {kind: Pod}`,
			[]string{`spec.jobReference.kind`, `"FlinkDeployment"`, `"FlinkSessionJob"`}},
		{"snapshot backoffLimit below -1", validSnapshot, `backoffLimit: -2`,
			[]string{`spec.backoffLimit`, `greater than or equal to -1`}},
		{"snapshot disposeOnDelete not a bool", validSnapshot, `savepoint: {disposeOnDelete: "maybe"}`,
			[]string{`spec.savepoint.disposeOnDelete`, `must be of type boolean`}},
	}

	ctx := context.Background()
	ns := "invalid"
	require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	strict := client.WithFieldValidation(env.Client, metav1.FieldValidationStrict)

	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustObject(t, tt.base)
			var patch map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tt.patch), &patch))
			spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
			obj.Object["spec"] = yamlmerge.Merge(spec, patch)
			obj.SetNamespace(ns)
			obj.SetName(fmt.Sprintf("%s-%d", obj.GetName(), i))

			err := strict.Create(ctx, obj)
			require.Error(t, err, "the API server accepted an invalid %s", obj.GetKind())
			require.True(t, apierrors.IsInvalid(err) || apierrors.IsBadRequest(err), "unexpected error kind: %v", err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}

	// The valid bases themselves are accepted, so the cases above fail for their patch alone.
	for _, base := range []string{validDeployment, validSessionJob, validSnapshot} {
		obj := mustObject(t, base)
		obj.SetNamespace(ns)
		require.NoError(t, strict.Create(ctx, obj))
	}
}

func mustObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
	return obj
}
