package main

import (
	"strings"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestStuckReconcilesCheck: liveness fails while a controller's worker
// has been processing one item longer than the bound, read from the workqueue metrics
// controller-runtime keeps for every controller, and recovers once the item is done.
func TestStuckReconcilesCheck(t *testing.T) {
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "liveness-test"})
	defer q.ShutDown()
	check := stuckReconciles(ctrlmetrics.Registry, 50*time.Millisecond)
	// The registry is the process's: managers of other tests in this binary may have left
	// their own queues' gauges behind, so only this queue's verdict is looked at.
	stuck := func() bool {
		err := check(nil)
		return err != nil && strings.Contains(err.Error(), "controller liveness-test:")
	}
	require.False(t, stuck(), "no worker busy")

	q.Add("orders")
	item, _ := q.Get() // a worker takes it and never finishes
	wait.For(t, 10*time.Second, "liveness still passes with a worker stuck", stuck)
	assert.ErrorContains(t, check(nil), "controller liveness-test: a reconcile has been running for")

	q.Done(item)
	wait.For(t, 10*time.Second, "liveness still fails once the worker is done", func() bool { return !stuck() })
}

func TestStuckReconcilesBound(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: longestRunningMetric}, []string{"name", "controller"})
	reg.MustRegister(g)
	check := stuckReconciles(reg, 10*time.Minute)
	g.WithLabelValues("flinkdeployment", "flinkdeployment").Set((9 * time.Minute).Seconds())
	assert.NoError(t, check(nil), "a long reconcile within the bound")
	g.WithLabelValues("flinksessionjob", "flinksessionjob").Set((11 * time.Minute).Seconds())
	assert.EqualError(t, check(nil), "controller flinksessionjob: a reconcile has been running for 11m0s, longer than 10m0s")
	g.WithLabelValues("flinkdeployment", "flinkdeployment").Set((12 * time.Minute).Seconds())
	assert.EqualError(t, check(nil), "controller flinkdeployment: a reconcile has been running for 12m0s, longer than 10m0s; "+
		"controller flinksessionjob: a reconcile has been running for 11m0s, longer than 10m0s", "every stuck controller is named")
}
