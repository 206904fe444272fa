package jarstage

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"

	"github.com/stretchr/testify/require"
)

// jobManager is a fake upload target with a jar source whose downloads wait for release.
type jobManager struct {
	mu      sync.Mutex
	jars    map[string]bool
	deleted []string
	fetches atomic.Int32
	// gate, when set, holds every fetch until it is closed (or the stage stops).
	gate chan struct{}
	// fetchErr, uploadErr fail the transfers.
	fetchErr, uploadErr error
	active, maxActive   atomic.Int32
}

func newJobManager() *jobManager { return &jobManager{jars: map[string]bool{}} }

func (j *jobManager) request(owner, ns string) Request {
	return Request{
		Key:       Key{Owner: owner, JobID: "job-" + owner, JarURI: "https://jars/" + owner + ".jar", Cluster: ns + "/session"},
		Namespace: ns,
		Fetch: func(ctx context.Context) (io.ReadCloser, string, error) {
			j.fetches.Add(1)
			n := j.active.Add(1)
			defer j.active.Add(-1)
			for m := j.maxActive.Load(); n > m && !j.maxActive.CompareAndSwap(m, n); m = j.maxActive.Load() {
			}
			if j.gate != nil {
				select {
				case <-j.gate:
				case <-ctx.Done():
					return nil, "", ctx.Err()
				}
			}
			if j.fetchErr != nil {
				return nil, "", j.fetchErr
			}
			return io.NopCloser(strings.NewReader("PK")), owner + ".jar", nil
		},
		Upload: func(_ context.Context, name string, r io.Reader) (string, error) {
			if j.uploadErr != nil {
				return "", j.uploadErr
			}
			if _, err := io.ReadAll(r); err != nil {
				return "", err
			}
			j.mu.Lock()
			defer j.mu.Unlock()
			j.jars[name] = true
			return name, nil
		},
		Delete: func(_ context.Context, id string) error {
			j.mu.Lock()
			defer j.mu.Unlock()
			delete(j.jars, id)
			j.deleted = append(j.deleted, id)
			return nil
		},
	}
}

func (j *jobManager) held() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.jars)
}

// await asks for req until it is no longer running.
func await(t *testing.T, s *Stage, req Request) Result {
	t.Helper()
	var res Result
	wait.For(t, 5*time.Second, "the awaited condition", func() bool {
		res = s.Get(req)
		return res.State != Running
	})
	return res
}

func TestReadyJarIsHandedOverOnce(t *testing.T) {
	jm := newJobManager()
	// The fetch waits for the gate: an instant one could finish between Get starting it and
	// Get answering, and the first answer would be Ready (seen once in CI on a loaded machine).
	jm.gate = make(chan struct{})
	s := New(Options{Settle: -1})
	defer s.Stop()
	req := jm.request("a", "ns")
	require.Equal(t, Running, s.Get(req).State, "started, not waited for")
	close(jm.gate)
	res := await(t, s, req)
	require.Equal(t, Ready, res.State)
	require.Equal(t, "a.jar", res.JarID)
	require.Zero(t, s.Len(), "handed over: the caller owns the jar")
	require.Equal(t, 1, jm.held())
}

func TestSettleAnswersFastJarsAtOnce(t *testing.T) {
	jm := newJobManager()
	s := New(Options{Settle: 2 * time.Second})
	defer s.Stop()
	res := s.Get(jm.request("a", "ns"))
	require.Equal(t, Ready, res.State, "a fast jar is ready within the request that starts it")
}

func TestIdenticalRequestsShareOneTransfer(t *testing.T) {
	jm := newJobManager()
	jm.gate = make(chan struct{})
	s := New(Options{Settle: -1})
	defer s.Stop()
	req := jm.request("a", "ns")
	for range 5 {
		require.Equal(t, Running, s.Get(req).State)
	}
	close(jm.gate)
	require.Equal(t, Ready, await(t, s, req).State)
	require.Equal(t, int32(1), jm.fetches.Load(), "one download for identical requests")

	other := req
	other.Key.JobID = "another-job-id"
	require.Equal(t, Ready, await(t, s, other).State, "another job id is another transfer")
	require.Equal(t, int32(2), jm.fetches.Load())
}

