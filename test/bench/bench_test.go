package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// TestBenchSmoke runs the benchmark small (20 FlinkDeployments, a 2 s steady window, 20
// unrelated Pods and ConfigMaps): the operator creates every JobManager Deployment and acts on
// the spec change made half-way, both limit runs complete, the memory comparison is made, and
// the table and JSON come out. It checks the bench works, not how fast anything is.
func TestBenchSmoke(t *testing.T) {
	skipInShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{N: 20, Concurrency: 5, Steady: 2 * time.Second, Settle: 20 * time.Second,
		Unrelated: 20, Dir: t.TempDir(), Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deployments != 20 {
		t.Errorf("operator created %d JobManager Deployments, want 20", res.Deployments)
	}
	if res.Operator.AllExist <= 0 || res.Limit.AllExist <= 0 || res.FullLimit.AllExist <= 0 {
		t.Errorf("timings missing: operator %s, limit %s, full limit %s", res.Operator.AllExist, res.Limit.AllExist, res.FullLimit.AllExist)
	}
	if res.Responsiveness.DeployedWhenChanged == 0 || res.Responsiveness.ActedOn <= 0 {
		t.Errorf("the spec change made during the run was not acted on: %+v", res.Responsiveness)
	}
	if u := res.Unrelated; u == nil || u.WithoutMiB <= 0 || u.WithMiB <= 0 {
		t.Errorf("memory with unrelated objects not measured: %+v", u)
	}
	if res.Create.Writes < 20 {
		t.Errorf("operator made %d writes for 20 new resources; its request metric was not read", res.Create.Writes)
	}
	// A new resource costs no request the API server answers with an error (a 404 GET of an
	// object about to be created, a conflict): each is a round trip served for nothing. Not
	// counted: a watch refused while the API server's watch cache of a CRD installed moments
	// before is still starting (429, informer plumbing, not per resource); the conflict of a
	// status write with the spec change the bench makes half-way (by design: a status computed
	// from the old spec must not be written over the new one); and the API server's own
	// ClusterIP allocator (POST ipaddresses 409, no client's request).
	perResource := map[string]int{}
	for request, n := range res.FailedByRequest {
		if !strings.HasPrefix(request, "WATCH ") && request != "PATCH flinkdeployments/status 409" && !strings.HasPrefix(request, "POST ipaddresses ") {
			perResource[request] = n
		}
	}
	if len(perResource) != 0 {
		t.Errorf("new resources cost failed requests (API server: %s); want none", formatFailed(perResource))
	}
	if fi, err := os.Stat(res.HeapProfile); err != nil || fi.Size() == 0 {
		t.Errorf("no heap profile of the operator at %q: %v", res.HeapProfile, err)
	}
	if res.RSSPeakMiB <= 0 || res.GoroutinesCreate <= 0 {
		t.Errorf("process figures missing: RSS peak %.1f MiB, goroutines %d", res.RSSPeakMiB, res.GoroutinesCreate)
	}
	table := res.Table()
	for _, want := range []string{"all JobManager Deployments exist", "20 of 20", "ratio", "steady window"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if err := res.WriteJSON(t.TempDir() + "/result.json"); err != nil {
		t.Error(err)
	}
	t.Log("\n" + table)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(time.Now().Format("15:04:05.000"), strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestBenchRunningSmoke runs the running mode small (10 FlinkDeployments whose jobs run on the
// fake JobManagers, 5 savepoint upgrades at once, short intervals and windows): every job
// runs, the steady window's REST calls are counted, and every upgrade completes from its
// savepoint. It checks the mode works and that no measurement is missing, not how fast
// anything is.
func TestBenchRunningSmoke(t *testing.T) {
	skipInShort(t)
	ctrllog.SetLogger(logr.Discard()) // the bench's FlinkDeployment cache logs through controller-runtime
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{N: 10, Concurrency: 5, Steady: 3 * time.Second, Settle: 20 * time.Second,
		Dir: t.TempDir(), Log: testWriter{t},
		Running: &RunningOptions{Upgrades: 5, ObserveInterval: time.Second, ProgressCheck: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	rr := res.Running
	if rr == nil {
		t.Fatal("no running-mode result")
	}
	if res.Deployments != 10 || rr.AllRunning <= 0 {
		t.Errorf("%d JobManager Deployments, all running after %s; want 10 and a time", res.Deployments, rr.AllRunning)
	}
	// A 3 s window with a 1 s interval observes each job about three times: at least one status call each.
	if got := rr.SteadyCalls["GET /jobs/:jobid/status"]; got < 10 {
		t.Errorf("steady window: %d job status calls for 10 running jobs; the fake did not count them (calls %v)", got, rr.SteadyCalls)
	}
	if rr.SteadyCallsPerJobPerInterval <= 0 || rr.SteadyCPUPercent <= 0 {
		t.Errorf("steady figures missing: %.2f calls per job per interval, CPU %.1f%%", rr.SteadyCallsPerJobPerInterval, rr.SteadyCPUPercent)
	}
	if rr.Upgraded != 5 || rr.UpgradeAll <= 0 || rr.UpgradeP50 <= 0 || rr.UpgradeP99 < rr.UpgradeP50 {
		t.Errorf("upgrades: %d of 5 completed, all after %s, p50 %s, p99 %s", rr.Upgraded, rr.UpgradeAll, rr.UpgradeP50, rr.UpgradeP99)
	}
	if rr.UpgradeCalls["POST /jobs/:jobid/stop"] < 5 || rr.UpgradeRequests.Writes < 5 {
		t.Errorf("upgrades: %d stop-with-savepoint calls, %d API writes; want at least one each per upgrade",
			rr.UpgradeCalls["POST /jobs/:jobid/stop"], rr.UpgradeRequests.Writes)
	}
	table := res.Table()
	for _, want := range []string{"Flink REST calls per job per observe interval", "5 of 5", "savepoint upgrades", "of one core"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	t.Log("\n" + table)
}

// skipInShort leaves the bench's smoke runs (two API servers and the operator, minutes) out of
// the inner loop (make test-short); make test runs them.
func skipInShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("the bench's smoke run: left out by -short (make test-short); make test runs it")
	}
}
