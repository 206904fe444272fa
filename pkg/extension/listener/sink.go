package listener

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/go-logr/logr"

	"github.com/flink-operator/flink-operator/pkg/extension/endpoint"
)

// lanes per endpoint: one resource's events always take the same lane (in order), and a
// resource whose deliveries are being retried holds up only the resources sharing its lane.
const lanes = 4

// sink delivers to one listener endpoint.
type sink struct {
	ep      endpoint.Listener
	client  cloudevents.Client
	metrics *Metrics
	log     logr.Logger
	// wait sleeps between attempts (time.After unless a test replaces it); false when ctx ended.
	wait   func(ctx context.Context, d time.Duration) bool
	lanes  [lanes]*lane
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// lane is a bounded FIFO queue and the goroutine that empties it. It is bounded by the number
// of its events and by their size; when either is exceeded it drops the oldest event of the
// namespace holding the most of it (bytes or events), so that one namespace's flood, under a
// slow listener, evicts its own events and not the other namespaces'.
type lane struct {
	mu       sync.Mutex
	queue    []queued
	max      int
	maxBytes int64
	bytes    int64
	// per namespace: the events and bytes it has queued
	nsCount map[string]int
	nsBytes map[string]int64
	wake    chan struct{}
}

// queued is an event waiting in a lane, with the namespace it is about and its size.
type queued struct {
	ev        cloudevents.Event
	namespace string
	size      int64
}

// eventOverhead is what an event weighs beyond its data (attributes, the lane's entry).
const eventOverhead = 512

func newSink(ep endpoint.Listener, m *Metrics, log logr.Logger, wait func(context.Context, time.Duration) bool) (*sink, error) {
	hc, err := ep.Client()
	if err != nil {
		return nil, err
	}
	// The attempt's own context bounds it (deliver); the client's timeout would also bound the
	// SDK's own waits.
	hc.Timeout = 0
	c, err := cloudevents.NewClientHTTP(cehttp.WithTarget(ep.URL.String()), cehttp.WithClient(*hc))
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", ep.Name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &sink{ep: ep, client: c, metrics: m, log: log.WithValues("listener", ep.Name), wait: wait, cancel: cancel}
	perLane := max(1, ep.QueueSize/lanes)
	queueBytes := ep.QueueBytes
	if queueBytes <= 0 {
		queueBytes = endpoint.DefaultQueueBytes
	}
	perLaneBytes := max(1, queueBytes/lanes)
	for i := range s.lanes {
		s.lanes[i] = &lane{max: perLane, maxBytes: perLaneBytes, nsCount: map[string]int{}, nsBytes: map[string]int64{},
			wake: make(chan struct{}, 1)}
		s.done.Add(1)
		go s.run(ctx, s.lanes[i])
	}
	return s, nil
}

// push queues ev, about a resource of namespace ns identified by key; never blocks. A full lane
// drops events first (lane.admit).
func (s *sink) push(key, ns string, ev cloudevents.Event) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	l := s.lanes[h.Sum32()%lanes]
	q := queued{ev: ev, namespace: ns, size: int64(len(ev.Data())) + eventOverhead}
	l.mu.Lock()
	dropped := l.admit(q)
	l.mu.Unlock()
	for range dropped {
		s.metrics.dropped(s.ep.Name)
	}
	if dropped > 0 {
		s.log.V(1).Info("listener queue full: dropped events", "namespace", ns, "dropped", dropped)
	}
	select {
	case l.wake <- struct{}{}:
	default: // already woken
	}
}

// admit queues q, first dropping, while the lane with q would hold too many events or bytes,
// the oldest event of the namespace that holds the most of them (q counted as its
// namespace's). q itself is dropped when its namespace is that one and has nothing queued,
// or when q alone exceeds the budget. Returns how many events were dropped. l.mu is held.
func (l *lane) admit(q queued) int {
	if q.size > l.maxBytes {
		return 1
	}
	dropped := 0
	for len(l.queue)+1 > l.max || l.bytes+q.size > l.maxBytes {
		byBytes := l.bytes+q.size > l.maxBytes
		victim := l.heaviest(q, byBytes)
		i := l.oldest(victim)
		if i < 0 { // the heaviest namespace is q's, with nothing queued: q goes
			return dropped + 1
		}
		l.remove(i)
		dropped++
	}
	l.queue = append(l.queue, q)
	l.bytes += q.size
	l.nsCount[q.namespace]++
	l.nsBytes[q.namespace] += q.size
	return dropped
}

