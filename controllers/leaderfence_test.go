package controllers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/cachescope"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/leaderfence"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// A short lease, so that a standby takes over within seconds, as the operator's flags would set
// it (--leader-election-lease-duration 6s --leader-election-renew-deadline 4s
// --leader-election-retry-period 1s); the renew deadline leaves a loaded API server time to
// answer, so that the leader does not lose the lease before the test pauses it.
const (
	testLease   = 6 * time.Second
	testRenew   = 4 * time.Second
	testRetry   = time.Second
	testLeaseID = "flink-operator-fence-test"
)

// pausableLock stands for a paused process's elector: while paused, its reads and writes of
// the lease wait (a paused process sends nothing), so the elector neither renews nor notices
// that another replica took the lease.
type pausableLock struct {
	resourcelock.Interface
	mu   sync.Mutex
	gate chan struct{} // nil: running
}

func (l *pausableLock) wait() {
	l.mu.Lock()
	gate := l.gate
	l.mu.Unlock()
	if gate != nil {
		<-gate
	}
}

func (l *pausableLock) pause() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gate == nil {
		l.gate = make(chan struct{})
	}
}

func (l *pausableLock) resume() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gate != nil {
		close(l.gate)
		l.gate = nil
	}
}

func (l *pausableLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	l.wait()
	return l.Interface.Get(ctx)
}

func (l *pausableLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.wait()
	return l.Interface.Create(ctx, ler)
}

func (l *pausableLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.wait()
	return l.Interface.Update(ctx, ler)
}

// timedLog is a replica's record of what it did, each line with when.
type timedLog struct {
	mu    sync.Mutex
	at    []time.Time
	lines []string
}

func (l *timedLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Now())
	l.lines = append(l.lines, line)
}

// since returns the lines added at or after t that match.
func (l *timedLog) since(t time.Time, match func(string) bool) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for i, line := range l.lines {
		if !l.at[i].Before(t) && match(line) {
			out = append(out, line)
		}
	}
	return out
}

// hookClient is a replica's Kubernetes client: it records every delete the replica sends, and
// calls onStatus after each status write that succeeded (where a test pauses the replica).
type hookClient struct {
	client.Client
	deletes  *timedLog
	mu       sync.Mutex
	onStatus func(client.Object)
}

func (c *hookClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.deletes.add(fmt.Sprintf("delete %T %s/%s", obj, obj.GetNamespace(), obj.GetName()))
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *hookClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	c.deletes.add(fmt.Sprintf("delete all %T", obj))
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c *hookClient) Status() client.SubResourceWriter {
	return hookStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type hookStatus struct {
	client.SubResourceWriter
	c *hookClient
}

func (s hookStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	err := s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	s.c.mu.Lock()
	hook := s.c.onStatus
	s.c.mu.Unlock()
	if err == nil && hook != nil {
		hook(obj)
	}
	return err
}

// replica is one operator replica with leader election, as cmd/main.go runs it: the fenced
// lock of pkg/leaderfence, the fence on its REST clients and cluster deletes.
type replica struct {
	name   string
	mgr    ctrl.Manager
	lock   *pausableLock
	client *hookClient
	// rest are the REST requests this replica sent ("METHOD /path"), through a proxy of its
	// own in front of the shared fake JobManager.
	rest *timedLog
	// logs are its log lines (controller-runtime's at V(5) included).
	logs *timedLog
}

func startReplica(t *testing.T, name, ns string, flink *fakeflink.Server) *replica {
	t.Helper()
	env := testEnv(t)
	r := &replica{name: name, rest: &timedLog{}, logs: &timedLog{}}

	target, err := url.Parse(flink.URL)
	require.NoError(t, err)
	forward := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.rest.add(req.Method + " " + req.URL.Path)
		forward.ServeHTTP(w, req)
	}))
	t.Cleanup(proxy.Close)

	fence, err := leaderfence.New(testLease - testRenew)
	require.NoError(t, err)
	election, err := leaderfence.NewElection(fence, env.Config, leaderelection.Options{LeaderElection: true,
		LeaderElectionID: testLeaseID, LeaderElectionNamespace: ns, RenewDeadline: testRenew}, "")
	require.NoError(t, err)
	r.lock = &pausableLock{Interface: election.Lock}

	logger := funcr.New(func(prefix, args string) { r.logs.add(prefix + " " + args) }, funcr.Options{Verbosity: 5})
	skip := true
	lease, renew, retry := testLease, testRenew, testRetry
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cachescope.Options(map[string]cache.Config{ns: {}}), NewClient: cachescope.NewClient,
		Controller: config.Controller{SkipNameValidation: &skip}, Logger: logger,
		LeaderElection: true, LeaderElectionID: testLeaseID, LeaderElectionNamespace: ns,
		LeaderElectionResourceLockInterface: r.lock, LeaseDuration: &lease, RenewDeadline: &renew, RetryPeriod: &retry})
	require.NoError(t, err)
	election.SetRecorders(mgr)
	r.mgr = mgr
	r.client = &hookClient{Client: mgr.GetClient(), deletes: &timedLog{}}
	rec := record.NewFakeRecorder(1000)
	(&recordedEvents{}).record(rec)
	require.NoError(t, (&flinkdeployment.FlinkDeploymentReconciler{
		Client: r.client, Scheme: mgr.GetScheme(), Recorder: rec,
		Flink:     &clients.Factory{URLTemplate: proxy.URL, Timeout: 2 * time.Second, Fence: fence},
		Validator: &validation.Validator{}, Intervals: fixtures.FastIntervals(), ReconcilerOptions: reconciler.ReconcilerOptions{PriorityQueue: true},
	}).SetupWithManager(mgr))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		r.lock.resume() // a paused elector would hold up the manager's stop
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("replica %s did not stop", name)
		}
	})
	return r
}

