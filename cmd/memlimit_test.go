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

func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		live    uint64
		current int
		want    int
	}{
		{live: 0, current: 100, want: 100},
		{live: 20 << 20, current: 50, want: 100},
		{live: 50 << 20, current: 100, want: 100}, // between the lines: as it is
		{live: 50 << 20, current: 50, want: 50},
		{live: 64 << 20, current: 100, want: 50},
		{live: 129 << 20, current: 100, want: 50},
		{live: 48<<20 - 1, current: 50, want: 100},
	} {
		assert.Equal(t, tc.want, gcPercentFor(tc.live, tc.current), "live %d MiB, target %d", tc.live>>20, tc.current)
	}
}

func TestMemoryLimitFor(t *testing.T) {
	const mib = 1 << 20
	assert.Equal(t, int64(math.MaxInt64), memoryLimitFor(20*mib, smallHeapGCPercent, math.MaxInt64), "a small heap: no limit of the tuner's")
	assert.Equal(t, int64(512*mib), memoryLimitFor(20*mib, smallHeapGCPercent, 512*mib), "a small heap: the container's limit")
	// 100 MiB live at GOGC 50: a 150 MiB goal, and the allowance.
	assert.Equal(t, int64(150*mib+nonHeapAllowance), memoryLimitFor(100*mib, largeHeapGCPercent, math.MaxInt64))
	assert.Equal(t, int64(160*mib), memoryLimitFor(100*mib, largeHeapGCPercent, 160*mib), "never above the container's limit")
}

// TestGCTunerFollowsTheLiveHeap: the target is Go's default while the live heap is small, 50 once
// it is large, and back when it has shrunk well below the line; the soft memory limit follows
// a large heap's goal and goes back to the container's when the heap is small again.
func TestGCTunerFollowsTheLiveHeap(t *testing.T) {
	const mib = 1 << 20
	heaps := []uint64{10 * mib, 30 * mib, 70 * mib, 120 * mib, 56 * mib, 40 * mib}
	var mu sync.Mutex
	var seen int
	var set []int
	var limits []int64
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tuner := &gcTuner{log: logr.Discard(), period: time.Millisecond, ceiling: math.MaxInt64,
		liveHeap: func() uint64 {
			mu.Lock()
			defer mu.Unlock()
			h := heaps[min(seen, len(heaps)-1)]
			if seen++; seen == len(heaps)+1 {
				close(done)
			}
			return h
		},
		set:      func(p int) int { mu.Lock(); defer mu.Unlock(); set = append(set, p); return 0 },
		setLimit: func(l int64) int64 { mu.Lock(); defer mu.Unlock(); limits = append(limits, l); return 0 }}
	go tuner.run(ctx)
	<-done
	cancel()
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int{100, 50, 100}, set)
	assert.Equal(t, []int64{math.MaxInt64, memoryLimitFor(70*mib, 50, math.MaxInt64), memoryLimitFor(120*mib, 50, math.MaxInt64),
		memoryLimitFor(56*mib, 50, math.MaxInt64), math.MaxInt64}, limits)
}

// TestGCTunerLeavesGOGC: GOGC set (the runtime applied it at start) wins: no tuner; GOMEMLIMIT set
// wins over the tuner's memory limit.
func TestGCTunerLeavesGOGC(t *testing.T) {
	gogc := func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	}
	assert.Nil(t, newGCTuner(logr.Discard(), gogc, math.MaxInt64))
	assert.Equal(t, int64(512<<20), newGCTuner(logr.Discard(), func(string) string { return "" }, 512<<20).ceiling)
	gomemlimit := func(k string) string {
		if k == "GOMEMLIMIT" {
			return "400MiB"
		}
		return ""
	}
	assert.Negative(t, newGCTuner(logr.Discard(), gomemlimit, 400<<20).ceiling, "GOMEMLIMIT set: the tuner leaves the limit alone")
	runtime.GC()
	assert.NotZero(t, liveHeapBytes(), "the runtime reports a live heap")
}
