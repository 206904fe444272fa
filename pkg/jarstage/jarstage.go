// Package jarstage downloads jars and uploads them to a JobManager in the background, so a
// reconcile that submits a session job never holds its worker for a transfer: a slow jar server
// would otherwise keep a reconcile worker (and the namespace's share of them) for as long as it
// trickles. The reconcile asks for the jar id of a request and is told the jar is ready, still
// being staged, failed, or that the stage is full; it requeues until the jar is ready.
//
// Everything is held in memory: an operator that stops mid-transfer stages the jar again after
// its restart. What a submission runs (job id, restore path) is not decided here.
package jarstage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Defaults of Options.
const (
	DefaultGlobal       = 8
	DefaultPerNamespace = 2
	DefaultTTL          = 10 * time.Minute
	// DefaultSettle is how long the reconcile that starts a transfer waits for it: a jar from a
	// local file or a fast server is ready within it and submitted in the same reconcile.
	DefaultSettle = 250 * time.Millisecond
	// deleteTimeout bounds the deletion of a jar nobody picked up.
	deleteTimeout = 30 * time.Second
)

// Key names one staged jar: the same key is one transfer, whoever asks.
type Key struct {
	// Owner is the UID of the session job the jar is staged for.
	Owner string
	// JobID is the job id the jar will be run under.
	JobID string
	// JarURI is where the jar comes from.
	JarURI string
	// Cluster names the JobManager the jar is uploaded to (its identity and endpoint).
	Cluster string
}

// Request is what to stage. The functions run outside the reconcile, with the stage's context
// (cancelled when the stage stops).
type Request struct {
	Key Key
	// Namespace is the namespace whose transfers the per-namespace cap counts.
	Namespace string
	// Fetch opens the jar and returns its file name.
	Fetch func(ctx context.Context) (io.ReadCloser, string, error)
	// Upload sends the jar to the JobManager and returns its jar id.
	Upload func(ctx context.Context, name string, r io.Reader) (string, error)
	// Delete removes an uploaded jar nobody picked up.
	Delete func(ctx context.Context, jarID string) error
}

// State of a request.
type State int

const (
	// Busy: the stage is full (or stopping); nothing was started, ask again later.
	Busy State = iota
	// Running: the jar is being fetched or uploaded.
	Running
	// Ready: the jar is uploaded under JarID; the caller owns it now (runs and deletes it).
	Ready
	// Failed: fetching or uploading failed with Err; the next request starts over.
	Failed
)