func (r *replica) waitElected(t *testing.T) time.Time {
	t.Helper()
	select {
	case <-r.mgr.Elected():
		return time.Now()
	case <-time.After(30 * time.Second):
		require.FailNow(t, "replica "+r.name+" never became leader")
		return time.Time{}
	}
}

// pauseAt pauses the replica, its elector and the reconcile that wrote the status, right after
// the first status write of a FlinkDeployment that when accepts: the reconcile is about to
// act on the cluster. It returns a channel closed once paused, and resume, which lets the
// reconcile go on while the elector stays paused (so that what the resumed reconcile does is
// not cut short by the elector noticing first).
func (r *replica) pauseAt(when func(*flinkv1beta1.FlinkDeployment) bool) (paused <-chan struct{}, resume func()) {
	pausedCh, resumeCh := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.client.mu.Lock()
	defer r.client.mu.Unlock()
	r.client.onStatus = func(obj client.Object) {
		d, ok := obj.(*flinkv1beta1.FlinkDeployment)
		if !ok || !when(d) {
			return
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			return
		}
		r.lock.pause()
		close(pausedCh)
		<-resumeCh
	}
	return pausedCh, func() { close(resumeCh) }
}

// reconcileEndedSince says whether one of the replica's reconciles ended at or after t.
func (r *replica) reconcileEndedSince(t time.Time) bool {
	return len(r.logs.since(t, func(l string) bool {
		return strings.Contains(l, "Reconcile done") || strings.Contains(l, "Reconciler error") || strings.Contains(l, "Reconcile successful")
	})) > 0
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		require.FailNow(t, what+" never happened")
	}
}

