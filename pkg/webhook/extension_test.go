package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extvalidator "github.com/flink-operator/flink-operator/pkg/extension/validator"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// labelCustom tells the test's custom validator endpoint what to do with a resource: refuse
// it, or never answer; others are allowed.
const labelCustom = "test.flink-operator.io/custom-validator"

// customValidator is the webhooks' custom validator: a real endpoint on loopback, configured
// as the operator configuration configures it (failurePolicy Fail, the default).
func customValidator(t *testing.T) extvalidator.Validator {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req extvalidator.ValidationRequest
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		var obj metav1.PartialObjectMetadata
		if err == nil {
			err = json.Unmarshal(req.Object, &obj)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ans := extvalidator.ValidationResponse{APIVersion: extvalidator.APIVersion, Kind: extvalidator.KindResponse, UID: req.UID, Allowed: true}
		switch obj.Labels[labelCustom] {
		case "refuse":
			ans.Allowed = false
			ans.Errors = []extvalidator.FieldError{{Field: "spec.taskManager.replicas", Message: "team quota: 2 TaskManagers at most"}}
		case "hang":
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		_ = json.NewEncoder(w).Encode(ans)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	conf := map[string]string{options.ExtensionAllowedHosts.Key: "127.0.0.1",
		options.ExtensionValidators.Key: `[{"name": "quota", "url": "` + srv.URL + `", "timeout": "500 ms"}]`}
	return &extvalidator.Chain{OperatorConfig: func() map[string]string { return conf }}
}

func TestWebhooksCustomValidator(t *testing.T) {
	env, _ := startWebhooks(t)
	ctx := context.Background()
	c := env.Client
	namespace(t, c, "custom")

	t.Run("its field errors join the operator's own in the admission answer", func(t *testing.T) {
		dep := object(t, `
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: quota, namespace: custom, labels: {`+labelCustom+`: refuse}}
spec:
  image: flink:1.20
  flinkVersion: v1_20
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
  job: {jarURI: "local:///job.jar", parallelism: 1}
`)
		err := c.Create(ctx, dep)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `FlinkDeployment.flink.apache.org "quota" is invalid`)
		assert.Contains(t, err.Error(), `spec.serviceAccount: Required value`)
		assert.Contains(t, err.Error(), `spec.taskManager.replicas: Forbidden: custom validator quota: team quota: 2 TaskManagers at most`)
	})

	t.Run("an allowed resource is created", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, object(t, `
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: allowed, namespace: custom}
spec:
  image: flink:1.20
  flinkVersion: v1_20
  serviceAccount: flink
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
  job: {jarURI: "local:///job.jar", parallelism: 1}
`)))
	})

	t.Run("one that times out refuses under failurePolicy Fail", func(t *testing.T) {
		err := c.Create(ctx, object(t, `
apiVersion: flink.apache.org/v1beta1
kind: FlinkSessionJob
metadata: {name: slow, namespace: custom, labels: {`+labelCustom+`: hang}}
spec:
  deploymentName: session
  job: {jarURI: "https://repo.example.com/job.jar", parallelism: 1}
`))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `FlinkSessionJob.flink.apache.org "slow" is invalid`)
		assert.Contains(t, err.Error(), `custom validator quota did not answer (failurePolicy Fail)`)
	})
}