func (s State) String() string {
	switch s {
	case Busy:
		return "Busy"
	case Running:
		return "Running"
	case Ready:
		return "Ready"
	case Failed:
		return "Failed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Result answers a request.
type Result struct {
	State State
	JarID string
	Err   error
}

// FetchError is a failure to fetch the jar (as opposed to uploading it).
type FetchError struct{ Err error }

func (e *FetchError) Error() string { return e.Err.Error() }
func (e *FetchError) Unwrap() error { return e.Err }

// Options bound the stage.
type Options struct {
	// Global is the most transfers at once (DefaultGlobal when 0).
	Global int
	// PerNamespace is the most transfers of one namespace at once (DefaultPerNamespace when 0).
	PerNamespace int
	// TTL is how long a staged jar waits for its reconcile before it is deleted (DefaultTTL when 0).
	TTL time.Duration
	// Settle is how long the request that starts a transfer waits for it (DefaultSettle when 0,
	// none when negative).
	Settle time.Duration
	// Log reports jars that could not be deleted.
	Log logr.Logger
}

type entry struct {
	req   Request
	state State
	jarID string
	err   error
	done  chan struct{}
	// expiry deletes a finished entry nobody picked up.
	expiry *time.Timer
}

// Stage runs the transfers. Its zero value is not usable: use New.
type Stage struct {
	opts    Options
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	entries map[Key]*entry
	running int
	perNS   map[string]int
	stopped bool
}

// New returns a stage bounded by o. Its transfers run until Start's context ends (or forever
// when it is never started).
func New(o Options) *Stage {
	if o.Global <= 0 {
		o.Global = DefaultGlobal
	}
	if o.PerNamespace <= 0 {
		o.PerNamespace = DefaultPerNamespace
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Settle == 0 {
		o.Settle = DefaultSettle
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Stage{opts: o, ctx: ctx, cancel: cancel, entries: map[Key]*entry{}, perNS: map[string]int{}}
}

// Start waits until ctx ends, then stops the stage: transfers are cancelled, and jars uploaded
// but not picked up are deleted. It is a manager Runnable.
func (s *Stage) Start(ctx context.Context) error {
	<-ctx.Done()
	s.Stop()
	return nil
}

// Stop cancels the transfers, waits for them and deletes the jars nobody picked up.
func (s *Stage) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	var orphans []*entry
	for k, e := range s.entries {
		if e.expiry != nil {
			e.expiry.Stop()
		}
		if e.state == Ready {
			orphans = append(orphans, e)
		}
		delete(s.entries, k)
	}
	s.mu.Unlock()
	for _, e := range orphans {
		s.deleteJar(e)
	}
}

// Get answers req: the jar id once ready (handed over: asked again, the jar is staged anew),
// the failure once failed (the next request starts over), Running while it transfers, or Busy
// when the stage is full. A request not known is started when the caps allow, and waited for
// up to Settle.
func (s *Stage) Get(req Request) Result {
	s.mu.Lock()
	e, ok := s.entries[req.Key]
	if !ok {
		if s.stopped || s.running >= s.opts.Global || s.perNS[req.Namespace] >= s.opts.PerNamespace {
			s.mu.Unlock()
			return Result{State: Busy}
		}
		e = &entry{req: req, state: Running, done: make(chan struct{})}
		s.entries[req.Key] = e
		s.running++
		s.perNS[req.Namespace]++
		s.wg.Add(1)
		go s.transfer(e)
		s.mu.Unlock()
		if s.opts.Settle > 0 {
			t := time.NewTimer(s.opts.Settle)
			select {
			case <-e.done:
			case <-t.C:
			}
			t.Stop()
		}
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	return s.take(req.Key, e)
}

// take answers e's state, handing a finished entry over. Called with mu held.
func (s *Stage) take(key Key, e *entry) Result {
	if s.entries[key] != e {
		// Expired or stopped between the start and now.
		return Result{State: Busy}
	}
	switch e.state {
	case Ready, Failed:
		delete(s.entries, key)
		if e.expiry != nil {
			e.expiry.Stop()
		}
		return Result{State: e.state, JarID: e.jarID, Err: e.err}
	}
	return Result{State: e.state}
}

func (s *Stage) transfer(e *entry) {
	defer s.wg.Done()
	jarID, err := s.fetchAndUpload(e.req)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if s.perNS[e.req.Namespace]--; s.perNS[e.req.Namespace] <= 0 {
		delete(s.perNS, e.req.Namespace)
	}
	e.jarID, e.err = jarID, err
	if err != nil {
		e.state = Failed
	} else {
		e.state = Ready
	}
	close(e.done)
	if s.stopped {
		return // Stop deletes what is ready
	}
	e.expiry = time.AfterFunc(s.opts.TTL, func() { s.expire(e) })
}

func (s *Stage) fetchAndUpload(req Request) (string, error) {
	r, name, err := req.Fetch(s.ctx)
	if err != nil {
		return "", &FetchError{Err: err}
	}
	defer r.Close()
	id, err := req.Upload(s.ctx, name, r)
	if err != nil {
		return "", err
	}
	return id, nil
}

// expire drops e if nobody picked it up, deleting its jar.
func (s *Stage) expire(e *entry) {
	s.mu.Lock()
	if s.entries[e.req.Key] != e || s.stopped {
		s.mu.Unlock()
		return
	}
	delete(s.entries, e.req.Key)
	s.mu.Unlock()
	if e.state == Ready {
		s.deleteJar(e)
	}
}

func (s *Stage) deleteJar(e *entry) {
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	if err := e.req.Delete(ctx, e.jarID); err != nil && !errors.Is(err, context.Canceled) {
		s.opts.Log.Info("could not delete a staged jar nobody picked up", "jar", e.jarID, "error", err.Error())
	}
}

// Len is how many requests the stage holds (transferring or waiting to be picked up).
func (s *Stage) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