// TestPausedLeaderDoesNotActAfterTakeover runs two replicas with leader election. Leader A is
// paused (its elector and a reconcile about to act on the cluster) past its lease; B takes
// over and carries the reconcile on; A resumes. A must not stop the job, nor delete the
// cluster B has deployed meanwhile: its last renewal is older than the lease minus the margin,
// so the fence refuses. Without the fence, the resumed reconcile sends its call at once.
func TestPausedLeaderDoesNotActAfterTakeover(t *testing.T) {
	c := testEnv(t).Client

	t.Run("stop-with-savepoint", func(t *testing.T) {
		ns := testEnv(t).NewNamespace(t, "fence-stop")
		flink := fakeflink.New(t)
		flink.SetAutoComplete(false)
		k := &cluster{t: t, c: c, flink: flink}
		a := startReplica(t, "a", ns, flink)
		a.waitElected(t)
		b := startReplica(t, "b", ns, flink)
		d := stableDeployment(t, c, k, fixtures.NewDeployment(t, ns, "orders"))
		jobID := d.Status.JobStatus.JobID
		stop := "POST /jobs/" + jobID + "/stop"

		// A records the savepoint's trigger id (write-ahead) and is paused before sending it.
		paused, resume := a.pauseAt(func(d *flinkv1beta1.FlinkDeployment) bool {
			info := d.Status.JobStatus.SavepointInfo
			return info != nil && info.TriggerID != "" && info.TriggerType == flinkv1beta1.SnapshotTriggerUpgrade
		})
		setParallelism(t, c, ns, "orders", 4)
		waitClosed(t, paused, "A paused before its stop")
		tookOver := b.waitElected(t)
		// B follows the recorded trigger: it sends the stop itself.
		wait.For(t, 30*time.Second, "B stopping the job", func() bool { return len(b.rest.since(tookOver, func(l string) bool { return l == stop })) > 0 })

		resumed := time.Now()
		resume()
		wait.For(t, 30*time.Second, "A's paused reconcile to end", func() bool { return a.reconcileEndedSince(resumed) })
		assert.Empty(t, a.rest.since(tookOver, func(l string) bool { return !strings.HasPrefix(l, "GET ") }),
			"A changed the job after B took over")
		var stops []string
		for _, req := range flink.Requests() {
			if req == stop {
				stops = append(stops, req)
			}
		}
		assert.Len(t, stops, 1, "the JobManager received one stop, B's")
		assert.NotEmpty(t, a.logs.since(resumed, func(l string) bool { return strings.Contains(l, "refused to change the cluster") }),
			"A logs the refusal")
	})

	t.Run("cluster-delete", func(t *testing.T) {
		ns := testEnv(t).NewNamespace(t, "fence-delete")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		a := startReplica(t, "a", ns, flink)
		a.waitElected(t)
		b := startReplica(t, "b", ns, flink)
		dep := fixtures.NewDeployment(t, ns, "orders")
		dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeStateless
		stableDeployment(t, c, k, dep)
		old := k.jobManager(ns, "orders")
		require.NotNil(t, old)

		// A records the upgrade (write-ahead) and is paused before deleting the old cluster.
		paused, resume := a.pauseAt(func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationUpgrading
		})
		setParallelism(t, c, ns, "orders", 4)
		waitClosed(t, paused, "A paused before deleting the cluster")
		tookOver := b.waitElected(t)
		// B carries the upgrade on: the old cluster goes, the new one is deployed.
		k.collect(ns, "orders")
		var fresh *flinkv1beta1.FlinkDeployment
		wait.For(t, 30*time.Second, "B deploying the new cluster", func() bool {
			jm := k.jobManager(ns, "orders")
			return jm != nil && jm.UID != old.UID
		})
		fresh = get(t, c, ns, "orders")
		jm := k.jobManager(ns, "orders")

		resumed := time.Now()
		resume()
		wait.For(t, 30*time.Second, "A's paused reconcile to end", func() bool { return a.reconcileEndedSince(resumed) })
		assert.Empty(t, a.client.deletes.since(tookOver, func(string) bool { return true }), "A deleted after B took over")
		now := k.jobManager(ns, "orders")
		require.NotNil(t, now, "the new cluster is gone")
		assert.Equal(t, jm.UID, now.UID, "the new cluster was replaced")
		assert.True(t, now.DeletionTimestamp.IsZero(), "the new cluster B deployed is being deleted")
		assert.Contains(t, fresh.Status.ReconciliationStatus.LastReconciledSpec, `"parallelism":4`)
		assert.NotEmpty(t, a.logs.since(resumed, func(l string) bool { return strings.Contains(l, "refused to change the cluster") }),
			"A logs the refusal")
	})
}
