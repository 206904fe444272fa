package listener

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// receiver is a listener endpoint that keeps the CloudEvents it receives; answer says which
// HTTP status each attempt gets (nil: 200).
type receiver struct {
	mu       sync.Mutex
	events   []cloudevents.Event
	attempts atomic.Int32
	answer   func(attempt int) int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(rc.attempts.Add(1))
	ev, err := cehttp.NewEventFromHTTPRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rc.answer != nil {
		if code := rc.answer(n); code != http.StatusOK {
			w.WriteHeader(code)
			return
		}
	}
	rc.mu.Lock()
	rc.events = append(rc.events, *ev)
	rc.mu.Unlock()
}

func (rc *receiver) received() []cloudevents.Event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]cloudevents.Event(nil), rc.events...)
}

func start(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// dispatcher sends to the listeners of listeners (loopback allowed); waits records the back-off.
func dispatcher(t *testing.T, listeners string) (*Dispatcher, *Metrics, *[]time.Duration) {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	conf := map[string]string{options.ExtensionListeners.Key: listeners, options.ExtensionAllowedHosts.Key: "127.0.0.1"}
	var mu sync.Mutex
	var waits []time.Duration
	d := &Dispatcher{OperatorConfig: func() map[string]string { return conf }, Metrics: m, Log: logr.Discard(),
		Wait: func(_ context.Context, wait time.Duration) bool {
			mu.Lock()
			waits = append(waits, wait)
			mu.Unlock()
			return true
		}}
	t.Cleanup(d.Stop)
	return d, m, &waits
}

func flinkDeployment() *flinkv1beta1.FlinkDeployment {
	return &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "orders", UID: "u-1", Generation: 3}}
}

func TestListenerReceivesCloudEvents(t *testing.T) {
	rc := &receiver{}
	srv := start(t, rc)
	d, m, _ := dispatcher(t, `[{"name": "audit", "url": "`+srv.URL+`"}]`)
	dep := flinkDeployment()
	res, ok := ResourceOf(dep)
	require.True(t, ok)

	d.OnStatusChange(context.Background(), StatusChange{Resource: res, Object: dep,
		OldStatus: json.RawMessage(`{"lifecycleState":"DEPLOYED"}`), Status: json.RawMessage(`{"lifecycleState":"STABLE"}`)})
	rec := Recorder(record.NewFakeRecorder(10), d)
	rec.Eventf(dep, "Normal", "JobStatusChanged", "Job status changed from %s to %s", "CREATED", "RUNNING")

	wait.For(t, 10*time.Second, "the awaited condition", func() bool { return len(rc.received()) == 2 })
	got := rc.received()

	status := got[0]
	assert.Equal(t, TypeStatusChanged, status.Type())
	assert.Equal(t, "/apis/flink.apache.org/v1beta1/namespaces/team-a/flinkdeployments", status.Source())
	assert.Equal(t, "orders", status.Subject())
	assert.Equal(t, cloudevents.ApplicationJSON, status.DataContentType())
	assert.NotEmpty(t, status.ID())
	var sd map[string]any
	require.NoError(t, status.DataAs(&sd))
	assert.Equal(t, map[string]any{"kind": "FlinkDeployment", "namespace": "team-a", "name": "orders", "uid": "u-1", "generation": 3.0,
		"apiVersion": "flink.apache.org/v1beta1",
		"oldStatus":  map[string]any{"lifecycleState": "DEPLOYED"}, "status": map[string]any{"lifecycleState": "STABLE"}}, sd)

	event := got[1]
	assert.Equal(t, TypeEvent, event.Type())
	assert.Equal(t, "orders", event.Subject())
	var ed EventData
	require.NoError(t, event.DataAs(&ed))
	assert.Equal(t, EventData{Resource: res, APIVersion: "flink.apache.org/v1beta1", Type: "Normal", Reason: "JobStatusChanged",
		Message: "Job status changed from CREATED to RUNNING"}, ed)
	assert.InDelta(t, 2, testutil.ToFloat64(m.Deliveries.WithLabelValues("audit", "delivered")), 0)
}

