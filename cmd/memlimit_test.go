package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
)

// TestMemoryLimitFromContainer: the Go heap's soft limit follows the
// container's memory limit (90 %), and an explicit GOMEMLIMIT wins.
func TestMemoryLimitFromContainer(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	const limit = 512 << 20
	ratio := memoryLimitRatio
	want := int64(float64(limit) * ratio)

	assert.Equal(t, want, setMemoryLimit(logr.Discard(), memlimit.Limit(limit)))
	assert.Equal(t, want, debug.SetMemoryLimit(-1))

	debug.SetMemoryLimit(math.MaxInt64)
	assert.Equal(t, int64(math.MaxInt64), setMemoryLimit(logr.Discard(), func() (uint64, error) { return 0, memlimit.ErrNoLimit }),
		"no container limit: none")

	t.Setenv("GOMEMLIMIT", "100MiB") // read by the runtime at start only; here it means "set by the user"
	assert.Equal(t, int64(math.MaxInt64), setMemoryLimit(logr.Discard(), memlimit.Limit(limit)), "GOMEMLIMIT wins")
}
