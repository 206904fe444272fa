package endpoint

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endless answers status with a body that never ends, as fast as the client reads it.
func endless(t *testing.T, status int) *url.URL {
	t.Helper()
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	return u
}

// allocatedDuring is what the process allocates while f runs.
func allocatedDuring(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestEndlessAnswersAreCut: an endpoint's answer is read only up to MaxResponseBytes, whoever
// reads it: the validator's own code, or the CloudEvents SDK, which reads the whole body of an
// error answer into its error.
func TestEndlessAnswersAreCut(t *testing.T) {
	c := Common{Name: "hostile", Timeout: 3 * time.Second}
	t.Run("a body read whole", func(t *testing.T) {
		c.URL = endless(t, http.StatusOK)
		hc, err := c.Client()
		require.NoError(t, err)
		var readErr error
		var n int
		start := time.Now()
		alloc := allocatedDuring(func() {
			resp, err := hc.Get(c.URL.String())
			require.NoError(t, err)
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			n, readErr = len(data), err
		})
		require.Error(t, readErr)
		assert.ErrorIs(t, readErr, ErrResponseTooLarge)
		assert.Contains(t, readErr.Error(), "hostile answered more than 1048576 bytes")
		assert.LessOrEqual(t, n, MaxResponseBytes)
		assert.Less(t, time.Since(start), 2*time.Second, "cut at the limit, not at the timeout")
		assert.Less(t, alloc, uint64(32<<20), "allocated %d MiB", alloc>>20)
	})
	t.Run("a listener's error answer", func(t *testing.T) {
		c.URL = endless(t, http.StatusInternalServerError)
		hc, err := c.Client()
		require.NoError(t, err)
		ce, err := cloudevents.NewClientHTTP(cehttp.WithTarget(c.URL.String()), cehttp.WithClient(*hc))
		require.NoError(t, err)
		ev := cloudevents.NewEvent()
		ev.SetID("1")
		ev.SetSource("flink-operator")
		ev.SetType("test")
		var res error
		start := time.Now()
		alloc := allocatedDuring(func() { res = ce.Send(context.Background(), ev) })
		require.False(t, cloudevents.IsACK(res))
		assert.Less(t, time.Since(start), 2*time.Second, "cut at the limit, not at the timeout")
		assert.Less(t, alloc, uint64(32<<20), "allocated %d MiB", alloc>>20)
		assert.Less(t, len(res.Error()), MaxResponseBytes+1000)
	})
	t.Run("an answer at the limit is whole", func(t *testing.T) {
		body := bytes.Repeat([]byte("y"), MaxResponseBytes)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
		defer srv.Close()
		hc, err := Common{Name: "fine", Timeout: 3 * time.Second}.Client()
		require.NoError(t, err)
		resp, err := hc.Get(srv.URL)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, body, data)
	})
}
