package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestValidateRefusesNumbersThatWrap: admission refuses ports outside 1 to
// 65535 and a parallelism needing more standalone TaskManagers than int32 holds, naming the key.
func TestValidateRefusesNumbersThatWrap(t *testing.T) {
	tests := []struct {
		name, patch string
		want        []string
	}{
		{name: "ports in range", patch: `{spec: {flinkConfiguration: {rest.port: "65535", blob.server.port: "1"}}}`},
		{name: "a port that would wrap to 8081", patch: `{spec: {flinkConfiguration: {rest.port: "4294975377"}}}`,
			want: []string{`spec.flinkConfiguration[rest.port]: Invalid value: "4294975377": a port number from 1 to 65535`}},
		{name: "zero, negative and not a number", patch: `{spec: {flinkConfiguration: {jobmanager.rpc.port: "0", blob.server.port: "-1", taskmanager.rpc.port: "50100-50200"}}}`,
			want: []string{
				`spec.flinkConfiguration[jobmanager.rpc.port]: Invalid value: "0": a port number from 1 to 65535`,
				`spec.flinkConfiguration[blob.server.port]: Invalid value: "-1": a port number from 1 to 65535`,
				`spec.flinkConfiguration[taskmanager.rpc.port]: Invalid value: "50100-50200": a port number from 1 to 65535`}},
		{name: "standalone TaskManagers beyond int32", patch: `{spec: {mode: standalone, job: {parallelism: 0}, taskManager: {replicas: null}, flinkConfiguration: {parallelism.default: "4294967298"}}}`,
			want: []string{
				`spec.flinkConfiguration[parallelism.default]: Invalid value: "4294967298": flinkConfiguration parallelism.default: 4294967298 at 1 slots each needs 4294967298 TaskManagers, more than a Deployment can have (2147483647)`,
				`spec.job.parallelism: Invalid value: 0: must be at least 1 unless spec.taskManager.replicas is set`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := messages((&Validator{}).ValidateDeployment(patched(t, validDeployment, tc.patch), nil))
			if tc.want == nil {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
