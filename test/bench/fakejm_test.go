package bench

import (
	"context"
	"testing"

	"github.com/flink-operator/flink-operator/pkg/flink"
)

// TestJobManagersRouteByPathPrefix drives the running mode's fake JobManagers through the
// operator's own REST client, addressed as the operator's URL template addresses them: each
// cluster at its own path prefix, with its own jobs, savepoints and call counts, and a job
// counts as restored only when started from its cluster's newest stop-with-savepoint.
func TestJobManagersRouteByPathPrefix(t *testing.T) {
	ctx := context.Background()
	fake := newJobManagers()
	defer fake.close()
	client := func(name string) *flink.Client {
		c, err := flink.New(flink.Options{URL: fake.srv.URL + "/bench/" + name})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := client("fd-a"), client("fd-b")
	const job, next = "00000000000000000000000000000001", "00000000000000000000000000000002"
	fake.start("bench", "fd-a", job, "")

	if state, err := a.JobStatus(ctx, job); err != nil || state != "RUNNING" {
		t.Fatalf("cluster a: job %s, %v; want RUNNING", state, err)
	}
	if _, err := b.JobStatus(ctx, job); !flink.IsNotFound(err) {
		t.Fatalf("cluster b answered for cluster a's job: %v", err)
	}
	trigger := flink.NewTriggerID()
	if err := a.StopWithSavepoint(ctx, job, flink.StopRequest{TriggerID: trigger}); err != nil {
		t.Fatal(err)
	}
	sp, err := a.SavepointStatus(ctx, job, trigger)
	if err != nil || sp.State != flink.OperationCompleted || sp.Location == "" {
		t.Fatalf("stop-with-savepoint: %+v, %v; want completed with a location", sp, err)
	}
	if state, _ := a.JobStatus(ctx, job); state != "FINISHED" {
		t.Errorf("job after its stop-with-savepoint: %s, want FINISHED", state)
	}

	fake.start("bench", "fd-a", next, "file:/elsewhere")
	if fake.restoredFromLastSavepoint("bench", "fd-a", next) {
		t.Error("a job started from another path counted as restored from the savepoint")
	}
	fake.start("bench", "fd-a", next, sp.Location)
	if !fake.restoredFromLastSavepoint("bench", "fd-a", next) {
		t.Error("a job started from the savepoint not counted as restored from it")
	}
	if fake.restoredFromLastSavepoint("bench", "fd-b", next) {
		t.Error("cluster b, which never stopped a job, counted as restored")
	}

	onlyA := fake.counts(map[string]bool{"bench/fd-a": true})
	// JobStatus asks for the version (GET /config) once per client.
	want := callCounts{"GET /config": 1, "GET /jobs/:jobid/status": 2, "POST /jobs/:jobid/stop": 1, "GET /jobs/:jobid/savepoints/:triggerid": 1}
	if len(onlyA) != len(want) {
		t.Errorf("cluster a's calls %v, want %v", onlyA, want)
	}
	for route, n := range want {
		if onlyA[route] != n {
			t.Errorf("cluster a: %d × %s, want %d (all: %v)", onlyA[route], route, n, onlyA)
		}
	}
	if all := fake.counts(nil).total(); all != onlyA.total()+2 {
		t.Errorf("%d calls in all, want cluster a's %d and cluster b's 2", all, onlyA.total())
	}
}
