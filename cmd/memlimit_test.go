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

// TestGCTunerFollowsTheLiveHeap: the target is Go's default while the live heap is small, 50 once
// it is large, and back when it has shrunk well below the line.
func TestGCTunerFollowsTheLiveHeap(t *testing.T) {
	heaps := []uint64{10 << 20, 30 << 20, 70 << 20, 120 << 20, 56 << 20, 40 << 20}
	var mu sync.Mutex
	var seen int
	var set []int
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tuner := &gcTuner{log: logr.Discard(), period: time.Millisecond,
		liveHeap: func() uint64 {
			mu.Lock()
			defer mu.Unlock()
			h := heaps[min(seen, len(heaps)-1)]
			if seen++; seen == len(heaps)+1 {
				close(done)
			}
			return h
		},
		set: func(p int) int { mu.Lock(); defer mu.Unlock(); set = append(set, p); return 0 }}
	go tuner.run(ctx)
	<-done
	cancel()
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int{100, 50, 100}, set)
}

// TestGCTunerLeavesGOGC: GOGC set (the runtime applied it at start) wins: no tuner.
func TestGCTunerLeavesGOGC(t *testing.T) {
	gogc := func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	}
	assert.Nil(t, newGCTuner(logr.Discard(), gogc))
	assert.NotNil(t, newGCTuner(logr.Discard(), func(string) string { return "" }))
	runtime.GC()
	assert.NotZero(t, liveHeapBytes(), "the runtime reports a live heap")
}
