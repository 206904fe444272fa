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

// defaultGCPercent is the garbage collector's target when GOGC is not set: the heap may grow
// to 1.5 times what is live after a collection, not Go's 2 times. The operator's live heap is
// mostly its caches, which grow with the resources; at 10,000 FlinkDeployments Go's default let
// the process hold about 2.7 times its live heap (make bench: 129 MB live, 348 MiB anonymous
// memory). At 1,000, Go's default cost 13 to 19 MiB more and saved no measurable CPU (make
// bench, 2026-12-06). Prometheus lowers its default for the same reason. GOGC set, even to
// 100, wins.
const defaultGCPercent = 50

// setGCPercent applies defaultGCPercent unless GOGC is set (getenv: os.Getenv), and returns the
// percentage in effect.
func setGCPercent(log logr.Logger, getenv func(string) string) int {
	if v := getenv("GOGC"); v != "" {
		log.Info("garbage collector target from GOGC", "GOGC", v)
		percent := debug.SetGCPercent(-1)
		debug.SetGCPercent(percent)
		return percent
	}
	debug.SetGCPercent(defaultGCPercent)
	log.Info("garbage collector target", "GOGC", defaultGCPercent)
	return defaultGCPercent
}

// The runtime returns pages the heap no longer uses only slowly, and while a large fleet's
// caches grow, the freed pages it still held were a quarter of the process (make bench, 10,000
// resources: 83 MB idle, 10 MB of it returned, RSS 308 to 330 MiB at the peak). Once the live
// heap is large, the operator therefore sets a soft memory limit at the heap goal plus
// nonHeapAllowance (goroutine stacks, the runtime's own structures: 18 MB there), which makes
// the runtime return freed pages as it goes and collect a little before the goal when the
// heap's spans are fragmented (272 MiB at the peak). It is never above the limit from the
// container (setMemoryLimit), not set at all when GOMEMLIMIT is, and dropped again when the
// heap has shrunk well below the line, so that a live heap near it does not flip the limit at
// every look. A small heap is left to the garbage collector's target alone, as the allowance
// would be most of such a limit.
const (
	nonHeapAllowance = 32 << 20
	// largeHeap sets the limit; below smallHeap it goes back to the ceiling.
	largeHeap = 64 << 20
	smallHeap = 48 << 20
	// memoryTunePeriod is how often the live heap is looked at (a read of runtime metrics).
	memoryTunePeriod = 5 * time.Second
)

// memoryLimitFor is the soft memory limit for a live heap of live bytes under the collector's
// target percent, within ceiling (the limit otherwise in effect); limited says whether the
// limit follows the heap now (it starts at largeHeap and stops below smallHeap).
func memoryLimitFor(live uint64, percent int, ceiling int64, limited bool) (int64, bool) {
	switch {
	case live >= largeHeap:
		limited = true
	case live < smallHeap:
		limited = false
	}
	if !limited || live > math.MaxInt64/4 { // no heap is that large; the arithmetic must not overflow
		return ceiling, limited
	}
	heap := int64(live)
	goal := heap + heap*int64(percent)/100
	return min(goal+nonHeapAllowance, ceiling), true
}

// memoryTuner sets the soft memory limit from the live heap (memoryLimitFor) every period.
type memoryTuner struct {
	liveHeap func() uint64
	setLimit func(limit int64) (previous int64)
	// percent is the collector's target in effect; ceiling the memory limit from the container
	// (math.MaxInt64 without one).
	percent int
	ceiling int64
	period  time.Duration
}

// newMemoryTuner is the operator's memoryTuner, or nil when GOMEMLIMIT is set (getenv:
// os.Getenv), which wins; percent is the collector's target (setGCPercent), containerLimit the
// limit setMemoryLimit set.
func newMemoryTuner(getenv func(string) string, percent int, containerLimit int64) *memoryTuner {
	if getenv("GOMEMLIMIT") != "" || percent <= 0 {
		return nil
	}
	return &memoryTuner{liveHeap: liveHeapBytes, setLimit: debug.SetMemoryLimit, percent: percent,
		ceiling: containerLimit, period: memoryTunePeriod}
}

// run follows the live heap until ctx ends.
func (t *memoryTuner) run(ctx context.Context) {
	applied, limited := t.ceiling, false
	tick := time.NewTicker(t.period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var limit int64
		limit, limited = memoryLimitFor(t.liveHeap(), t.percent, t.ceiling, limited)
		if limit != applied {
			t.setLimit(limit)
			applied = limit
		}
	}
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
