package controllers

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Priorities of the reconcile requests of a FlinkDeployment, when its controller's queue is a
// priority queue (FlinkDeploymentReconciler.PriorityQueue, --reconcile-priority-queue). With thousands of resources queued at once (a restart, a
// migration, a tenant creating many), a change a user just made must not wait for all of them.
const (
	// priorityUserChange: the spec (generation), the deletion or the annotations changed, which
	// is what users do.
	priorityUserChange = 10
	// priorityRoutine: a new resource, the operator's own status writes, other changes.
	priorityRoutine = 0
	// priorityBackground: the initial list after a (re)start and resyncs, which change nothing.
	priorityBackground = handler.LowPriority
)

// updatePriority is the priority of the request an update of a resource from old to new makes.
func updatePriority(old, new client.Object) int {
	switch {
	case old.GetResourceVersion() == new.GetResourceVersion():
		return priorityBackground
	case old.GetGeneration() != new.GetGeneration(),
		old.GetDeletionTimestamp().IsZero() != new.GetDeletionTimestamp().IsZero(),
		!equalAnnotations(old.GetAnnotations(), new.GetAnnotations()):
		return priorityUserChange
	default:
		return priorityRoutine
	}
}

// createPriority is the priority of the request a resource's create event makes.
func createPriority(inInitialList bool) int {
	if inInitialList {
		return priorityBackground
	}
	return priorityRoutine
}

func equalAnnotations(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// byIntent enqueues a resource itself (as handler.EnqueueRequestForObject does) with the
// priorities above. controller-runtime's own handlers only tell the initial list from the rest.
type byIntent struct{}

var _ handler.EventHandler = byIntent{}

func (byIntent) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, e.Object, createPriority(e.IsInInitialList))
}

func (byIntent) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, e.ObjectNew, updatePriority(e.ObjectOld, e.ObjectNew))
}

func (byIntent) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, e.Object, priorityUserChange)
}

func (byIntent) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, e.Object, priorityRoutine)
}

func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object, priority int) {
	if obj == nil {
		return
	}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: priority}, req)
		return
	}
	q.Add(req)
}

// newPriorityQueue is controller-runtime's priority queue, which a controller takes through
// controller.Options.NewQueue, made to release its waiting workers on shutdown.
func newPriorityQueue(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	inner := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rateLimiter })
	return &shutdownSafeQueue{PriorityQueue: inner, done: make(chan struct{})}
}

// shutdownSafeQueue works around controller-runtime v0.21's priority queue, whose
// GetWithPriority keeps a worker waiting after ShutDown: every stop of the manager then lasts
// its whole graceful-shutdown timeout (30 s), and a leader hand-over as long. Later releases fix
// it; this goes with the controller-runtime upgrade.
type shutdownSafeQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	done chan struct{}
	once sync.Once
}

func (q *shutdownSafeQueue) ShutDown() {
	q.once.Do(func() { close(q.done) })
	q.PriorityQueue.ShutDown()
}

func (q *shutdownSafeQueue) ShutDownWithDrain() { q.ShutDown() }

func (q *shutdownSafeQueue) GetWithPriority() (reconcile.Request, int, bool) {
	select {
	case <-q.done:
		return reconcile.Request{}, 0, true
	default:
	}
	type got struct {
		req      reconcile.Request
		priority int
		shutdown bool
	}
	ch := make(chan got, 1)
	go func() {
		req, priority, shutdown := q.PriorityQueue.GetWithPriority()
		ch <- got{req, priority, shutdown}
	}()
	select {
	case g := <-ch:
		return g.req, g.priority, g.shutdown
	case <-q.done:
		// The inner Get stays blocked; the queue no longer hands out items, so nothing is lost.
		return reconcile.Request{}, 0, true
	}
}

func (q *shutdownSafeQueue) Get() (reconcile.Request, bool) {
	req, _, shutdown := q.GetWithPriority()
	return req, shutdown
}
