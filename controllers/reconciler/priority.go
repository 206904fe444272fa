package reconciler

import (
	"context"

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

// ByIntent enqueues a resource itself (as handler.EnqueueRequestForObject does) with the
// priorities above. controller-runtime's own handlers only tell the initial list from the rest.
type ByIntent struct{}

var _ handler.EventHandler = ByIntent{}

func (ByIntent) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, e.Object, createPriority(e.IsInInitialList))
}

func (ByIntent) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, e.ObjectNew, updatePriority(e.ObjectOld, e.ObjectNew))
}

func (ByIntent) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, e.Object, priorityUserChange)
}

func (ByIntent) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueue(q, e.Object, priorityRoutine)
}

func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object, priority int) {
	if obj == nil {
		return
	}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: &priority}, req)
		return
	}
	q.Add(req)
}

// newPriorityQueue is controller-runtime's priority queue, which a controller takes through
// controller.Options.NewQueue. (controller-runtime v0.21's kept workers waiting after ShutDown,
// which the operator worked around; v0.25's releases them: TestPriorityQueueReleasesWorkersOnShutDown.)
func newPriorityQueue(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rateLimiter })
}
