package listener

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// slowListener holds every delivery until released, then records what it received: per
// namespace the number of events and of data bytes, and the events' sequence numbers.
type slowListener struct {
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	count   map[string]int
	bytes   map[string]int
	seqs    map[string][]int
}

func newSlowListener() *slowListener {
	return &slowListener{release: make(chan struct{}), count: map[string]int{}, bytes: map[string]int{}, seqs: map[string][]int{}}
}

func (s *slowListener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ev, err := cehttp.NewEventFromHTTPRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case <-s.release:
	case <-r.Context().Done():
		return
	}
	var data struct {
		Namespace string `json:"namespace"`
		Status    struct {
			Seq int `json:"seq"`
		} `json:"status"`
	}
	_ = json.Unmarshal(ev.Data(), &data)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count[data.Namespace]++
	s.bytes[data.Namespace] += len(ev.Data())
	s.seqs[data.Namespace] = append(s.seqs[data.Namespace], data.Status.Seq)
}

func (s *slowListener) open() { s.once.Do(func() { close(s.release) }) }

func (s *slowListener) received(ns string) (count, bytes int, seqs []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count[ns], s.bytes[ns], append([]int(nil), s.seqs[ns]...)
}

// sameLane finds a resource name in namespace ns whose events take the same lane as key's.
func sameLane(t *testing.T, key, ns string) string {
	t.Helper()
	laneOf := func(k string) uint32 {
		h := fnv.New32a()
		_, _ = h.Write([]byte(k))
		return h.Sum32() % 4
	}
	for i := range 100 {
		name := fmt.Sprintf("job-%d", i)
		if laneOf("FlinkDeployment/"+ns+"/"+name) == laneOf(key) {
			return name
		}
	}
	t.Fatal("no resource name on the same lane")
	return ""
}

func statusOf(t *testing.T, seq int, filler int) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"seq": seq, "lifecycleState": "DEPLOYED", "error": strings.Repeat("x", filler)})
	require.NoError(t, err)
	return raw
}

// flap sends n status changes of a resource of ns, each with about size bytes of status.
func flap(t *testing.T, d *Dispatcher, ns, name string, from, n, size int) {
	t.Helper()
	res := Resource{Kind: "FlinkDeployment", Namespace: ns, Name: name, UID: types.UID("u-" + name), Generation: 1}
	for i := from; i < from+n; i++ {
		d.OnStatusChange(context.Background(), StatusChange{Resource: res, Status: statusOf(t, i, size)})
	}
}

// TestListenerQueueBoundedByBytes: a large tenant whose status flaps while the listener is
// slow keeps at most the lane's byte budget queued (the oldest dropped), not queueSize events
// of any size; the other namespace sharing the lane keeps its events.
func TestListenerQueueBoundedByBytes(t *testing.T) {
	const eventSize = 256 << 10
	sl := newSlowListener()
	srv := start(t, sl)
	d, m, _ := dispatcher(t, `[{"name": "slow", "url": "`+srv.URL+`", "timeout": "60 s"}]`)

	flap(t, d, "team-small", "orders", 0, 3, 100)
	big := sameLane(t, "FlinkDeployment/team-small/orders", "team-big")
	const flaps = 200
	flap(t, d, "team-big", big, 0, flaps, eventSize)
	sl.open()

	wait.For(t, 30*time.Second, "the newest status of the flapping tenant is delivered", func() bool {
		_, _, seqs := sl.received("team-big")
		return len(seqs) > 0 && seqs[len(seqs)-1] == flaps-1
	})
	count, bytes, _ := sl.received("team-big")
	t.Logf("team-big: %d of %d events delivered, %d bytes", count, flaps, bytes)
	assert.LessOrEqual(t, bytes, defaultLaneBytesForTest+eventSize+eventSize/8,
		"more than the lane's byte budget was kept for one slow listener")
	assert.Positive(t, testutilDropped(m, "slow"))
	wait.For(t, 10*time.Second, "the other namespace's events were dropped", func() bool {
		n, _, _ := sl.received("team-small")
		return n == 3
	})
}

// TestListenerQueueFairAcrossNamespaces: a full lane drops the oldest event of the namespace
// holding the most of it, so one namespace's flood does not evict another's events.
func TestListenerQueueFairAcrossNamespaces(t *testing.T) {
	sl := newSlowListener()
	srv := start(t, sl)
	d, _, _ := dispatcher(t, `[{"name": "slow", "url": "`+srv.URL+`", "timeout": "60 s", "queueSize": 40}]`)

	flap(t, d, "team-small", "orders", 0, 4, 100)
	big := sameLane(t, "FlinkDeployment/team-small/orders", "team-big")
	flap(t, d, "team-big", big, 0, 100, 100)
	sl.open()

	wait.For(t, 20*time.Second, "the awaited condition", func() bool {
		_, _, seqs := sl.received("team-big")
		return len(seqs) > 0 && seqs[len(seqs)-1] == 99
	})
	wait.For(t, 10*time.Second, "the awaited condition", func() bool {
		n, _, _ := sl.received("team-small")
		return n == 4
	})
	_, _, seqs := sl.received("team-small")
	assert.Equal(t, []int{0, 1, 2, 3}, seqs, "team-small's events survive the flood, in order")
}

