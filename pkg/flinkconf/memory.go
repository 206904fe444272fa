package flinkconf

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Flink's memory syntax: a number with an optional unit, all units binary (m = MiB).
var flinkMemory = regexp.MustCompile(`^\s*(\d+)\s*(b|bytes|k|kb|kibibytes|m|mb|mebibytes|g|gb|gibibytes|t|tb|tebibytes)?\s*$`)

var flinkUnitBytes = map[string]int64{
	"": 1, "b": 1, "bytes": 1,
	"k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}

// MemoryBytes reads the legacy resource.memory field: Flink's syntax ("2048m", "1g", case
// insensitive, binary units, as upstream hands it to Flink) or else a Kubernetes quantity
// ("2Gi", "1500Mi").
func MemoryBytes(s string) (int64, error) {
	if m := flinkMemory.FindStringSubmatch(strings.ToLower(s)); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err == nil {
			return n * flinkUnitBytes[m[2]], nil
		}
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is neither a Flink memory size (2048m, 1g) nor a Kubernetes quantity (2Gi)", s)
	}
	return q.Value(), nil
}

// FlinkMemory renders bytes in Flink's syntax, in the largest whole binary unit.
func FlinkMemory(bytes int64) string {
	switch {
	case bytes%(1<<30) == 0:
		return fmt.Sprintf("%dg", bytes>>30)
	case bytes%(1<<20) == 0:
		return fmt.Sprintf("%dm", bytes>>20)
	case bytes%(1<<10) == 0:
		return fmt.Sprintf("%dk", bytes>>10)
	default:
		return fmt.Sprintf("%db", bytes)
	}
}

// formatCPU renders cores as Flink reads them ("1.0", "0.5").
func formatCPU(cores float64) string {
	s := strconv.FormatFloat(cores, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// MemoryValue is the bytes of a memory quantity in resources. A lowercase "m" suffix is the
// Kubernetes milli prefix, so "2048m" would be two bytes; upstream's own examples write
// memory: "2048m" meaning Flink's 2048 MiB, and nobody sizes a container in millibytes, so
// such quantities are read in Flink's syntax.
func MemoryValue(q resource.Quantity) int64 {
	s := q.String()
	if strings.HasSuffix(s, "m") {
		if n, err := strconv.ParseInt(strings.TrimSuffix(s, "m"), 10, 64); err == nil {
			return n << 20
		}
	}
	return q.Value()
}
