package main

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

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

func TestMemoryLimitFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name        string
		live        uint64
		ceiling     int64
		limited     bool
		want        int64
		wantLimited bool
	}{
		{"a small heap: the ceiling", 20 * mib, math.MaxInt64, false, math.MaxInt64, false},
		{"a small heap: the container's limit", 20 * mib, 512 * mib, false, 512 * mib, false},
		{"between the lines, not limited: as it is", 56 * mib, math.MaxInt64, false, math.MaxInt64, false},
		{"between the lines, limited: the goal", 56 * mib, math.MaxInt64, true, 84*mib + nonHeapAllowance, true},
		// 100 MiB live at GOGC 50: a 150 MiB goal, and the allowance.
		{"a large heap: the goal and the allowance", 100 * mib, math.MaxInt64, false, 150*mib + nonHeapAllowance, true},
		{"never above the container's limit", 100 * mib, 160 * mib, false, 160 * mib, true},
		{"shrunk below the lower line: the ceiling again", 47 * mib, math.MaxInt64, true, math.MaxInt64, false},
	} {
		got, limited := memoryLimitFor(tc.live, defaultGCPercent, tc.ceiling, tc.limited)
		assert.Equal(t, tc.want, got, tc.name)
		assert.Equal(t, tc.wantLimited, limited, tc.name)
	}
}

// TestMemoryTunerFollowsTheLiveHeap: no limit of its own while the live heap is small, the heap
// goal and the allowance once it is large, and the ceiling again when it has shrunk well below.
func TestMemoryTunerFollowsTheLiveHeap(t *testing.T) {
	const mib = 1 << 20
	heaps := []uint64{10 * mib, 30 * mib, 70 * mib, 120 * mib, 56 * mib, 40 * mib}
	var mu sync.Mutex
	var seen int
	var limits []int64
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tuner := &memoryTuner{period: time.Millisecond, percent: defaultGCPercent, ceiling: math.MaxInt64,
		liveHeap: func() uint64 {
			mu.Lock()
			defer mu.Unlock()
			h := heaps[min(seen, len(heaps)-1)]
			if seen++; seen == len(heaps)+1 {
				close(done)
			}
			return h
		},
		setLimit: func(l int64) int64 { mu.Lock(); defer mu.Unlock(); limits = append(limits, l); return 0 }}
	go tuner.run(ctx)
	<-done
	cancel()
	mu.Lock()
	defer mu.Unlock()
	goal := func(live int64) int64 { return live*3/2 + nonHeapAllowance }
	assert.Equal(t, []int64{goal(70 * mib), goal(120 * mib), goal(56 * mib), math.MaxInt64}, limits)
}

// TestMemoryTunerLeavesGOMEMLIMIT: GOMEMLIMIT set wins over the tuner; GOGC=off leaves nothing to
// tune by.
func TestMemoryTunerLeavesGOMEMLIMIT(t *testing.T) {
	gomemlimit := func(k string) string {
		if k == "GOMEMLIMIT" {
			return "400MiB"
		}
		return ""
	}
	assert.Nil(t, newMemoryTuner(gomemlimit, defaultGCPercent, 400<<20))
	assert.Nil(t, newMemoryTuner(func(string) string { return "" }, -1, math.MaxInt64), "GOGC=off")
	tuner := newMemoryTuner(func(string) string { return "" }, defaultGCPercent, 512<<20)
	assert.Equal(t, int64(512<<20), tuner.ceiling)
	runtime.GC()
	assert.NotZero(t, liveHeapBytes(), "the runtime reports a live heap")
}
