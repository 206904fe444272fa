package v1beta1

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestFlinkConfigurationFlatten(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    map[string]string
		wantErr string
	}{
		{
			name: "flat string keys",
			yaml: `{taskmanager.numberOfTaskSlots: "2", state.savepoints.dir: "file:///flink-data/savepoints"}`,
			want: map[string]string{"taskmanager.numberOfTaskSlots": "2", "state.savepoints.dir": "file:///flink-data/savepoints"},
		},
		{
			name: "non-string scalars",
			yaml: "taskmanager.numberOfTaskSlots: 2\nhigh-availability.enabled: true\ncpu.factor: 1.5\n",
			want: map[string]string{"taskmanager.numberOfTaskSlots": "2", "high-availability.enabled": "true", "cpu.factor": "1.5"},
		},
		{
			name: "nested maps and mixed forms",
			yaml: "state:\n  savepoints:\n    dir: s3://b/sp\n  checkpoints.dir: s3://b/cp\nexecution.checkpointing.interval: 10s\n",
			want: map[string]string{"state.savepoints.dir": "s3://b/sp", "state.checkpoints.dir": "s3://b/cp", "execution.checkpointing.interval": "10s"},
		},
		{
			name: "lists use Flink's ; separator",
			yaml: "env.java.opts.all: [-Xss2m, -XX:+UseG1GC]\n",
			want: map[string]string{"env.java.opts.all": "-Xss2m;-XX:+UseG1GC"},
		},
		{
			name: "nulls are left out",
			yaml: "a: null\nb: x\n",
			want: map[string]string{"b": "x"},
		},
		{
			name: "empty",
			yaml: "{}",
			want: map[string]string{},
		},
		{
			name:    "flat and nested duplicate is an error naming the key",
			yaml:    "a.b: \"1\"\na:\n  b: \"2\"\n",
			wantErr: `key "a.b" is given more than once`,
		},
		{
			name:    "maps inside lists are rejected",
			yaml:    "a: [{b: c}]\n",
			wantErr: "a[0]: lists may hold only scalars",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := yaml.YAMLToJSON([]byte(tt.yaml))
			require.NoError(t, err)
			var cfg FlinkConfiguration
			require.NoError(t, json.Unmarshal(raw, &cfg))
			got, err := cfg.Flatten()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFlinkConfigurationRoundTripPreservesInput(t *testing.T) {
	in := []byte(`{"spec":{"flinkConfiguration":{"state":{"savepoints":{"dir":"x"}},"taskmanager.numberOfTaskSlots":2}}}`)
	var dep FlinkDeployment
	require.NoError(t, json.Unmarshal(in, &dep))
	out, err := json.Marshal(dep.Spec.FlinkConfiguration)
	require.NoError(t, err)
	assert.JSONEq(t, `{"state":{"savepoints":{"dir":"x"}},"taskmanager.numberOfTaskSlots":2}`, string(out))

	copied := dep.DeepCopy()
	copied.Spec.FlinkConfiguration.Raw[2] = 'X'
	assert.NotEqual(t, copied.Spec.FlinkConfiguration.Raw, dep.Spec.FlinkConfiguration.Raw, "deep copy must not share bytes")
}

func TestFlinkConfigurationRejectsNonObjects(t *testing.T) {
	for _, in := range []string{`"a=b"`, `[1,2]`, `42`} {
		var cfg FlinkConfiguration
		err := json.Unmarshal([]byte(in), &cfg)
		require.ErrorContains(t, err, "flinkConfiguration must be an object", in)
	}
}

func TestNewFlinkConfiguration(t *testing.T) {
	cfg := NewFlinkConfiguration(map[string]string{"a.b": "1"})
	flat, err := cfg.Flatten()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a.b": "1"}, flat)
	assert.True(t, NewFlinkConfiguration(nil).IsEmpty())
	assert.Equal(t, []string{"a.b"}, cfg.Keys())
}
