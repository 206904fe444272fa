package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestBenchSmoke runs the benchmark small (20 FlinkDeployments, a 2 s steady window, 20
// unrelated Pods and ConfigMaps): the operator creates every JobManager Deployment and acts on
// the spec change made half-way, both limit runs complete, the memory comparison is made, and
// the table and JSON come out. It checks the bench works, not how fast anything is.
func TestBenchSmoke(t *testing.T) {
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
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
