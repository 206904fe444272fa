package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

func TestUpdatePriority(t *testing.T) {
	now := metav1.Now()
	base := flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5", Generation: 2,
		Annotations: map[string]string{"team": "a"}}}
	cases := []struct {
		name   string
		change func(*flinkv1beta1.FlinkDeployment)
		want   int
	}{
		{"resync: nothing changed", func(*flinkv1beta1.FlinkDeployment) {}, priorityBackground},
		{"the operator's status write", func(d *flinkv1beta1.FlinkDeployment) {
			d.ResourceVersion = "6"
			d.Status.LifecycleState = flinkv1beta1.LifecycleDeployed
		}, priorityRoutine},
		{"a label", func(d *flinkv1beta1.FlinkDeployment) { d.ResourceVersion, d.Labels = "6", map[string]string{"x": "y"} }, priorityRoutine},
		{"the spec", func(d *flinkv1beta1.FlinkDeployment) { d.ResourceVersion, d.Generation = "6", 3 }, priorityUserChange},
		{"deletion", func(d *flinkv1beta1.FlinkDeployment) { d.ResourceVersion, d.DeletionTimestamp = "6", &now }, priorityUserChange},
		{"an annotation", func(d *flinkv1beta1.FlinkDeployment) {
			d.ResourceVersion, d.Annotations = "6", map[string]string{"team": "b"}
		}, priorityUserChange},
		{"an annotation removed", func(d *flinkv1beta1.FlinkDeployment) { d.ResourceVersion, d.Annotations = "6", nil }, priorityUserChange},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := base.DeepCopy()
			updated := base.DeepCopy()
			tc.change(updated)
			assert.Equal(t, tc.want, updatePriority(old, updated))
		})
	}
	assert.Equal(t, priorityBackground, createPriority(true), "the initial list after a restart")
	assert.Equal(t, priorityRoutine, createPriority(false), "a new resource")
}

// TestPriorityQueueReleasesWorkersOnShutDown: a worker waiting for work returns when the queue
// shuts down. controller-runtime v0.21's priority queue kept it waiting, so every stop of the
// manager lasted its graceful-shutdown timeout (30 s); the operator wrapped it until v0.25, whose
// queue passes this on its own.
func TestPriorityQueueReleasesWorkersOnShutDown(t *testing.T) {
	q := newPriorityQueue("test", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	returned := make(chan bool, 1)
	go func() {
		_, shutdown := q.Get()
		returned <- shutdown
	}()
	time.Sleep(50 * time.Millisecond) // let the worker wait (without it, Get would return at once)
	q.ShutDown()
	select {
	case shutdown := <-returned:
		assert.True(t, shutdown, "told the queue shut down")
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting worker was not released by ShutDown")
	}

	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	require.True(t, ok, "the handlers recognise it as a priority queue")
	_, _, shutdown := pq.GetWithPriority()
	assert.True(t, shutdown, "a Get after shutdown returns at once")
}

// TestControllersKeepThePlainQueue: controller-runtime v0.23 and later give a controller its
// priority queue unless told otherwise. The operator's controllers keep the plain queue (with
// the rate limiter RateLimits describes) unless one asks for the priority queue, as the
// FlinkDeployment controller does with --reconcile-priority-queue.
func TestControllersKeepThePlainQueue(t *testing.T) {
	noop := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	opts, _, err := RateLimits{}.pace(nil, "flinksessionjob", time.Minute, &flinkv1beta1.FlinkSessionJob{}, noop)
	require.NoError(t, err)
	require.NotNil(t, opts.UsePriorityQueue, "left unset, controller-runtime uses its priority queue")
	assert.False(t, *opts.UsePriorityQueue)
	assert.Nil(t, opts.NewQueue, "the plain queue is controller-runtime's own")
}
