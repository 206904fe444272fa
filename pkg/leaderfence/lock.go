package leaderfence

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Election is the fenced resource lock of a manager's leader election, built before the
// manager (controller-runtime's LeaderElectionResourceLockInterface) and so before the
// manager's event recorders exist: the lock's events ("became leader") go to the provider
// given to SetRecorders, and are dropped until then.
type Election struct {
	Lock   resourcelock.Interface
	events *lateProvider
}

// NewElection builds the lock controller-runtime would build for options (a Lease, its
// namespace defaulted in-cluster, API timeouts under the renew deadline) and wraps it for f.
// The holder identity is identity when given (the operator's pod name, so that the Lease
// names the pod that leads, as the Apache operator's does), else controller-runtime's unique
// hostname_uuid.
func NewElection(f *Fence, cfg *rest.Config, options leaderelection.Options, identity string) (*Election, error) {
	events := &lateProvider{}
	// NewResourceLock sets the user agent and timeout of the configuration it is given.
	inner, err := leaderelection.NewResourceLock(rest.CopyConfig(cfg), events, options)
	if err != nil {
		return nil, err
	}
	if identity != "" {
		lease, ok := inner.(*resourcelock.LeaseLock)
		if !ok {
			return nil, fmt.Errorf("leader election lock %T: only a Lease takes an identity of its own", inner)
		}
		lease.LockConfig.Identity = identity
	}
	return &Election{Lock: f.Lock(inner), events: events}, nil
}

// SetRecorders sends the lock's events to p (the manager).
func (e *Election) SetRecorders(p recorder.Provider) {
	e.events.mu.Lock()
	defer e.events.mu.Unlock()
	e.events.target = p
}

// lateProvider hands out recorders that forward to a provider set later.
type lateProvider struct {
	mu     sync.Mutex
	target recorder.Provider
}

func (p *lateProvider) get() recorder.Provider {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}

func (p *lateProvider) GetEventRecorderFor(name string) record.EventRecorder {
	return &lateRecorder{provider: p, name: name}
}

func (p *lateProvider) GetEventRecorder(name string) recorder.EventRecorder {
	if t := p.get(); t != nil {
		return t.GetEventRecorder(name)
	}
	// The lease lock records through GetEventRecorderFor only; anything else is dropped
	// until the manager exists (a FakeRecorder without a channel discards).
	return &events.FakeRecorder{}
}

type lateRecorder struct {
	provider *lateProvider
	name     string
}

func (r *lateRecorder) target() record.EventRecorder {
	if t := r.provider.get(); t != nil {
		return t.GetEventRecorderFor(r.name) //nolint:staticcheck // SA1019: the lease lock takes the core/v1 recorder
	}
	return nil
}

func (r *lateRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	if t := r.target(); t != nil {
		t.Event(object, eventtype, reason, message)
	}
}

func (r *lateRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if t := r.target(); t != nil {
		t.Eventf(object, eventtype, reason, messageFmt, args...)
	}
}

func (r *lateRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if t := r.target(); t != nil {
		t.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}
}
