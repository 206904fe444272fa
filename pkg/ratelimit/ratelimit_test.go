package ratelimit

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"
)

// upstream is upstream's default retry: 5 s, ×1.5, 15 attempts, no max interval.
var upstream = Retry{InitialInterval: 5 * time.Second, Multiplier: 1.5, MaxAttempts: 15}

// The back-off is a workqueue rate limiter, so controller-runtime's queues take it.
var _ workqueue.TypedRateLimiter[string] = &Backoff[string]{}

func TestBackoffIntervals(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	tests := []struct {
		name    string
		retry   Retry
		settled time.Duration
		want    []time.Duration // the waits after the 1st, 2nd, ... failure in a row
	}{{
		name:  "upstream's defaults, none as max interval: capped at the reconcile interval, which is also the fallback",
		retry: upstream, settled: time.Minute,
		want: []time.Duration{5 * time.Second, 7500 * time.Millisecond, 11250 * time.Millisecond, ms(16875), ms(25312.5), ms(37968.75),
			ms(56953.125), time.Minute, time.Minute, time.Minute, time.Minute, time.Minute, time.Minute, time.Minute, time.Minute,
			time.Minute, time.Minute},
	}, {
		name:  "a max interval below the reconcile interval caps the back-off; exhausted, the reconcile interval",
		retry: Retry{InitialInterval: 100 * time.Millisecond, Multiplier: 2, MaxAttempts: 4, MaxInterval: 300 * time.Millisecond}, settled: time.Second,
		want: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, time.Second, time.Second},
	}, {
		name:  "a max interval above the reconcile interval is kept after the attempts too: never more often than asked",
		retry: Retry{InitialInterval: time.Second, Multiplier: 10, MaxAttempts: 2, MaxInterval: time.Hour}, settled: time.Minute,
		want: []time.Duration{time.Second, 10 * time.Second, time.Hour, time.Hour},
	}, {
		name:  "multiplier 1: constant",
		retry: Retry{InitialInterval: time.Second, Multiplier: 1, MaxAttempts: 3}, settled: time.Minute,
		want: []time.Duration{time.Second, time.Second, time.Second, time.Minute},
	}, {
		name:  "no attempts: every failure waits the reconcile interval",
		retry: Retry{InitialInterval: time.Second, Multiplier: 2, MaxAttempts: 0}, settled: 15 * time.Second,
		want: []time.Duration{15 * time.Second, 15 * time.Second},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewBackoff[string](tt.retry, tt.settled, nil)
			require.NoError(t, err)
			var got []time.Duration
			for range tt.want {
				got = append(got, b.When("a"))
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, min(len(tt.want), tt.retry.MaxAttempts+1), b.NumRequeues("a"))
		})
	}
}

func TestBackoffHugeAttemptsStayCapped(t *testing.T) {
	b, err := NewBackoff[string](Retry{InitialInterval: time.Second, Multiplier: 1e6, MaxAttempts: math.MaxInt32}, time.Minute, nil)
	require.NoError(t, err)
	for i := 0; i < 100; i++ {
		d := b.When("a")
		require.Positive(t, d, "attempt %d", i)
		require.LessOrEqual(t, d, time.Minute, "attempt %d", i)
	}
	assert.Equal(t, time.Minute, b.Interval(math.MaxInt32-1), "+Inf is capped, not wrapped around")
}

func TestBackoffForgetAndItems(t *testing.T) {
	b, err := NewBackoff[string](upstream, time.Minute, nil)
	require.NoError(t, err)
	b.When("a")
	b.When("a")
	assert.Equal(t, 11250*time.Millisecond, b.When("a"), "third failure")
	assert.Equal(t, 5*time.Second, b.When("b"), "items back off independently")
	b.Forget("a")
	assert.Equal(t, 0, b.NumRequeues("a"))
	assert.Equal(t, 5*time.Second, b.When("a"), "a success starts the back-off over")
	assert.Equal(t, 1, b.NumRequeues("b"))
}

func TestBackoffPostponeKeepsFailures(t *testing.T) {
	b, err := NewBackoff[string](upstream, time.Minute, nil)
	require.NoError(t, err)
	b.When("a")
	b.When("a")
	b.Postpone("a")
	b.Forget("a") // controller-runtime forgets the postponed reconcile's requeue
	assert.Equal(t, 2, b.NumRequeues("a"), "a postponed reconcile did not succeed")
	assert.Equal(t, 11250*time.Millisecond, b.When("a"))
	b.Forget("a")
	assert.Equal(t, 0, b.NumRequeues("a"), "one Forget only is kept")

	b.Postpone("b") // not failing: nothing to keep, and no mark left behind
	b.When("b")
	b.Forget("b")
	assert.Equal(t, 0, b.NumRequeues("b"))
}

