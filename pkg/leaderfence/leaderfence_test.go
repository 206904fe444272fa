package leaderfence

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
)

func TestHeld(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lease, margin := 15*time.Second, 5*time.Second
	for _, tc := range []struct {
		name string
		sent time.Time
		now  time.Time
		want bool
	}{
		{"never renewed", time.Time{}, t0, false},
		{"just renewed", t0, t0, true},
		{"renewed within lease minus margin", t0, t0.Add(9999 * time.Millisecond), true},
		{"at lease minus margin", t0, t0.Add(10 * time.Second), false},
		{"paused within the margin", t0, t0.Add(12 * time.Second), false},
		{"paused past the lease", t0, t0.Add(20 * time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := held(tc.sent, lease, margin, tc.now)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.want, reason == "", "a refusal says why: %q", reason)
		})
	}
}

func TestNewRejectsNoMargin(t *testing.T) {
	_, err := New(0)
	require.ErrorContains(t, err, "must be positive")
}

func TestNilFenceAlwaysHolds(t *testing.T) {
	var f *Fence
	assert.True(t, f.Held(time.Now()))
	assert.NoError(t, f.Check("POST /jobs/:jobid/stop"))
}

// fakeLock is a resource lock whose writes fail when err is set.
type fakeLock struct {
	resourcelock.Interface // unused methods panic
	id                     string
	err                    error
}

func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *fakeLock) Identity() string                                                { return l.id }

// clock is a settable clock for the fence.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLockRecordsRenewals(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f, err := New(time.Second) // lease 4 s: held for 3 s after a renewal is sent
	require.NoError(t, err)
	f.now = c.now
	inner := &fakeLock{id: "a"}
	l := f.Lock(inner)
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "a", LeaseDurationSeconds: 4}

	require.ErrorIs(t, f.Check("stop"), ErrNotHeld, "not held before the lease is acquired")

	require.NoError(t, l.Create(ctx, mine))
	require.NoError(t, f.Check("stop"), "held once acquired")

	// Renewals that fail (the API server is slow, or another replica took the lease) only
	// age the last success: the fence lets go at lease minus margin after it was sent.
	c.t = c.t.Add(2 * time.Second)
	inner.err = errors.New("conflict")
	require.Error(t, l.Update(ctx, mine))
	require.NoError(t, f.Check("stop"))
	c.t = c.t.Add(time.Second)
	err = f.Check("POST /jobs/:jobid/stop")
	require.ErrorIs(t, err, ErrNotHeld)
	var notHeld *NotHeldError
	require.ErrorAs(t, err, &notHeld)
	assert.Equal(t, "POST /jobs/:jobid/stop", notHeld.Action)
	assert.Contains(t, err.Error(), "last renewal sent 3s ago, lease 4s, margin 1s")

	// A successful renewal counts from when it was sent, not from when it returned.
	inner.err = nil
	require.NoError(t, l.Update(ctx, mine))
	assert.True(t, f.Held(c.t.Add(2999*time.Millisecond)))
	assert.False(t, f.Held(c.t.Add(3*time.Second)))

	// The lease duration is the one the record carries (what a standby waits for).
	require.NoError(t, l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "a", LeaseDurationSeconds: 15}))
	assert.True(t, f.Held(c.t.Add(13*time.Second)))

	// Released on shutdown (no holder): not held, however recent.
	require.NoError(t, l.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1}))
	assert.False(t, f.Held(c.t))

	// A record naming another replica is not this one's renewal.
	require.NoError(t, l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "b", LeaseDurationSeconds: 15}))
	assert.False(t, f.Held(c.t))
}

// slowLock is a lock whose write takes d of the fence's clock before it returns.
type slowLock struct {
	fakeLock
	c *clock
	d time.Duration
}

func (l *slowLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	l.c.t = l.c.t.Add(l.d)
	return nil
}

// A renewal that took long to answer may have been seen by a standby as soon as it was sent:
// the fence measures from the send.
func TestLockMeasuresFromSend(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f, err := New(time.Second)
	require.NoError(t, err)
	f.now = c.now
	sent := c.t
	l := f.Lock(&slowLock{fakeLock: fakeLock{id: "a"}, c: c, d: 2 * time.Second})
	require.NoError(t, l.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "a", LeaseDurationSeconds: 4}))
	assert.True(t, f.Held(sent.Add(2999*time.Millisecond)))
	assert.False(t, f.Held(sent.Add(3*time.Second)))
}

// TestElectionHoldsTheLeaseAsThePod: given the operator's pod name, the Lease's holder is the
// pod (kubectl get lease names the replica that leads); without one, controller-runtime's
// unique hostname_uuid.
func TestElectionHoldsTheLeaseAsThePod(t *testing.T) {
	fence, err := New(5 * time.Second)
	require.NoError(t, err)
	opts := leaderelection.Options{LeaderElection: true, LeaderElectionID: "flink-operator-lease", LeaderElectionNamespace: "ops", RenewDeadline: 10 * time.Second}
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}

	named, err := NewElection(fence, cfg, opts, "flink-operator-7d9f-abcde")
	require.NoError(t, err)
	assert.Equal(t, "flink-operator-7d9f-abcde", named.Lock.Identity())

	unnamed, err := NewElection(fence, cfg, opts, "")
	require.NoError(t, err)
	host, err := os.Hostname()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(unnamed.Lock.Identity(), host+"_"), unnamed.Lock.Identity())
}
