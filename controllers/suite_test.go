package controllers

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/flinksessionjob"
	"github.com/flink-operator/flink-operator/controllers/flinkstatesnapshot"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/cachescope"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// shared is the one control plane (kube-apiserver and etcd) of this package's tests: starting
// one takes seconds, so they share it, started by the first test that needs it. Each test
// works in namespaces of its own (testEnv(t).NewNamespace) and its operator watches only those
// (startManager), so tests neither see nor touch each other's objects, whatever ran before.
var shared kubeenv.Shared

func TestMain(m *testing.M) {
	os.Exit(shared.Run(m))
}

// testEnv is the package's control plane, started on first use.
func testEnv(t testing.TB) *kubeenv.Env {
	t.Helper()
	return shared.Get(t)
}

// managerOptions configure startManager.
type managerOptions struct {
	// namespaces the manager watches (required). On the shared control plane a manager
	// watching everything would reconcile the objects other tests left, against their fake
	// Flinks, and its events would mix with this test's.
	namespaces []string
	// logger replaces controller-runtime's logger (zero: keep it).
	logger logr.Logger
	// setup adds the reconcilers under test, recording events with rec.
	setup func(mgr ctrl.Manager, rec record.EventRecorder) error
	// workers is each controller's MaxConcurrentReconciles (zero: controller-runtime's 1).
	workers int
}

// startManager starts a manager running o.setup's reconcilers in o.namespaces, and returns the
// events they record and a function that stops it (waiting for in-flight reconciles, as a pod's
// termination does). Stopping twice is harmless; the test's cleanup stops it in any case.
func startManager(t *testing.T, o managerOptions) (*recordedEvents, func()) {
	t.Helper()
	require.NotEmpty(t, o.namespaces, "a test's manager watches the test's own namespaces only")
	skip := true // every test starts managers of its own in this process: controller names repeat
	watched := map[string]cache.Config{}
	for _, ns := range o.namespaces {
		watched[ns] = cache.Config{}
	}
	env := testEnv(t)
	opts := ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		// The operator's cache scope and client (cmd/main.go), so every test here runs with
		// the caches holding Flink's objects only.
		Cache: cachescope.Options(watched), NewClient: cachescope.NewClient,
		Controller: config.Controller{SkipNameValidation: &skip, MaxConcurrentReconciles: o.workers}}
	if o.logger.GetSink() != nil {
		opts.Logger = o.logger
	}
	mgr, err := ctrl.NewManager(env.Config, opts)
	require.NoError(t, err)
	rec := record.NewFakeRecorder(1000)
	events := &recordedEvents{}
	events.record(rec)
	require.NoError(t, o.setup(mgr, rec))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return events, stop
}

// deploymentController runs the FlinkDeployment reconciler against flink.
func deploymentController(flink *fakeflink.Server) func(ctrl.Manager, record.EventRecorder) error {
	return func(mgr ctrl.Manager, rec record.EventRecorder) error {
		return (&flinkdeployment.FlinkDeploymentReconciler{
			Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
			Flink:     &clients.Factory{URLTemplate: flink.URL, Timeout: 2 * time.Second},
			Validator: &validation.Validator{}, Intervals: fixtures.FastIntervals(),
			ReconcilerOptions: reconciler.ReconcilerOptions{PriorityQueue: true}, // as the operator runs (--reconcile-priority-queue)
		}).SetupWithManager(mgr)
	}
}

// sessionJobController runs the FlinkSessionJob reconciler against flink; jars may come from
// local files (the tests') and https.
func sessionJobController(flink *fakeflink.Server) func(ctrl.Manager, record.EventRecorder) error {
	return func(mgr ctrl.Manager, rec record.EventRecorder) error {
		return (&flinksessionjob.FlinkSessionJobReconciler{
			Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
			Flink:     &clients.Factory{URLTemplate: flink.URL, Timeout: 2 * time.Second},
			Artifacts: &artifact.Fetcher{MaxSize: 1 << 20, LocalDir: "/"}, // jars in t.TempDir(), and /does/not/exist.jar
			Validator: &validation.Validator{AllowedJarSchemes: []string{"file", "https"}}, Intervals: fixtures.FastIntervals(),
		}).SetupWithManager(mgr)
	}
}

// snapshotController runs the FlinkStateSnapshot reconciler against flink, with a short
// back-off so retries happen within a test.
func snapshotController(flink *fakeflink.Server) func(ctrl.Manager, record.EventRecorder) error {
	return func(mgr ctrl.Manager, rec record.EventRecorder) error {
		return (&flinkstatesnapshot.FlinkStateSnapshotReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
			Flink: &clients.Factory{URLTemplate: flink.URL, Timeout: 2 * time.Second}, Intervals: fixtures.FastIntervals(),
			BaseBackoff: 200 * time.Millisecond}).SetupWithManager(mgr)
	}
}

// startOperator starts the FlinkDeployment operator for namespaces, stopped when the test ends.
func startOperator(t *testing.T, flink *fakeflink.Server, namespaces ...string) *recordedEvents {
	t.Helper()
	events, _ := startStoppableOperator(t, flink, namespaces...)
	return events
}

// startStoppableOperator is startOperator that can also be stopped before the test ends, as
// the crash-safety tests do between steps.
func startStoppableOperator(t *testing.T, flink *fakeflink.Server, namespaces ...string) (*recordedEvents, func()) {
	t.Helper()
	return startManager(t, managerOptions{namespaces: namespaces, setup: deploymentController(flink)})
}

// startSessionJobOperator starts the FlinkSessionJob operator for namespaces, stopped when the
// test ends.
func startSessionJobOperator(t *testing.T, flink *fakeflink.Server, namespaces ...string) *recordedEvents {
	t.Helper()
	events, _ := startManager(t, managerOptions{namespaces: namespaces, setup: sessionJobController(flink)})
	return events
}

// newScenario gives a test or subtest a world of its own on the shared control plane: a fresh
// namespace named after prefix, a fake Flink, the cluster helper and a FlinkDeployment
// operator watching only that namespace. Nothing it does depends on another scenario.
func newScenario(t *testing.T, prefix string) (ns string, flink *fakeflink.Server, k *cluster, events *recordedEvents) {
	t.Helper()
	ns = testEnv(t).NewNamespace(t, prefix)
	flink = fakeflink.New(t)
	k = &cluster{t: t, c: testEnv(t).Client, flink: flink}
	events = startOperator(t, flink, ns)
	return ns, flink, k, events
}
