package native

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// TestBuildRefusesNumbersThatWrap: ports outside 1 to 65535 and a
// TaskManager count beyond int32 are refused with the key named, never cast into another
// number (2^32 + 8081 would have become port 8081).
func TestBuildRefusesNumbersThatWrap(t *testing.T) {
	for key, value := range map[string]string{
		"rest.port":            "4294975377", // 2^32 + 8081
		"jobmanager.rpc.port":  "0",
		"blob.server.port":     "65536",
		"taskmanager.rpc.port": "-6122",
	} {
		t.Run(key, func(t *testing.T) {
			dep := deployment(t, nativeApp)
			dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{key: value})
			_, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
			assert.EqualError(t, err, "flinkConfiguration "+key+": "+value+" is not a port number (1 to 65535)")
		})
	}
	t.Run("the largest port", func(t *testing.T) {
		dep := deployment(t, nativeApp)
		dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{"rest.port": "65535"})
		c, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(65535), c.RESTService.Spec.Ports[0].Port)
	})

	t.Run("TaskManagers of a standalone cluster", func(t *testing.T) {
		dep := deployment(t, `
metadata: {name: orders, namespace: ns}
spec:
  flinkVersion: v1_20
  mode: standalone
  flinkConfiguration: {parallelism.default: "4294967298", taskmanager.numberOfTaskSlots: "1"}
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
`)
		_, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
		assert.EqualError(t, err, "flinkConfiguration parallelism.default: 4294967298 at 1 slots each needs 4294967298 TaskManagers, more than a Deployment can have (2147483647)")
	})
}