// heaviest is the namespace holding the most bytes (byBytes) or events of the lane, counting
// the incoming q as its namespace's; a tie goes to the namespace queued earliest.
func (l *lane) heaviest(q queued, byBytes bool) string {
	weight := func(ns string) int64 {
		w := int64(l.nsCount[ns])
		if byBytes {
			w = l.nsBytes[ns]
		}
		if ns == q.namespace {
			if byBytes {
				w += q.size
			} else {
				w++
			}
		}
		return w
	}
	best, bestWeight := "", int64(-1)
	seen := map[string]bool{}
	for _, e := range l.queue { // oldest first: a tie goes to the namespace queued earliest
		if !seen[e.namespace] {
			seen[e.namespace] = true
			if w := weight(e.namespace); w > bestWeight {
				best, bestWeight = e.namespace, w
			}
		}
	}
	if !seen[q.namespace] && weight(q.namespace) > bestWeight {
		best = q.namespace
	}
	return best
}

// oldest is the index of ns's oldest queued event, -1 when it has none.
func (l *lane) oldest(ns string) int {
	if l.nsCount[ns] == 0 {
		return -1
	}
	for i, e := range l.queue {
		if e.namespace == ns {
			return i
		}
	}
	return -1
}

// remove takes the event at i out of the lane (the order of the others stays).
func (l *lane) remove(i int) queued {
	q := l.queue[i]
	copy(l.queue[i:], l.queue[i+1:])
	l.queue[len(l.queue)-1] = queued{} // let the removed event's data be collected
	l.queue = l.queue[:len(l.queue)-1]
	l.bytes -= q.size
	if l.nsCount[q.namespace]--; l.nsCount[q.namespace] == 0 {
		delete(l.nsCount, q.namespace)
		delete(l.nsBytes, q.namespace)
	} else {
		l.nsBytes[q.namespace] -= q.size
	}
	return q
}

func (s *sink) run(ctx context.Context, l *lane) {
	defer s.done.Done()
	for {
		l.mu.Lock()
		var ev cloudevents.Event
		next := len(l.queue) > 0
		if next {
			ev = l.remove(0).ev
		}
		l.mu.Unlock()
		if !next {
			select {
			case <-ctx.Done():
				return
			case <-l.wake:
				continue
			}
		}
		s.deliver(ctx, ev)
	}
}

// deliver tries ev up to MaxAttempts times, waiting InitialBackoff after the first failure and
// twice as long after each further one (at most MaxBackoff). An answer that retrying cannot
// change (HTTP 4xx other than 408 and 429) ends the attempts.
func (s *sink) deliver(ctx context.Context, ev cloudevents.Event) {
	backoff := s.ep.InitialBackoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, s.ep.Timeout)
		res := s.client.Send(actx, ev)
		cancel()
		if cloudevents.IsACK(res) {
			s.metrics.delivered(s.ep.Name, true)
			return
		}
		if !retriable(res) || attempt >= s.ep.MaxAttempts || ctx.Err() != nil {
			s.metrics.delivered(s.ep.Name, false)
			s.log.Info("gave up delivering an event", "type", ev.Type(), "subject", ev.Subject(), "attempts", attempt, "error", res.Error())
			return
		}
		if !s.wait(ctx, backoff) {
			s.metrics.delivered(s.ep.Name, false)
			return
		}
		backoff = min(2*backoff, s.ep.MaxBackoff)
	}
}

func retriable(res error) bool {
	var hr *cehttp.Result
	if errors.As(res, &hr) && hr.StatusCode >= 400 && hr.StatusCode < 500 {
		return hr.StatusCode == http.StatusRequestTimeout || hr.StatusCode == http.StatusTooManyRequests
	}
	return true
}

// stop ends the sink's goroutines after their current attempt; queued events are dropped.
func (s *sink) stop() {
	s.cancel()
	s.done.Wait()
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