func TestBackoffGiveUpToldOnce(t *testing.T) {
	type call struct {
		item     string
		failures int
		every    time.Duration
	}
	var calls []call
	b, err := NewBackoff(Retry{InitialInterval: time.Second, Multiplier: 2, MaxAttempts: 2}, time.Minute,
		func(item string, failures int, every time.Duration) {
			calls = append(calls, call{item, failures, every})
		})
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		b.When("a")
	}
	assert.Equal(t, []call{{"a", 3, time.Minute}}, calls)
	b.Forget("a")
	for i := 0; i < 3; i++ {
		b.When("a")
	}
	assert.Len(t, calls, 2, "told again after a success and a new run of failures")
}

func TestRetryValidate(t *testing.T) {
	tests := []struct {
		retry Retry
		want  string
	}{
		{Retry{InitialInterval: 0, Multiplier: 1.5, MaxAttempts: 1}, "initial interval must be positive"},
		{Retry{InitialInterval: time.Second, Multiplier: 0.5, MaxAttempts: 1}, "multiplier must be a number of at least 1"},
		{Retry{InitialInterval: time.Second, Multiplier: math.NaN(), MaxAttempts: 1}, "multiplier must be a number of at least 1"},
		{Retry{InitialInterval: time.Second, Multiplier: math.Inf(1), MaxAttempts: 1}, "multiplier must be a number of at least 1"},
		{Retry{InitialInterval: time.Second, Multiplier: 2, MaxAttempts: -1}, "max attempts must be 0 or more"},
		{Retry{InitialInterval: time.Second, Multiplier: 2, MaxAttempts: 1, MaxInterval: -time.Second}, "max interval must be positive"},
	}
	for _, tt := range tests {
		assert.ErrorContains(t, tt.retry.Validate(), tt.want, "%+v", tt.retry)
		_, err := NewBackoff[string](tt.retry, time.Minute, nil)
		assert.ErrorContains(t, err, tt.want)
	}
	require.NoError(t, upstream.Validate())
	_, err := NewBackoff[string](upstream, 0, nil)
	assert.ErrorContains(t, err, "fallback interval must be positive")
}

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)} }
func takeN(b *Budget[string], k string, n int) (waits []time.Duration) {
	for i := 0; i < n; i++ {
		waits = append(waits, b.Take(k))
	}
	return waits
}

func TestBudget(t *testing.T) {
	c := newClock()
	b, err := NewBudget[string](Limit{Max: 5, Period: 15 * time.Second}, c.now)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{0, 0, 0, 0, 0}, takeN(b, "a", 5), "upstream's default: 5 per 15 s")
	assert.Equal(t, 15*time.Second, b.Take("a"), "the 6th waits for the period to end")
	c.advance(10 * time.Second)
	assert.Equal(t, 5*time.Second, b.Take("a"), "postponed to the end of the period, which did not move")
	assert.Equal(t, time.Duration(0), b.Take("b"), "another resource has a budget of its own")
	c.advance(5 * time.Second)
	assert.Equal(t, []time.Duration{0, 0, 0, 0, 0, 15 * time.Second}, takeN(b, "a", 6), "a new period starts at the next reconcile")
}

func TestBudgetDisabledAndInvalid(t *testing.T) {
	for _, max := range []int{0, -1} {
		b, err := NewBudget[string](Limit{Max: max}, nil)
		require.NoError(t, err, "upstream: a limit <= 0 disables the limiter")
		assert.Equal(t, make([]time.Duration, 100), takeN(b, "a", 100))
		assert.Equal(t, 0, b.Len())
	}
	_, err := NewBudget[string](Limit{Max: 5, Period: 0}, nil)
	assert.ErrorContains(t, err, "refresh period must be positive")
}

func TestBudgetSweepsExpiredWindows(t *testing.T) {
	c := newClock()
	b, err := NewBudget[string](Limit{Max: 1, Period: time.Second}, c.now)
	require.NoError(t, err)
	for _, k := range []string{"a", "b", "c"} {
		b.Take(k)
	}
	require.Equal(t, 3, b.Len())
	c.advance(time.Second)
	b.Take("d")
	assert.Equal(t, 1, b.Len(), "deleted resources do not stay in memory")
}
