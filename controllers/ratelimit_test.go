package controllers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/ratelimit"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// reconcileProbe is the reconciler's client: its read of one FlinkDeployment, the first thing
// every reconcile does, is recorded and answered with err, so the reconcile ends right there.
type reconcileProbe struct {
	client.Client
	key types.NamespacedName
	err error

	mu    sync.Mutex
	times []time.Time
}

func (p *reconcileProbe) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*flinkv1beta1.FlinkDeployment); ok && key == p.key {
		p.mu.Lock()
		p.times = append(p.times, time.Now())
		p.mu.Unlock()
		return p.err
	}
	return p.Client.Get(ctx, key, obj, opts...)
}

// reconciles are the start times of the reconciles so far.
func (p *reconcileProbe) reconciles() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.times...)
}

// startProbedOperator runs the FlinkDeployment controller with limits on ns, its reconciles of
// name answered by err, and returns the probe and the operator's log lines.
func startProbedOperator(t *testing.T, ns, name string, err error, limits reconciler.RateLimits) (*reconcileProbe, func() []string) {
	t.Helper()
	probe := &reconcileProbe{key: types.NamespacedName{Namespace: ns, Name: name}, err: err}
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{})
	flink := fakeflink.New(t)
	startManager(t, managerOptions{namespaces: []string{ns}, logger: logger, setup: func(mgr ctrl.Manager, rec record.EventRecorder) error {
		probe.Client = mgr.GetClient()
		return (&flinkdeployment.FlinkDeploymentReconciler{
			Client: probe, Scheme: mgr.GetScheme(), Recorder: rec,
			Flink:     &clients.Factory{URLTemplate: flink.URL, Timeout: 2 * time.Second},
			Validator: &validation.Validator{}, Intervals: fixtures.FastIntervals(), ReconcilerOptions: reconciler.ReconcilerOptions{RateLimits: limits},
		}).SetupWithManager(mgr)
	}})
	return probe, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// TestRetryBackoffFromOptions: a reconcile that keeps failing is retried on the configured
// back-off (100 ms ×2, capped at 300 ms), and after max.attempts every reconcile interval
// (1 s here), with a log line saying so: never given up. Before, retries came on
// controller-runtime's own back-off (5 ms, 10 ms, 20 ms ...), whatever the options said.
func TestRetryBackoffFromOptions(t *testing.T) {
	ns, name := testEnv(t).NewNamespace(t, "retry-backoff"), "failing"
	retry := ratelimit.Retry{InitialInterval: 100 * time.Millisecond, Multiplier: 2, MaxAttempts: 3, MaxInterval: 300 * time.Millisecond}
	probe, logs := startProbedOperator(t, ns, name, errors.New("injected failure"), reconciler.RateLimits{Retry: retry})
	require.NoError(t, testEnv(t).Client.Create(context.Background(), fixtures.NewDeployment(t, ns, name)))

	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, time.Second, time.Second}
	wait.For(t, 15*time.Second, "a failing resource keeps being retried, also past max.attempts", func() bool { return len(probe.reconciles()) > len(want) })
	got := probe.reconciles()
	for i, w := range want {
		gap := got[i+1].Sub(got[i])
		// A retry never comes early; a loaded machine may make it late, but not by seconds.
		assert.GreaterOrEqual(t, gap, w-10*time.Millisecond, "retry %d", i+1)
		assert.Less(t, gap, w+2*time.Second, "retry %d", i+1)
	}
	assert.True(t, containsLine(logs(), "retrying at the reconcile interval", "max.attempts"),
		"giving up on the back-off is logged, naming the option")
}

// TestRateLimitBudgetFromOptions: a resource updated in a tight loop is reconciled at most
// rate-limiter.limit times per refresh-period; the reconciles past it are postponed, not
// dropped (the last update is reconciled), and a deletion is not postponed. Before, every
// update was reconciled.
func TestRateLimitBudgetFromOptions(t *testing.T) {
	ctx := context.Background()
	ns, name := testEnv(t).NewNamespace(t, "rate-limit"), "busy"
	limit := ratelimit.Limit{Max: 3, Period: 2 * time.Second}
	// The probe answers NotFound: each reconcile ends at once, successfully, and writes nothing.
	probe, _ := startProbedOperator(t, ns, name, apierrors.NewNotFound(flinkv1beta1.GroupVersion.WithResource("flinkdeployments").GroupResource(), name),
		reconciler.RateLimits{Limit: limit})
	c := testEnv(t).Client
	dep := fixtures.NewDeployment(t, ns, name)
	controllerutil.AddFinalizer(dep, "test.flink.apache.org/hold") // the deletion below stays visible
	require.NoError(t, c.Create(ctx, dep))
	t.Cleanup(func() {
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err == nil {
			dep.Finalizers = nil
			_ = c.Update(ctx, dep)
		}
	})

	var lastUpdate time.Time
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(dep), dep))
		lastUpdate = time.Now() // a reconcile of this update starts after it
		dep.Annotations = map[string]string{"touch": lastUpdate.Format(time.RFC3339Nano)}
		require.NoError(t, c.Update(ctx, dep))
	}
	wait.For(t, 2*limit.Period, "the last update is reconciled: postponed, not dropped", func() bool {
		r := probe.reconciles()
		return len(r) > 0 && r[len(r)-1].After(lastUpdate)
	})
	got := probe.reconciles()
	span := got[len(got)-1].Sub(got[0])
	// Fixed periods, each starting at a reconcile: the span touches at most span/period+1 of
	// them (plus slack for the time between a budget check and the reconcile's read).
	allowed := limit.Max * (int((span+100*time.Millisecond)/limit.Period) + 1)
	assert.LessOrEqual(t, len(got), allowed, "reconciles in %s of updates every 20 ms", span)
	first := 0
	for first < len(got) && got[first].Sub(got[0]) < limit.Period-100*time.Millisecond {
		first++
	}
	assert.LessOrEqual(t, first, limit.Max, "reconciles in the first period")

	// Spend the budget of a period, then delete: the deletion is reconciled at once.
	time.Sleep(limit.Period)
	for i := 0; i < limit.Max+2; i++ {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(dep), dep))
		dep.Annotations = map[string]string{"touch": time.Now().Format(time.RFC3339Nano)}
		require.NoError(t, c.Update(ctx, dep))
		time.Sleep(30 * time.Millisecond)
	}
	before := len(probe.reconciles())
	require.NoError(t, c.Delete(ctx, dep))
	deleted := time.Now()
	wait.For(t, limit.Period, "len(probe.reconciles()) > before", func() bool { return len(probe.reconciles()) > before })
	r := probe.reconciles()
	assert.Less(t, r[before].Sub(deleted), limit.Period/2, "a deletion is not postponed")
}

func containsLine(lines []string, parts ...string) bool {
	for _, l := range lines {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return true
		}
	}
	return false
}
