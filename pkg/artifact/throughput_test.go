package artifact

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trickle serves a jar of size bytes in pieces of piece bytes, every interval, without
// announcing its length.
func trickle(size, piece int, interval time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for sent := 0; sent < size; sent += piece {
			if _, err := io.WriteString(w, strings.Repeat("x", min(piece, size-sent))); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(interval):
			case <-r.Context().Done():
				return
			}
		}
	})
}

// TestTricklingDownloadIsCut: a server that sends a byte at a time, each well within the idle
// timeout, fails the download once the grace has passed and the average is below the
// minimum, rather than holding the reconcile until its deadline.
func TestTricklingDownloadIsCut(t *testing.T) {
	srv := serverOn(t, "127.0.0.1", trickle(1000, 1, 100*time.Millisecond))
	f := &Fetcher{AllowedNetworks: onlyFirstLoopback, IdleTimeout: time.Second,
		MinThroughput: 1000, ThroughputGrace: 300 * time.Millisecond}
	start := time.Now()
	_, err := fetch(f, srv.URL+"/job.jar", nil)
	took := time.Since(start)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrTooSlow), "got %v", err)
	assert.Contains(t, err.Error(), "below the minimum of 1000 bytes/s")
	assert.Contains(t, err.Error(), "/job.jar", "the error names the jar")
	assert.Less(t, took, 2*time.Second, "cut after the grace, not when the jar or the context ends")
}

// TestTricklingDownloadIsCutWithinTheIdleTimeout: with the defaults, a byte every few seconds
// (each read well within the 30 s idle timeout) is cut once the 10 s grace has passed.
func TestTricklingDownloadIsCutWithinTheIdleTimeout(t *testing.T) {
	srv := serverOn(t, "127.0.0.1", trickle(1000, 1, 3*time.Second))
	f := &Fetcher{AllowedNetworks: onlyFirstLoopback}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	start := time.Now()
	rc, _, err := f.Open(ctx, srv.URL+"/job.jar", nil)
	require.NoError(t, err)
	defer rc.Close()
	_, err = io.ReadAll(rc)
	took := time.Since(start)
	require.ErrorIs(t, err, ErrTooSlow)
	assert.InDelta(t, DefaultThroughputGrace.Seconds(), took.Seconds(), 2, "cut when the grace ends: %s", took)
}

// TestSteadyDownloadAboveTheMinimumCompletes: a slow but steady server above the minimum is
// not cut, however long it takes.
func TestSteadyDownloadAboveTheMinimumCompletes(t *testing.T) {
	srv := serverOn(t, "127.0.0.1", trickle(3000, 100, 50*time.Millisecond)) // ~2000 bytes/s for 1.5 s
	f := &Fetcher{AllowedNetworks: onlyFirstLoopback, MinThroughput: 1000, ThroughputGrace: 300 * time.Millisecond}
	data, err := fetch(f, srv.URL+"/job.jar", nil)
	require.NoError(t, err)
	assert.Len(t, data, 3000)
}

// TestSlowConsumerIsNotCountedAgainstTheServer: the time the consumer (the upload to a slow
// session cluster) spends between reads is not the server's: a fast server read slowly
// completes.
func TestSlowConsumerIsNotCountedAgainstTheServer(t *testing.T) {
	srv := serverOn(t, "127.0.0.1", trickle(64<<10, 64<<10, time.Millisecond))
	f := &Fetcher{AllowedNetworks: onlyFirstLoopback, MinThroughput: 1 << 20, ThroughputGrace: 100 * time.Millisecond}
	rc, _, err := f.Open(context.Background(), srv.URL+"/job.jar", nil)
	require.NoError(t, err)
	defer rc.Close()
	buf := make([]byte, 4<<10)
	total := 0
	start := time.Now()
	for {
		n, err := rc.Read(buf)
		total += n
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond) // the upload is busy
	}
	assert.Equal(t, 64<<10, total)
	require.Greater(t, time.Since(start), 200*time.Millisecond, "the wall-clock rate was below the minimum")
}

// TestNegativeMinThroughputIsNoMinimum: the minimum can be turned off.
func TestNegativeMinThroughputIsNoMinimum(t *testing.T) {
	srv := serverOn(t, "127.0.0.1", trickle(10, 1, 50*time.Millisecond))
	f := &Fetcher{AllowedNetworks: onlyFirstLoopback, MinThroughput: -1, ThroughputGrace: time.Millisecond}
	data, err := fetch(f, srv.URL+"/job.jar", nil)
	require.NoError(t, err)
	assert.Len(t, data, 10)
}

func TestAllowedWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		received int64
		want     time.Duration
	}{
		{name: "nothing yet: the grace", received: 0, want: 10 * time.Second},
		{name: "little: still the grace", received: 16 << 10, want: 10 * time.Second},
		{name: "more than the grace's worth: its time at the minimum", received: 32 << 20, want: 2048 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &idleReader{minRate: 16 << 10, grace: 10 * time.Second, received: tc.received}
			assert.Equal(t, tc.want, r.allowedWait())
		})
	}
}