func TestCaps(t *testing.T) {
	jm := newJobManager()
	jm.gate = make(chan struct{})
	s := New(Options{Global: 3, PerNamespace: 2, Settle: -1})
	defer s.Stop()
	states := func(reqs ...Request) []State {
		var out []State
		for _, r := range reqs {
			out = append(out, s.Get(r).State)
		}
		return out
	}
	a1, a2, a3 := jm.request("a1", "a"), jm.request("a2", "a"), jm.request("a3", "a")
	b1, b2, c1 := jm.request("b1", "b"), jm.request("b2", "b"), jm.request("c1", "c")
	require.Equal(t, []State{Running, Running, Busy}, states(a1, a2, a3), "two of one namespace at once")
	require.Equal(t, []State{Running, Busy, Busy}, states(b1, b2, c1), "three at once in all")
	require.Equal(t, []State{Running, Running, Running}, states(a1, a2, b1), "asked again: still running, not refused")
	wait.For(t, 5*time.Second, "the awaited condition", func() bool { return jm.active.Load() == 3 })
	close(jm.gate)
	require.Equal(t, Ready, await(t, s, a1).State)
	require.Equal(t, Ready, await(t, s, a2).State)
	require.Equal(t, Ready, await(t, s, b1).State)
	require.Equal(t, Ready, await(t, s, a3).State, "a slot freed: started")
	require.Equal(t, Ready, await(t, s, c1).State)
	require.LessOrEqual(t, jm.maxActive.Load(), int32(3))
}

func TestFailuresAreReportedOnceAndRetried(t *testing.T) {
	jm := newJobManager()
	jm.fetchErr = errors.New("404 from the jar server")
	s := New(Options{Settle: -1})
	defer s.Stop()
	req := jm.request("a", "ns")
	res := await(t, s, req)
	require.Equal(t, Failed, res.State)
	var fe *FetchError
	require.ErrorAs(t, res.Err, &fe, "a download failure is told apart from an upload failure")
	require.EqualError(t, res.Err, "404 from the jar server")

	jm.fetchErr, jm.uploadErr = nil, errors.New("JobManager said 500")
	res = await(t, s, req)
	require.Equal(t, Failed, res.State, "asked again after a failure: staged again")
	require.False(t, errors.As(res.Err, &fe), "an upload failure is no download failure")
	require.EqualError(t, res.Err, "JobManager said 500")
	require.Equal(t, int32(2), jm.fetches.Load())
}

func TestJarsNobodyPicksUpAreDeleted(t *testing.T) {
	jm := newJobManager()
	s := New(Options{TTL: 200 * time.Millisecond, Settle: -1})
	defer s.Stop()
	s.Get(jm.request("a", "ns"))
	wait.For(t, 5*time.Second, "uploaded", func() bool { return jm.held() == 1 })
	wait.For(t, 5*time.Second, "deleted from the JobManager after the TTL", func() bool { return jm.held() == 0 && s.Len() == 0 })
	require.Equal(t, []string{"a.jar"}, jm.deleted)

	// A jar picked up within the TTL is the caller's: never deleted by the stage.
	res := await(t, s, jm.request("b", "ns"))
	require.Equal(t, Ready, res.State)
	time.Sleep(400 * time.Millisecond)
	require.Equal(t, []string{"a.jar"}, jm.deleted)
}

func TestStopCancelsTransfersAndDeletesUnclaimedJars(t *testing.T) {
	jm := newJobManager()
	s := New(Options{Settle: -1})
	ready := jm.request("ready", "ns")
	s.Get(ready)
	wait.For(t, 5*time.Second, "the awaited condition", func() bool { return jm.held() == 1 })

	slow := newJobManager()
	slow.gate = make(chan struct{}) // never opened
	s.Get(slow.request("slow", "ns"))
	wait.For(t, 5*time.Second, "the awaited condition", func() bool { return slow.active.Load() == 1 })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the stage did not stop with its context: a download holds it")
	}
	require.Zero(t, slow.active.Load(), "the download was cancelled")
	require.Zero(t, jm.held(), "the jar nobody picked up was deleted")
	require.Equal(t, Busy, s.Get(jm.request("late", "ns")).State, "nothing starts once stopped")
}