func TestListenerRetriesWithBackoff(t *testing.T) {
	rc := &receiver{answer: func(attempt int) int {
		if attempt <= 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}}
	srv := start(t, rc)
	d, m, waits := dispatcher(t, `[{"name": "flaky", "url": "`+srv.URL+`", "initialBackoff": "100 ms", "maxBackoff": "300 ms"}]`)
	res, _ := ResourceOf(flinkDeployment())
	d.OnEvent(context.Background(), Event{Resource: res, Type: "Warning", Reason: "Error", Message: "boom"})

	wait.For(t, 10*time.Second, "the awaited condition", func() bool { return len(rc.received()) == 1 })
	assert.EqualValues(t, 4, rc.attempts.Load())
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}, *waits)
	assert.InDelta(t, 1, testutil.ToFloat64(m.Deliveries.WithLabelValues("flaky", "delivered")), 0)
}

func TestListenerClientErrorIsNotRetried(t *testing.T) {
	rc := &receiver{answer: func(int) int { return http.StatusBadRequest }}
	srv := start(t, rc)
	d, m, waits := dispatcher(t, `[{"name": "picky", "url": "`+srv.URL+`"}]`)
	res, _ := ResourceOf(flinkDeployment())
	d.OnEvent(context.Background(), Event{Resource: res, Type: "Normal", Reason: "Submit", Message: "x"})
	wait.For(t, 10*time.Second, "the awaited condition", func() bool { return testutil.ToFloat64(m.Deliveries.WithLabelValues("picky", "failed")) == 1 })
	assert.EqualValues(t, 1, rc.attempts.Load())
	assert.Empty(t, *waits)
}

// A listener that never answers: every attempt times out, the events are retried and given
// up, the full queue drops the oldest, and the caller (a reconcile) is never held up. Were
// OnEvent to wait for a delivery, this test would hang on its first call.
func TestListenerTimeoutNeverBlocksAndDropsOldest(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	attempted := map[string]int{}
	srv := start(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ev, err := cehttp.NewEventFromHTTPRequest(r)
		if err == nil {
			var ed EventData
			_ = ev.DataAs(&ed)
			mu.Lock()
			attempted[ed.Message]++
			mu.Unlock()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release) })
	d, m, _ := dispatcher(t, `[{"name": "stuck", "url": "`+srv.URL+`", "timeout": "50 ms", "maxAttempts": 2, "queueSize": 4}]`)
	res, _ := ResourceOf(flinkDeployment())
	const sent = 20
	for i := range sent {
		d.OnEvent(context.Background(), Event{Resource: res, Type: "Normal", Reason: "Step", Message: string(rune('a' + i))})
	}
	// One resource's events share one lane of queueSize/4 = 1 event, while its goroutine is busy
	// with an earlier one: most are dropped, the newest is kept.
	dropped := testutil.ToFloat64(m.Dropped.WithLabelValues("stuck"))
	assert.GreaterOrEqual(t, dropped, 1.0)
	wait.For(t, 20*time.Second, "the awaited condition", func() bool {
		return testutil.ToFloat64(m.Deliveries.WithLabelValues("stuck", "failed")) == sent-dropped
	})
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, attempted, int(sent-dropped))
	assert.Equal(t, 2, attempted[string(rune('a'+sent-1))], "the newest event is kept and tried maxAttempts times")
	for msg, n := range attempted {
		assert.Equal(t, 2, n, "event %s tried maxAttempts times", msg)
	}
}

func TestListenerOrderPerResource(t *testing.T) {
	// Every third attempt fails: the retried event must still arrive before the later ones.
	rc := &receiver{answer: func(attempt int) int {
		if attempt%3 == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}}
	srv := start(t, rc)
	d, _, _ := dispatcher(t, `[{"name": "ordered", "url": "`+srv.URL+`", "maxAttempts": 10}]`)
	res, _ := ResourceOf(flinkDeployment())
	const sent = 30
	for i := range sent {
		d.OnEvent(context.Background(), Event{Resource: res, Type: "Normal", Reason: "Step", Message: string(rune('A' + i))})
	}
	wait.For(t, 20*time.Second, "the awaited condition", func() bool { return len(rc.received()) == sent })
	for i, ev := range rc.received() {
		var ed EventData
		require.NoError(t, ev.DataAs(&ed))
		assert.Equal(t, string(rune('A'+i)), ed.Message)
	}
}
