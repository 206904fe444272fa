package webhook

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// TestWebhookWarnsUnhonouredOptions: an Apache operator option with no
// effect here is admitted (upstream accepts it) with a warning naming it and saying why; an
// honoured one draws none.
func TestWebhookWarnsUnhonouredOptions(t *testing.T) {
	ctx := context.Background()
	const restReady = "spec.flinkConfiguration.kubernetes.operator.observer.rest-ready.delay (an Apache operator option) is not honoured by this operator and is ignored: "

	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: app, namespace: team-a}
spec:
  image: flink:1.20
  flinkVersion: v1_20
  serviceAccount: flink
  flinkConfiguration:
    kubernetes.operator.observer.rest-ready.delay: 30 s
    kubernetes.operator.savepoint.format.type: NATIVE
    state.savepoints.dir: file:///sp
  jobManager: {resources: {requests: {memory: 1Gi, cpu: 1}}}
  taskManager: {resources: {requests: {memory: 1Gi, cpu: 1}}}
  job: {jarURI: "local:///job.jar", parallelism: 1}
`), dep))
	d := &deploymentValidator{v: &validation.Validator{}}
	warnings, err := d.ValidateCreate(ctx, dep)
	require.NoError(t, err)
	require.Len(t, warnings, 1, "%q", warnings)
	assert.Contains(t, warnings[0], restReady)
	warnings, err = d.ValidateUpdate(ctx, dep.DeepCopy(), dep)
	require.NoError(t, err)
	require.Len(t, warnings, 1, "%q", warnings)
	assert.Contains(t, warnings[0], restReady)

	scheme := runtime.NewScheme()
	require.NoError(t, flinkv1beta1.AddToScheme(scheme))
	session := dep.DeepCopy()
	session.Name, session.Spec.Job = "session", nil
	s := &sessionJobValidator{v: &validation.Validator{AllowedJarSchemes: []string{"https"}},
		reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(session).Build()}
	job := &flinkv1beta1.FlinkSessionJob{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: job, namespace: team-a}
spec:
  deploymentName: session
  flinkConfiguration: {kubernetes.operator.observer.rest-ready.delay: "10 s"}
  job: {jarURI: "https://repo.example.com/job.jar", parallelism: 1}
`), job))
	warnings, err = s.ValidateCreate(ctx, job)
	require.NoError(t, err)
	require.Len(t, warnings, 1, "%q", warnings)
	assert.Contains(t, warnings[0], "spec.flinkConfiguration.kubernetes.operator.observer.rest-ready.delay (an Apache operator option) is not honoured")
}
