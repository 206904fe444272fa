package controllers

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinksessionjob"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/jarstage"
	"github.com/flink-operator/flink-operator/pkg/nsshare"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// tarpit is a jar server that answers at once and then sends one byte every interval, each
// within the download's idle timeout, counting the downloads it holds.
type tarpit struct {
	url               string
	active, maxActive atomic.Int32
	// hangUp closes the connections it holds.
	hangUp func()
}

func newTarpit(t *testing.T, interval time.Duration) *tarpit {
	t.Helper()
	tp := &tarpit{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := tp.active.Add(1)
		defer tp.active.Add(-1)
		for m := tp.maxActive.Load(); n > m && !tp.maxActive.CompareAndSwap(m, n); m = tp.maxActive.Load() {
		}
		for {
			if _, err := w.Write([]byte("P")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(interval):
			case <-r.Context().Done():
				return
			}
		}
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	tp.url, tp.hangUp = srv.URL, srv.CloseClientConnections
	return tp
}

// TestTarpitJarsInOneNamespaceDoNotStarveAnother: 25 session jobs in one namespace whose jars
// come from a server that trickles a byte every 3 s hold no reconcile worker for their
// downloads, which run in the jar stage, as many at once as its per-namespace cap; a session job in another namespace is still submitted to its JobManager in
// the time it takes without them (measured first, in the same test), not after the tarpits.
func TestTarpitJarsInOneNamespaceDoNotStarveAnother(t *testing.T) {
	env := testEnv(t)
	c := env.Client
	ctx := context.Background()
	nsA, nsB := env.NewNamespace(t, "tarpit"), env.NewNamespace(t, "neighbour")
	flink := fakeflink.New(t)
	// A byte every 3 s: within the download's idle timeout (30 s) and the upload's stall
	// watchdog (the REST timeout, 10 s as the operator's default).
	pit := newTarpit(t, 3*time.Second)
	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))
	for _, ns := range []string{nsA, nsB} {
		session := fixtures.NewDeployment(t, ns, "session")
		session.Spec.Job = nil
		require.NoError(t, c.Create(ctx, session))
		wait.For(t, 10*time.Second, "the session marked ready", func() bool {
			s := get(t, c, ns, "session")
			s.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
			return c.Status().Update(ctx, s) == nil
		})
	}

	// As the operator runs by default: 25 workers, a namespace's share of a quarter of them.
	workers := reconciler.DefaultReconcileParallelism
	share := nsshare.Default(workers)
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	startManager(t, managerOptions{namespaces: []string{nsA, nsB}, workers: workers,
		setup: func(mgr ctrl.Manager, rec record.EventRecorder) error {
			return (&flinksessionjob.FlinkSessionJobReconciler{
				Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
				Flink:     &clients.Factory{URLTemplate: flink.URL, Timeout: 10 * time.Second},
				Artifacts: &artifact.Fetcher{LocalDir: "/", AllowedNetworks: loopback},
				Validator: &validation.Validator{AllowedJarSchemes: []string{"file", "http"}, AllowedNetworks: loopback},
				Intervals: fixtures.FastIntervals(), ReconcilerOptions: reconciler.ReconcilerOptions{RateLimits: reconciler.RateLimits{PerNamespace: share}},
			}).SetupWithManager(mgr)
		}})
	// Before the manager stops (cleanups run last first): the reconciles in the tarpit end.
	t.Cleanup(pit.hangUp)

	create := func(ns, name, jarURI string) client.ObjectKey {
		t.Helper()
		job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{
				JarURI: jarURI, Parallelism: 1, UpgradeMode: flinkv1beta1.UpgradeModeStateless, State: flinkv1beta1.JobStateRunning}}}
		require.NoError(t, c.Create(ctx, job))
		return client.ObjectKeyFromObject(job)
	}
	// submittedWithin creates a session job in namespace B and says how long until the fake
	// JobManager received its run request (under the job id its status records), failing
	// the test once bound has passed.
	submittedWithin := func(name string, bound time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		key := create(nsB, name, "file://"+jar)
		for time.Since(start) < bound {
			j := &flinkv1beta1.FlinkSessionJob{}
			require.NoError(t, c.Get(ctx, key, j))
			if id := j.Status.JobStatus.JobID; id != "" {
				for _, run := range flink.Runs() {
					if run.JobID == id {
						return time.Since(start)
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("session job %s was not submitted to its JobManager within %s (the tarpit holds %d downloads; runs %+v)",
			key, bound, pit.active.Load(), flink.Runs())
		return 0
	}

	// The first job also waits for the manager's caches; the baseline is the second's.
	submittedWithin("warm-up", 30*time.Second)
	baseline := submittedWithin("baseline", 30*time.Second)
	t.Logf("baseline: submitted in %s", baseline)

	for i := range 25 {
		create(nsA, fmt.Sprintf("tarpit-%d", i), fmt.Sprintf("%s/job-%d.jar", pit.url, i))
	}
	// Wait until the tarpit jobs hold all the downloads they can get: the jar stage's cap of
	// a namespace, and no more coming for a while.
	held, since := int32(0), time.Now()
	wait.For(t, 30*time.Second, "the tarpit holds the jar stage's cap of downloads of a namespace", func() bool {
		if n := pit.active.Load(); n != held {
			held, since = n, time.Now()
		}
		return held >= int32(jarstage.DefaultPerNamespace) && time.Since(since) > 2*time.Second
	})
	t.Logf("the tarpit holds %d downloads", held)

	bound := baseline + 5*time.Second
	took := submittedWithin("neighbour", bound)
	t.Logf("with 25 tarpit jobs in %s: submitted in %s (bound %s); tarpit downloads at once: at most %d", nsA, took, bound, pit.maxActive.Load())
	require.LessOrEqual(t, pit.maxActive.Load(), int32(jarstage.DefaultPerNamespace), "one namespace's downloads stay within the jar stage's cap")
}
