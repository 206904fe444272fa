package flinkdeployment

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// clusterInfo's totals as upstream computes and formats them (Java doubles, bytes).
func TestClusterResources(t *testing.T) {
	for _, c := range []struct {
		name         string
		conf         flinkconf.Config
		taskManagers int
		cpu, memory  string
	}{
		{"the capture's spec: 0.5 cpu and 1024m each, one TaskManager", flinkconf.Config{"kubernetes.jobmanager.cpu.amount": "0.5", "kubernetes.taskmanager.cpu.amount": "0.5",
			"jobmanager.memory.process.size": "1024m", "taskmanager.memory.process.size": "1024m"}, 1, "1.0", "2147483648"},
		{"no TaskManager registered yet", flinkconf.Config{"kubernetes.jobmanager.cpu.amount": "0.5", "jobmanager.memory.process.size": "1g",
			"taskmanager.memory.process.size": "1g"}, 0, "0.5", "1073741824"},
		{"Flink's defaults: 1 cpu per JobManager, a TaskManager's slots as its cpu", flinkconf.Config{"taskmanager.numberOfTaskSlots": "4",
			"kubernetes.jobmanager.replicas": "2"}, 3, "14.0", ""},
		{"large totals in Java's exponent form", flinkconf.Config{"kubernetes.jobmanager.cpu.amount": "1", "kubernetes.taskmanager.cpu.amount": "1"},
			10_000_000, "1.0000001E7", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cpu, memory, known := clusterResources(c.conf, c.taskManagers)
			assert.Equal(t, c.cpu, cpu)
			assert.Equal(t, c.memory, memory)
			assert.Equal(t, c.memory != "", known)
		})
	}
}
