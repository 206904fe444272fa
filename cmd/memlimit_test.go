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

// TestGCPercent: without GOGC the collector's target is defaultGCPercent; GOGC set wins (the
// runtime has read it at start: the percentage in effect stays).
func TestGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	none := func(string) string { return "" }
	assert.Equal(t, defaultGCPercent, setGCPercent(logr.Discard(), none))
	assert.Equal(t, defaultGCPercent, debug.SetGCPercent(defaultGCPercent))

	debug.SetGCPercent(200) // as GOGC=200 makes the runtime start
	gogc := func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	}
	assert.Equal(t, 200, setGCPercent(logr.Discard(), gogc))
	assert.Equal(t, 200, debug.SetGCPercent(200), "GOGC wins")
}
