package flink

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"
)

// TestCloseDropsIdleConnections: a client made for one reconcile leaves no keep-alive
// connection (and its two goroutines) behind once closed; before Close existed, each stayed
// idle for 90 s.
func TestCloseDropsIdleConnections(t *testing.T) {
	var open atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"flink-version":"1.20.3"}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()

	c, err := New(Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Config(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Version(context.Background()); err != nil { // answered by the Config call
		t.Fatal(err)
	}
	if n := open.Load(); n != 1 {
		t.Fatalf("%d connections open after one call, want the one kept alive", n)
	}
	c.Close()
	wait.For(t, 5*time.Second, "the idle connection closed", func() bool { return open.Load() == 0 })

	var none *Client
	none.Close() // a reconcile that made no client
}
