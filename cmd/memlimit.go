package main

import (
	"context"
	"log/slog"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// memoryLimitRatio is the share of the container's memory limit given to the Go heap as its
// soft limit (GOMEMLIMIT): the garbage collector works harder near it instead of letting the
// heap grow into an OOM kill, and the rest is left for what lives outside the heap.
const memoryLimitRatio = 0.9

// setMemoryLimit sets the Go runtime's soft memory limit from the container's memory limit
// (limit; memlimit.FromCgroup in the operator), unless the GOMEMLIMIT environment variable is
// set, which wins. It logs and returns the limit in effect; without a container limit nothing
// changes (math.MaxInt64, Go's default).
func setMemoryLimit(log logr.Logger, limit memlimit.Provider) int64 {
	set, err := memlimit.Set(memlimit.WithProvider(limit), memlimit.WithRatio(memoryLimitRatio),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(log.V(1)))))
	switch {
	case err != nil:
		log.Info("Go memory limit not set from the container's", "error", err.Error())
	case set == math.MaxInt64:
		log.Info("Go memory limit: none (no container memory limit, no GOMEMLIMIT)")
	default:
		log.Info("Go memory limit", "GOMEMLIMIT", set)
	}
	return set
}

// The garbage collector's target follows the live heap. While it is small, Go's default (the
// heap may grow to twice what is live after a collection) costs little memory and the least
// CPU. Once it is large it is mostly the caches, which grow with the resources, and the target
// drops to 1.5 times: at 10,000 FlinkDeployments Go's default let the process hold about 2.7
// times its live heap (make bench: 129 MB live, 348 MiB anonymous memory), for about a quarter
// less CPU than at 50. Prometheus lowers its default for the same reason. GOGC set, even to
// 100, wins and is left alone.
const (
	smallHeapGCPercent = 100
	largeHeapGCPercent = 50
	// largeHeap switches to largeHeapGCPercent; below smallHeap the target goes back, so that a
	// live heap near the line does not flip the target at every look.
	largeHeap = 64 << 20
	smallHeap = 48 << 20
	// gcTunePeriod is how often the live heap is looked at (a read of runtime metrics).
	gcTunePeriod = 5 * time.Second
)

// gcPercentFor is the collector's target for a live heap of live bytes, current the target in
// effect.
func gcPercentFor(live uint64, current int) int {
	switch {
	case live >= largeHeap:
		return largeHeapGCPercent
	case live < smallHeap:
		return smallHeapGCPercent
	default:
		return current
	}
}

// Memory the process holds beyond its heap goal: the runtime returns pages the heap no longer
// uses only slowly, and while a large fleet's caches grow the freed pages were a quarter of the
// process (make bench, 10,000 resources: 83 MB idle, 10 MB of it returned). With a large heap
// the tuner therefore also sets a soft memory limit at the heap goal plus nonHeapAllowance
// (goroutine stacks, the runtime's own structures: 18 MB there), which makes the runtime
// return freed pages as it goes and collect a little before the goal when the heap's spans are
// fragmented; never above the limit from the container (setMemoryLimit), and not at all when
// GOMEMLIMIT is set.
const nonHeapAllowance = 32 << 20

// memoryLimitFor is the soft memory limit for a live heap of live bytes under the collector's
// target percent, within ceiling (the limit otherwise in effect).
func memoryLimitFor(live uint64, percent int, ceiling int64) int64 {
	if percent != largeHeapGCPercent {
		return ceiling
	}
	if live > math.MaxInt64/4 {
		return ceiling // no heap is that large; the arithmetic below must not overflow
	}
	heap := int64(live)
	goal := heap + heap*int64(percent)/100
	return min(goal+nonHeapAllowance, ceiling)
}

// gcTuner sets the collector's target from the live heap (gcPercentFor), and the soft memory
// limit that goes with it (memoryLimitFor) unless ceiling is negative, every period.
type gcTuner struct {
	log      logr.Logger
	liveHeap func() uint64
	set      func(percent int) (previous int)
	setLimit func(limit int64) (previous int64)
	// ceiling is the memory limit from the container (math.MaxInt64 without one); negative: the
	// tuner leaves the memory limit alone (GOMEMLIMIT set).
	ceiling int64
	period  time.Duration
}

// newGCTuner is the operator's gcTuner, or nil when GOGC is set (getenv: os.Getenv): the
// runtime has applied it, and it wins. containerLimit is the memory limit setMemoryLimit set.
func newGCTuner(log logr.Logger, getenv func(string) string, containerLimit int64) *gcTuner {
	if v := getenv("GOGC"); v != "" {
		log.Info("garbage collector target from GOGC", "GOGC", v)
		return nil
	}
	ceiling := containerLimit
	if getenv("GOMEMLIMIT") != "" {
		ceiling = -1
	}
	return &gcTuner{log: log, liveHeap: liveHeapBytes, set: debug.SetGCPercent, setLimit: debug.SetMemoryLimit,
		ceiling: ceiling, period: gcTunePeriod}
}

// run applies the target for the live heap now, then follows it until ctx ends.
func (t *gcTuner) run(ctx context.Context) {
	live := t.liveHeap()
	current := gcPercentFor(live, smallHeapGCPercent)
	t.set(current)
	limit := t.applyLimit(live, current, -1)
	tick := time.NewTicker(t.period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		live := t.liveHeap()
		if next := gcPercentFor(live, current); next != current {
			t.set(next)
			t.log.Info("garbage collector target changed", "GOGC", next, "liveHeapBytes", live)
			current = next
		}
		limit = t.applyLimit(live, current, limit)
	}
}

// applyLimit sets the soft memory limit for live and percent when it differs from applied, and
// returns the limit in effect.
func (t *gcTuner) applyLimit(live uint64, percent int, applied int64) int64 {
	if t.ceiling < 0 {
		return applied
	}
	if limit := memoryLimitFor(live, percent, t.ceiling); limit != applied {
		t.setLimit(limit)
		return limit
	}
	return applied
}

// liveHeapBytes is the heap the last collection found live.
func liveHeapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}