// TestStatusEventLeavesOutRecordedSpecs: the HTTP payload of a status change carries the
// status without the recorded specs (lastReconciledSpec, lastStableSpec).
func TestStatusEventLeavesOutRecordedSpecs(t *testing.T) {
	rc := &receiver{}
	srv := start(t, rc)
	d, _, _ := dispatcher(t, `[{"name": "audit", "url": "`+srv.URL+`"}]`)
	res, _ := ResourceOf(flinkDeployment())
	status := json.RawMessage(`{"lifecycleState":"STABLE","reconciliationStatus":{"state":"DEPLOYED","reconciliationTimestamp":5,` +
		`"lastReconciledSpec":"{\"spec\":{}}","lastStableSpec":"{\"spec\":{}}"}}`)
	d.OnStatusChange(context.Background(), StatusChange{Resource: res, OldStatus: status, Status: status})
	wait.For(t, 10*time.Second, "the awaited condition", func() bool { return len(rc.received()) == 1 })
	var sd map[string]any
	require.NoError(t, rc.received()[0].DataAs(&sd))
	want := map[string]any{"lifecycleState": "STABLE", "reconciliationStatus": map[string]any{"state": "DEPLOYED", "reconciliationTimestamp": 5.0}}
	assert.Equal(t, want, sd["status"])
	assert.Equal(t, want, sd["oldStatus"])
}

// defaultLaneBytesForTest is the default byte budget of one lane.
const defaultLaneBytesForTest = 16 << 20

func testutilDropped(m *Metrics, name string) float64 {
	return testutil.ToFloat64(m.Dropped.WithLabelValues(name))
}

// TestLaneAdmit: which events a full lane drops.
func TestLaneAdmit(t *testing.T) {
	ev := func(ns string, size int64) queued { return queued{namespace: ns, size: size} }
	type want struct {
		dropped int
		queue   []string // namespace/size of the events left, oldest first
	}
	for _, tc := range []struct {
		name     string
		max      int
		maxBytes int64
		queued   []queued
		in       queued
		want     want
	}{
		{"room for it", 4, 100, []queued{ev("a", 10)}, ev("b", 10), want{0, []string{"a/10", "b/10"}}},
		{"over the count: the namespace with most events loses its oldest", 3, 1000,
			[]queued{ev("a", 1), ev("b", 1), ev("b", 2)}, ev("c", 1), want{1, []string{"a/1", "b/2", "c/1"}}},
		{"over the bytes: the namespace with most bytes loses its oldest", 10, 100,
			[]queued{ev("a", 30), ev("big", 40), ev("big", 20)}, ev("a", 20), want{1, []string{"a/30", "big/20", "a/20"}}},
		{"the incoming event counts for its namespace", 10, 100,
			[]queued{ev("a", 30), ev("big", 40)}, ev("big", 50), want{1, []string{"a/30", "big/50"}}},
		{"several dropped until it fits", 10, 100,
			[]queued{ev("big", 30), ev("a", 10), ev("big", 30), ev("big", 30)}, ev("big", 80), want{3, []string{"a/10", "big/80"}}},
		{"the heaviest has nothing queued: the incoming event is dropped", 10, 100,
			[]queued{ev("a", 20), ev("b", 20), ev("c", 50)}, ev("d", 60), want{1, []string{"a/20", "b/20", "c/50"}}},
		{"larger than the whole budget", 10, 100, []queued{ev("a", 10)}, ev("a", 101), want{1, []string{"a/10"}}},
		{"a tie goes to the namespace queued earliest", 2, 1000, []queued{ev("a", 1), ev("b", 1)}, ev("c", 1), want{1, []string{"b/1", "c/1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &lane{max: tc.max, maxBytes: tc.maxBytes, nsCount: map[string]int{}, nsBytes: map[string]int64{}}
			for _, q := range tc.queued {
				require.Zero(t, l.admit(q))
			}
			dropped := l.admit(tc.in)
			var left []string
			var bytes int64
			for _, q := range l.queue {
				left = append(left, fmt.Sprintf("%s/%d", q.namespace, q.size))
				bytes += q.size
			}
			assert.Equal(t, tc.want, want{dropped, left})
			assert.Equal(t, bytes, l.bytes)
			var nsBytes int64
			for _, b := range l.nsBytes {
				nsBytes += b
			}
			assert.Equal(t, bytes, nsBytes, "per-namespace bytes add up")
		})
	}
}
