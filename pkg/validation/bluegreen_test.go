package validation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// TestValidateBlueGreenDeployment: upstream's blue/green resources are valid; a bad template,
// option, ingress or name is reported under the blue/green resource's own field paths.
func TestValidateBlueGreenDeployment(t *testing.T) {
	v := &Validator{}
	dir := filepath.Join("..", "..", "test", "crd", "testdata", "upstream", "e2e-tests", "data")
	for _, f := range []string{"bluegreen-ingress.yaml", "bluegreen-laststate.yaml", "bluegreen-stateless.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		data = []byte(strings.ReplaceAll(string(data), "STREAMING_EXAMPLES_JAR_URL", "https://repo.example.com/flink-examples-streaming.jar"))
		bg := &flinkv1beta1.FlinkBlueGreenDeployment{}
		require.NoError(t, yaml.Unmarshal(data, bg), f)
		assert.Empty(t, v.ValidateBlueGreenDeployment(bg), f)
	}

	bg := &flinkv1beta1.FlinkBlueGreenDeployment{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: a-name-that-is-too-long-for-its-green-child-x}
spec:
  configuration: {kubernetes.operator.bluegreen.deployment-deletion.delay: "-1s"}
  ingress: {template: "{{name}}.{{cluster}}.example.com"}
  template:
    spec:
      image: flink:1.20
      flinkVersion: v1_20
      serviceAccount: flink
      jobManager: {resource: {memory: 1g, cpu: 1}}
      taskManager: {resource: {memory: 1g, cpu: 1}}
      job: {jarURI: "local:///job.jar", parallelism: 0}
`), bg))
	var got []string
	for _, e := range v.ValidateBlueGreenDeployment(bg) {
		got = append(got, e.Error())
	}
	joined := strings.Join(got, "\n")
	assert.Contains(t, joined, `spec.configuration[kubernetes.operator.bluegreen.deployment-deletion.delay]: Invalid value: "-1s"`)
	assert.Contains(t, joined, `spec.ingress.template: Invalid value: "{{name}}.{{cluster}}.example.com"`)
	assert.Contains(t, joined, `metadata.name: Invalid value: "a-name-that-is-too-long-for-its-green-child-x": the children are named <name>-blue and <name>-green`)
	assert.Contains(t, joined, `spec.template.spec.job.parallelism: Invalid value: 0`)
	assert.NotContains(t, joined, "\nspec.job", "no path outside the template")
}
