package listener

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flink-operator/flink-operator/pkg/extension/endpoint"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Metrics count what happens to the events of HTTP listeners.
type Metrics struct {
	Dropped    *prometheus.CounterVec
	Deliveries *prometheus.CounterVec
}

// NewMetrics registers the listener metrics with reg (nil: not registered). Counters already
// registered there (the operator restarts its controllers in-process on some configuration
// changes) are taken over, so the counts go on.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flink_operator_listener_events_dropped_total",
			Help: "Events a resource listener's full queue dropped (the oldest first)."}, []string{"listener"}),
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flink_operator_listener_deliveries_total",
			Help: "Events delivered to a resource listener, or given up after its retries (result=failed)."}, []string{"listener", "result"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []**prometheus.CounterVec{&m.Dropped, &m.Deliveries} {
		if err := reg.Register(*c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("register listener metrics: %w", err)
			}
			existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, fmt.Errorf("register listener metrics: %w", err)
			}
			*c = existing
		}
	}
	return m, nil
}

func (m *Metrics) dropped(name string) { m.Dropped.WithLabelValues(name).Inc() }

func (m *Metrics) delivered(name string, ok bool) {
	result := "delivered"
	if !ok {
		result = "failed"
	}
	m.Deliveries.WithLabelValues(name, result).Inc()
}

// Dispatcher is the Listener the reconcilers are given: it hands each status change and event
// to the HTTP listeners configured now (as CloudEvents, queued) and to Embedded (called
// directly: they must not block). A changed configuration replaces the HTTP listeners at the
// next event; the events still queued for the old ones are dropped.
type Dispatcher struct {
	// OperatorConfig returns the operator options in force (flinkconf.Defaults.Operator).
	OperatorConfig func() map[string]string
	Embedded       []Listener
	// Metrics are required (NewMetrics).
	Metrics *Metrics
	Log     logr.Logger
	// Wait sleeps between delivery attempts; a plain timer when nil (tests record the back-off).
	Wait func(ctx context.Context, d time.Duration) bool

	mu        sync.Mutex
	builtFrom string
	built     bool
	sinks     []*sink
	stopped   bool
}

// OnStatusChange implements Listener.
func (d *Dispatcher) OnStatusChange(ctx context.Context, c StatusChange) {
	for _, l := range d.Embedded {
		l.OnStatusChange(ctx, c)
	}
	d.send(c.Resource, func() (cloudevents.Event, error) { return statusEvent(c) })
}

// OnEvent implements Listener.
func (d *Dispatcher) OnEvent(ctx context.Context, e Event) {
	for _, l := range d.Embedded {
		l.OnEvent(ctx, e)
	}
	d.send(e.Resource, func() (cloudevents.Event, error) { return eventEvent(e) })
}

func (d *Dispatcher) send(r Resource, build func() (cloudevents.Event, error)) {
	sinks := d.current()
	if len(sinks) == 0 {
		return
	}
	ev, err := build()
	if err != nil {
		d.Log.Error(err, "cannot encode the event for resource listeners")
		return
	}
	key := r.Kind + "/" + r.Namespace + "/" + r.Name
	for _, s := range sinks {
		s.push(key, r.Namespace, ev)
	}
}

// current are the sinks of the configuration in force, rebuilt when its text changed. A
// configuration that cannot be read keeps none (operatorconfig refuses it at load; this is
// the flags-only path) and says why.
func (d *Dispatcher) current() []*sink {
	var conf map[string]string
	if d.OperatorConfig != nil {
		conf = d.OperatorConfig()
	}
	text := conf[options.ExtensionListeners.Key] + "\x00" + conf[options.ExtensionAllowedHosts.Key]
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped || d.built && text == d.builtFrom {
		return d.sinks
	}
	for _, s := range d.sinks {
		go s.stop() // after its current attempt; the caller must not wait for it
	}
	d.sinks, d.builtFrom, d.built = nil, text, true
	eps, err := endpoint.Listeners(conf)
	if err != nil {
		d.Log.Error(err, "resource listeners are not configured correctly; none is called")
		return nil
	}
	wait := d.Wait
	if wait == nil {
		wait = sleep
	}
	for _, ep := range eps {
		s, err := newSink(ep, d.Metrics, d.Log, wait)
		if err != nil {
			d.Log.Error(err, "resource listener left out", "listener", ep.Name)
			continue
		}
		d.sinks = append(d.sinks, s)
	}
	return d.sinks
}

// Start runs until ctx ends, then stops the deliveries (manager.Runnable).
func (d *Dispatcher) Start(ctx context.Context) error {
	<-ctx.Done()
	d.Stop()
	return nil
}

// NeedLeaderElection is false: Start only waits for the manager's end to stop the deliveries.
func (d *Dispatcher) NeedLeaderElection() bool { return false }

// Stop ends every delivery; later events are not sent.
func (d *Dispatcher) Stop() {
	d.mu.Lock()
	sinks := d.sinks
	d.sinks, d.stopped = nil, true
	d.mu.Unlock()
	for _, s := range sinks {
		s.stop()
	}
}
