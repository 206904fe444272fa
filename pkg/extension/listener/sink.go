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

// lane is a bounded FIFO queue and the goroutine that empties it.
type lane struct {
	mu    sync.Mutex
	queue []cloudevents.Event
	max   int
	wake  chan struct{}
}

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
	for i := range s.lanes {
		s.lanes[i] = &lane{max: perLane, wake: make(chan struct{}, 1)}
		s.done.Add(1)
		go s.run(ctx, s.lanes[i])
	}
	return s, nil
}

// push queues ev for the resource key; never blocks. A full queue drops its oldest event.
func (s *sink) push(key string, ev cloudevents.Event) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	l := s.lanes[h.Sum32()%lanes]
	l.mu.Lock()
	if len(l.queue) >= l.max {
		l.queue[0] = cloudevents.Event{} // let the dropped event's data be collected
		l.queue = l.queue[1:]
		s.metrics.dropped(s.ep.Name)
	}
	l.queue = append(l.queue, ev)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default: // already woken
	}
}

func (s *sink) run(ctx context.Context, l *lane) {
	defer s.done.Done()
	for {
		l.mu.Lock()
		var ev cloudevents.Event
		next := len(l.queue) > 0
		if next {
			ev = l.queue[0]
			l.queue[0] = cloudevents.Event{}
			l.queue = l.queue[1:]
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
