// Package leaderfence keeps a replica that may no longer lead from acting on clusters.
//
// Leader election (client-go's leaderelection, run by controller-runtime's manager) tells a
// replica it leads, but a leader paused longer than the lease (a long GC, CPU starvation,
// SIGSTOP) resumes believing it still does: its reconciles carry on until its elector next
// fails to renew, while a standby has taken over after the lease ran out. Two replicas then
// stop, cancel, submit and delete the same clusters.
//
// A Fence watches the lease from inside this process: Lock wraps the election's resource lock
// and records when each successful renewal was sent. Held says whether the last one is recent
// enough that no standby can have taken over yet, with a margin for the call about to be made
// to arrive; the operator asks Check before every call that changes a cluster, and a replica
// whose renewals stopped refuses them, whatever its elector still believes.
package leaderfence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrNotHeld is matched (errors.Is) by every refusal of a Fence.
var ErrNotHeld = errors.New("leader lease not held")

// NotHeldError is the error of an action refused because this replica cannot be sure it still
// holds the lease.
type NotHeldError struct {
	// Action is what was refused, e.g. "POST /jobs/:jobid/stop".
	Action string
	// Reason says why the lease is not held: never renewed, released, or how long ago it was.
	Reason string
}

func (e *NotHeldError) Error() string {
	return fmt.Sprintf("%s refused: %s (%s); another replica may lead", e.Action, ErrNotHeld, e.Reason)
}

// Is makes errors.Is(err, ErrNotHeld) true.
func (e *NotHeldError) Is(target error) bool { return target == ErrNotHeld }

// Fence records the renewals of this replica's lease. A nil *Fence always holds: leader
// election is off, so this replica is the only one.
type Fence struct {
	margin time.Duration
	now    func() time.Time

	mu sync.Mutex
	// sent is when the last successful renewal (or acquisition) was sent, by this process's
	// monotonic clock; zero when the lease was never held or was released.
	sent time.Time
	// lease is the lease duration that renewal wrote: how long a standby waits after seeing it.
	lease time.Duration
}

// New returns a fence that holds while the last renewal is younger than the lease duration it
// wrote minus margin. margin covers the time from a check to the call arriving where it acts
// (a REST call to a JobManager, a delete at the API server); the operator uses the lease
// duration minus the renew deadline, so that the fence gives up when the elector would.
func New(margin time.Duration) (*Fence, error) {
	if margin <= 0 {
		return nil, fmt.Errorf("leader fence margin %s: must be positive", margin)
	}
	return &Fence{margin: margin, now: time.Now}, nil
}

// held is the fence's decision: a lease renewed at sent for lease (zero sent: never held or
// released) is held at now when no standby can take it over within margin. A standby takes
// over no earlier than lease after it saw the renewal, which it saw after it was sent; time
// is this process's monotonic clock, which runs on while the process is paused.
func held(sent time.Time, lease, margin time.Duration, now time.Time) (bool, string) {
	if sent.IsZero() {
		return false, "this replica does not hold the lease"
	}
	age := now.Sub(sent)
	if age < lease-margin {
		return true, ""
	}
	return false, fmt.Sprintf("last renewal sent %s ago, lease %s, margin %s", age.Round(time.Millisecond), lease, margin)
}

// Held says whether the lease is held at now.
func (f *Fence) Held(now time.Time) bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ok, _ := held(f.sent, f.lease, f.margin, now)
	return ok
}

// Check returns a *NotHeldError for action when the lease is not held now, nil when it is
// (or f is nil).
func (f *Fence) Check(action string) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ok, reason := held(f.sent, f.lease, f.margin, f.now()); !ok {
		return &NotHeldError{Action: action, Reason: reason}
	}
	return nil
}

// observe records the outcome of a write of the lease sent at sent: a successful write naming
// this replica renews, one naming nobody (the release on shutdown) or another replica ends the
// lease, a failed one changes nothing (the last renewal only ages).
func (f *Fence) observe(sent time.Time, ler resourcelock.LeaderElectionRecord, identity string, err error) {
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ler.HolderIdentity != identity || ler.HolderIdentity == "" {
		f.sent, f.lease = time.Time{}, 0
		return
	}
	// The standby measures the lease the record carries, not its own configuration.
	f.sent, f.lease = sent, time.Duration(ler.LeaseDurationSeconds)*time.Second
}

// Lock wraps the election's resource lock so that the fence sees every renewal. Writes of the
// lock are optimistic (the resourceVersion of the lease last read), so one that succeeded was
// not preceded by another replica's.
func (f *Fence) Lock(inner resourcelock.Interface) resourcelock.Interface {
	return &lock{Interface: inner, fence: f}
}

type lock struct {
	resourcelock.Interface
	fence *Fence
}

func (l *lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.fence.now()
	err := l.Interface.Create(ctx, ler)
	l.fence.observe(sent, ler, l.Identity(), err)
	return err
}

func (l *lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.fence.now()
	err := l.Interface.Update(ctx, ler)
	l.fence.observe(sent, ler, l.Identity(), err)
	return err
}
