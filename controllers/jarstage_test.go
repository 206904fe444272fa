package controllers

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
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
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestSessionJobSlowJarDoesNotHoldTheWorker: with a single reconcile worker, a session job whose
// jar comes slowly (20 KiB/s, above the minimum download throughput, so never cut) does not
// keep the worker for its download: a session job of the same namespace with a local jar is
// submitted to the JobManager while the slow download still runs, and the slow job is
// submitted with its jar once the download ends.
func TestSessionJobSlowJarDoesNotHoldTheWorker(t *testing.T) {
	env := testEnv(t)
	c := env.Client
	ctx := context.Background()
	ns := env.NewNamespace(t, "slowjar")
	flink := fakeflink.New(t)

	const size, piece, interval = 400 << 10, 2 << 10, 100 * time.Millisecond // 20 KiB/s: 20 s
	var active, finished atomic.Int32
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer active.Add(-1)
		w.Header().Set("Content-Length", strconv.Itoa(size))
		chunk := make([]byte, piece)
		for sent := 0; sent < size; sent += piece {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(interval):
			case <-r.Context().Done():
				return
			}
		}
		finished.Add(1)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)

	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))
	session := fixtures.NewDeployment(t, ns, "session")
	session.Spec.Job = nil
	require.NoError(t, c.Create(ctx, session))
	wait.For(t, 10*time.Second, "the session marked ready", func() bool {
		s := get(t, c, ns, "session")
		s.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
		return c.Status().Update(ctx, s) == nil
	})

	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	_, stop := startManager(t, managerOptions{namespaces: []string{ns}, workers: 1,
		setup: func(mgr ctrl.Manager, rec record.EventRecorder) error {
			return (&flinksessionjob.FlinkSessionJobReconciler{
				Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
				// The upload's deadline is the REST timeout plus the jar at 1 MiB/s: 90 s lets the
				// upload wait for the whole slow download, as a streamed upload does, even when a
				// loaded machine stretches its 20 s.
				Flink: &clients.Factory{URLTemplate: flink.URL, Timeout: 90 * time.Second},
				// No throughput floor: 20 KiB/s is just above the default one, which timers slipping
				// on a loaded machine would cross; this test is about the worker, not the floor
				// (TestTricklingDownloadIsCut in pkg/artifact is about that).
				Artifacts: &artifact.Fetcher{LocalDir: "/", AllowedNetworks: loopback, MinThroughput: -1},
				Validator: &validation.Validator{AllowedJarSchemes: []string{"file", "http"}, AllowedNetworks: loopback},
				Intervals: fixtures.FastIntervals(),
			}).SetupWithManager(mgr)
		}})
	// The manager stops before the jar server closes (cleanups run last first).
	t.Cleanup(stop)

	create := func(name, jarURI string) client.ObjectKey {
		t.Helper()
		job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{
				JarURI: jarURI, Parallelism: 1, UpgradeMode: flinkv1beta1.UpgradeModeStateless, State: flinkv1beta1.JobStateRunning}}}
		require.NoError(t, c.Create(ctx, job))
		return client.ObjectKeyFromObject(job)
	}
	submitted := func(key client.ObjectKey) bool {
		j := &flinkv1beta1.FlinkSessionJob{}
		require.NoError(t, c.Get(ctx, key, j))
		id := j.Status.JobStatus.JobID
		for _, run := range flink.Runs() {
			if id != "" && run.JobID == id {
				return true
			}
		}
		return false
	}

	slow := create("slow", srv.URL+"/slow.jar")
	wait.For(t, 30*time.Second, "the slow download started", func() bool { return active.Load() == 1 })
	start := time.Now()
	fast := create("fast", "file://"+jar)
	wait.For(t, 8*time.Second, "the job with a local jar is submitted while the other's download runs (one worker)", func() bool { return submitted(fast) })
	t.Logf("fast job submitted in %s while the slow download runs", time.Since(start))
	require.Equal(t, int32(1), active.Load(), "the slow download still runs")
	require.Zero(t, finished.Load(), "the slow download has not ended")
	require.False(t, submitted(slow), "the slow job waits for its jar")

	wait.For(t, 2*time.Minute, "the slow job is submitted once its jar is staged", func() bool { return submitted(slow) })
	// The handler sleeps its interval after the last piece, which the operator already has: the
	// job can be submitted before the handler counts its download finished.
	wait.For(t, 10*time.Second, "the slow download's handler ended", func() bool { return active.Load() == 0 }, func() string { return "" })
	require.Equal(t, int32(1), finished.Load(), "downloaded once")
	wait.For(t, 10*time.Second, "both uploads are deleted after their run", func() bool { return flink.Jars() == 0 })
}
