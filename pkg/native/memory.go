package native

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// normalizeMemory rewrites milli-suffixed memory quantities as flinkconf.MemoryValue reads them,
// so a container gets the memory its Flink process is configured with.
func normalizeMemory(list corev1.ResourceList) {
	if q, ok := list[corev1.ResourceMemory]; ok {
		list[corev1.ResourceMemory] = *resource.NewQuantity(flinkconf.MemoryValue(q), resource.BinarySI)
	}
}
