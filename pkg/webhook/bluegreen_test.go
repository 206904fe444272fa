package webhook

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const invalidBlueGreen = `
apiVersion: flink.apache.org/v1beta1
kind: FlinkBlueGreenDeployment
metadata: {name: broken-bg, namespace: webhooks}
spec:
  configuration: {kubernetes.operator.bluegreen.abort.grace-period: soon}
  template:
    spec:
      image: flink:1.20
      flinkConfiguration: {kubernetes.cluster-id: mine}
      jobManager: {resource: {memory: 1g, cpu: 1}}
      taskManager: {resource: {memory: 1g, cpu: 1}}
      job: {jarURI: "local:///job.jar", parallelism: 1}
`

var invalidBlueGreenErrors = []string{
	`admission webhook "vflinkbluegreendeployment-v1beta1.flink.apache.org" denied the request`,
	`spec.configuration[kubernetes.operator.bluegreen.abort.grace-period]: Invalid value: "soon": not a duration`,
	`spec.template.spec.flinkVersion: Required value: one of v1_15`,
	`spec.template.spec.serviceAccount: Required value`,
	`spec.template.spec.flinkConfiguration[kubernetes.cluster-id]: Forbidden`,
}

// testBlueGreenWebhook runs in TestWebhooks (the package's one control plane with webhooks):
// a FlinkBlueGreenDeployment's template is validated as a FlinkDeployment, errors named by the
// template's field paths, and a valid one is admitted.
func testBlueGreenWebhook(t *testing.T, c client.Client) {
	ctx := context.Background()
	err := c.Create(ctx, object(t, invalidBlueGreen))
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	for _, want := range invalidBlueGreenErrors {
		assert.Contains(t, err.Error(), want)
	}

	require.NoError(t, c.Create(ctx, object(t, validBlueGreen)))
}

const validBlueGreen = `
apiVersion: flink.apache.org/v1beta1
kind: FlinkBlueGreenDeployment
metadata: {name: valid-bg, namespace: webhooks}
spec:
  configuration: {kubernetes.operator.bluegreen.abort.grace-period: "10 min"}
  template:
    spec:
      image: flink:1.20
      flinkVersion: v1_20
      serviceAccount: flink
      jobManager: {resource: {memory: 1g, cpu: 1}}
      taskManager: {resource: {memory: 1g, cpu: 1}}
      job: {jarURI: "local:///job.jar", parallelism: 1}
`
