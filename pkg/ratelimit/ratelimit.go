// Package ratelimit paces reconciles the way upstream's operator (JOSDK) does: failed
// reconciles are retried on an exponential back-off (kubernetes.operator.retry.*), and each
// resource is reconciled at most a number of times per period (kubernetes.operator.rate-limiter.*).
// The policies here are pure: a clock is injected, nothing runs in the background.
package ratelimit

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// Retry is the back-off of reconciles that fail with an error (upstream's
// kubernetes.operator.retry.* options).
type Retry struct {
	// InitialInterval is the wait before the first retry.
	InitialInterval time.Duration
	// Multiplier grows the wait after each further failure (1 keeps it constant).
	Multiplier float64
	// MaxAttempts is the number of retries on the back-off; after as many failures in a row
	// the resource is retried at the fallback interval (see NewBackoff).
	MaxAttempts int
	// MaxInterval caps the wait; zero is upstream's "none", capped at the fallback interval.
	MaxInterval time.Duration
}

// Validate says which field is out of range.
func (r Retry) Validate() error {
	switch {
	case r.InitialInterval <= 0:
		return fmt.Errorf("initial interval must be positive, got %s", r.InitialInterval)
	case math.IsNaN(r.Multiplier) || math.IsInf(r.Multiplier, 0) || r.Multiplier < 1:
		return fmt.Errorf("interval multiplier must be a number of at least 1, got %v", r.Multiplier)
	case r.MaxAttempts < 0:
		return fmt.Errorf("max attempts must be 0 or more, got %d", r.MaxAttempts)
	case r.MaxInterval < 0:
		return fmt.Errorf("max interval must be positive (or unset), got %s", r.MaxInterval)
	}
	return nil
}

// Limit is each resource's reconcile budget (upstream's kubernetes.operator.rate-limiter.*
// options): at most Max reconciles per Period. Max <= 0 is no limit.
type Limit struct {
	Max    int
	Period time.Duration
}

// Enabled says whether the limit limits anything.
func (l Limit) Enabled() bool { return l.Max > 0 }

// Validate says which field is out of range.
func (l Limit) Validate() error {
	if l.Enabled() && l.Period <= 0 {
		return fmt.Errorf("refresh period must be positive when the limit is on, got %s", l.Period)
	}
	return nil
}

// Backoff is a client-go workqueue rate limiter (When, Forget, NumRequeues) applying a Retry
// to the failures of each item. Upstream's operator stops retrying after MaxAttempts until the
// next event; a resource here must never be stuck, so after MaxAttempts failures in a row it
// is retried every fallback interval, and GiveUp is told once.
type Backoff[T comparable] struct {
	retry    Retry
	ceiling  time.Duration
	fallback time.Duration
	// giveUp, when set, is called (under the lock: keep it short) when an item's failures reach
	// MaxAttempts, with the interval it is retried at from then on.
	giveUp func(item T, failures int, every time.Duration)

	mu       sync.Mutex
	failures map[T]int
	// postponed items keep their failure count through the next Forget: controller-runtime
	// forgets an item whose reconcile asked to be requeued later, which a reconcile postponed
	// by the budget does without having run.
	postponed map[T]struct{}
}

// NewBackoff applies retry, whose MaxInterval when zero is settled: the interval a settled
// resource is looked at (kubernetes.operator.reconcile.interval), so that a failing resource
// is never looked at less often than a healthy one unless asked to. After MaxAttempts failures
// the interval is the larger of settled and the cap. settled must be positive.
func NewBackoff[T comparable](retry Retry, settled time.Duration, giveUp func(item T, failures int, every time.Duration)) (*Backoff[T], error) {
	if err := retry.Validate(); err != nil {
		return nil, err
	}
	if settled <= 0 {
		return nil, fmt.Errorf("fallback interval must be positive, got %s", settled)
	}
	ceiling := retry.MaxInterval
	if ceiling == 0 {
		ceiling = settled
	}
	return &Backoff[T]{retry: retry, ceiling: ceiling, fallback: max(settled, ceiling), giveUp: giveUp,
		failures: map[T]int{}, postponed: map[T]struct{}{}}, nil
}

// Interval is the wait after an item's failure when failures failed before it in a row.
func (b *Backoff[T]) Interval(failures int) time.Duration {
	if failures >= b.retry.MaxAttempts {
		return b.fallback
	}
	// In float: the power overflows to +Inf for many attempts, which the cap catches.
	d := float64(b.retry.InitialInterval) * math.Pow(b.retry.Multiplier, float64(failures))
	if d >= float64(b.ceiling) {
		return b.ceiling
	}
	return time.Duration(d)
}

// When records a failure of item and returns how long to wait before retrying it.
func (b *Backoff[T]) When(item T) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.failures[item]
	if n <= b.retry.MaxAttempts { // beyond, the count no longer matters: it stops growing
		b.failures[item] = n + 1
	}
	if n == b.retry.MaxAttempts && b.giveUp != nil {
		b.giveUp(item, n+1, b.fallback)
	}
	return b.Interval(n)
}

// Forget clears item's failures: it succeeded (or was requeued on purpose), unless it was
// postponed since its last reconcile (Postpone).
func (b *Backoff[T]) Forget(item T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.postponed[item]; ok {
		delete(b.postponed, item)
		return
	}
	delete(b.failures, item)
}

// Postpone marks item as not reconciled this time: its next Forget keeps its failure count.
func (b *Backoff[T]) Postpone(item T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, failing := b.failures[item]; failing {
		b.postponed[item] = struct{}{}
	}
}

// NumRequeues is item's failures in a row.
func (b *Backoff[T]) NumRequeues(item T) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures[item]
}

// Budget admits at most a Limit's Max reconciles of each key per Period, the period starting
// at the key's first admitted reconcile (JOSDK's per-resource rate limiter). A reconcile past
// the budget is told how long until the period ends, to be postponed to then, not dropped.
type Budget[T comparable] struct {
	limit Limit
	now   func() time.Time

	mu      sync.Mutex
	windows map[T]*window
	// swept is when expired windows were last dropped: once a period, so that the map holds
	// only keys reconciled within the last two periods.
	swept time.Time
}

type window struct {
	start time.Time
	used  int
}

// NewBudget applies limit with the clock now (time.Now when nil).
func NewBudget[T comparable](limit Limit, now func() time.Time) (*Budget[T], error) {
	if err := limit.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Budget[T]{limit: limit, now: now, windows: map[T]*window{}, swept: now()}, nil
}

// Take spends one reconcile of key's budget and returns 0, or, when the budget of the current
// period is spent, returns how long until the period ends (spending nothing).
func (b *Budget[T]) Take(key T) time.Duration {
	if !b.limit.Enabled() {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if now.Sub(b.swept) >= b.limit.Period {
		for k, w := range b.windows {
			if now.Sub(w.start) >= b.limit.Period {
				delete(b.windows, k)
			}
		}
		b.swept = now
	}
	w, ok := b.windows[key]
	if !ok || now.Sub(w.start) >= b.limit.Period {
		w = &window{start: now}
		b.windows[key] = w
	}
	if w.used >= b.limit.Max {
		return w.start.Add(b.limit.Period).Sub(now)
	}
	w.used++
	return 0
}

// Len is the number of keys with a window (for tests of the sweep).
func (b *Budget[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.windows)
}
