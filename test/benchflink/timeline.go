package benchflink

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/flink-operator/flink-operator/pkg/native"
)

// The timeline splits a flow's overhead into the steps of the Kubernetes objects of its cluster,
// as the benchmark saw them happen through watches (within milliseconds of the API server
// recording them; the objects' own timestamps are whole seconds): who is waited for, the
// operator, the garbage collector, the Flink processes shutting down, the controller manager,
// the scheduler and the node agent.

// step is a moment in the life of one object of a cluster.
type step string

const (
	stepCreated  step = "created"
	stepRunning  step = "running"  // a pod's Flink container runs
	stepDeleting step = "deleting" // the object has a deletion timestamp
	stepExited   step = "exited"   // a pod's containers have all stopped
	stepGone     step = "gone"     // removed from the API server
)

// objectKind says which of a cluster's objects an event is of.
type objectKind string

const (
	kindDeployment  objectKind = "JobManager Deployment"
	kindJobManager  objectKind = "JobManager pod"
	kindTaskManager objectKind = "TaskManager pod"
)

// event is the first time the benchmark saw an object of a cluster reach a step.
type event struct {
	at      time.Time
	cluster types.NamespacedName
	kind    objectKind
	uid     types.UID
	step    step
}

// timeline records the events of every cluster in the benchmark's namespaces.
type timeline struct {
	mu     sync.Mutex
	seen   map[string]bool // uid/step already recorded
	events []event
	stop   chan struct{}
}

// watchTimeline starts watching the JobManager Deployments and the pods of the clusters in
// namespaces named with prefix; stop ends it.
func watchTimeline(kube kubernetes.Interface, prefix string) (*timeline, error) {
	tl := &timeline{seen: map[string]bool{}, stop: make(chan struct{})}
	factory := informers.NewSharedInformerFactory(kube, 0)
	deployments := factory.Apps().V1().Deployments().Informer()
	pods := factory.Core().V1().Pods().Informer()
	observe := func(obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj, deleted = d.Obj, true
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			if strings.HasPrefix(o.Namespace, prefix) && o.Labels[native.LabelComponent] == native.ComponentJobManager {
				tl.observe(time.Now(), o.Namespace, o.Labels[native.LabelApp], kindDeployment, o.UID, o.DeletionTimestamp != nil, false, false, deleted)
			}
		case *corev1.Pod:
			kind := kindJobManager
			if o.Labels[native.LabelComponent] == native.ComponentTaskManager {
				kind = kindTaskManager
			} else if o.Labels[native.LabelComponent] != native.ComponentJobManager {
				return
			}
			if strings.HasPrefix(o.Namespace, prefix) {
				running, exited := containersState(o)
				tl.observe(time.Now(), o.Namespace, o.Labels[native.LabelApp], kind, o.UID, o.DeletionTimestamp != nil, running, exited, deleted)
			}
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observe(obj, false) },
		UpdateFunc: func(_, obj any) { observe(obj, false) },
		DeleteFunc: func(obj any) { observe(obj, true) },
	}
	for _, inf := range []cache.SharedIndexInformer{deployments, pods} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("timeline: %w", err)
		}
	}
	factory.Start(tl.stop)
	for typ, ok := range factory.WaitForCacheSync(tl.stop) {
		if !ok {
			close(tl.stop)
			return nil, fmt.Errorf("timeline: %v did not sync", typ)
		}
	}
	return tl, nil
}

// containersState says whether the pod's Flink container runs, and whether every container that
// started has stopped.
func containersState(p *corev1.Pod) (running, exited bool) {
	started := 0
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Running != nil:
			if c.Name == native.MainContainer {
				running = true
			}
			return running, false
		case c.State.Terminated != nil:
			started++
		}
	}
	return false, started > 0
}

// observe records the steps an object has reached, those not seen before at now.
func (tl *timeline) observe(now time.Time, namespace, cluster string, kind objectKind, uid types.UID, deleting, running, exited, gone bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	add := func(s step) {
		key := string(uid) + "/" + string(s)
		if tl.seen[key] {
			return
		}
		tl.seen[key] = true
		tl.events = append(tl.events, event{at: now, cluster: types.NamespacedName{Namespace: namespace, Name: cluster}, kind: kind, uid: uid, step: s})
	}
	add(stepCreated)
	if running {
		add(stepRunning)
	}
	if deleting {
		add(stepDeleting)
	}
	if exited {
		add(stepExited)
	}
	if gone {
		add(stepGone)
	}
}

func (tl *timeline) close() { close(tl.stop) }

// Span is one step of a flow: from the end of the step before to Until, as the benchmark saw it.
type Span struct {
	Name     string  `json:"name"`
	Duration Seconds `json:"duration_s"`
}

// The steps a flow goes through, in order; a flow that has no old cluster (create, resume) or
// starts no new one (suspend) leaves those steps out.
const (
	SpanOperatorStop     = "patch → JobManager Deployment deleted (operator; Flink's stop inside)"
	SpanCascade          = "→ its pods deleted (garbage collector, foreground)"
	SpanFlinkShutdown    = "→ their Flink processes exited (SIGTERM: JVM shutdown)"
	SpanPodsGone         = "→ the pods gone (node agent, API server)"
	SpanDeploymentGone   = "→ the Deployment gone (garbage collector)"
	SpanOperatorStart    = "→ new JobManager Deployment (operator)"
	SpanControllers      = "→ new JobManager pod (controller manager)"
	SpanSchedulerAndNode = "→ its Flink process runs (scheduler, node agent)"
)

// spans splits the flow of cluster that began at t0 into steps, from the events seen since.
// Missing events (a flow without an old cluster, or a step not seen) leave their steps out;
// each step is measured from the last step found before it.
func (tl *timeline) spans(cluster types.NamespacedName, t0 time.Time) []Span {
	tl.mu.Lock()
	events := slices.Clone(tl.events)
	tl.mu.Unlock()
	// old: objects of the cluster that existed at t0; new: created since.
	old, created := map[types.UID]bool{}, map[types.UID]bool{}
	for _, e := range events {
		if e.cluster == cluster && e.step == stepCreated {
			if e.at.Before(t0) {
				old[e.uid] = true
			} else {
				created[e.uid] = true
			}
		}
	}
	// at finds when the last (or first) object of the kinds in set reached step after t0.
	at := func(set map[types.UID]bool, s step, last bool, kinds ...objectKind) (time.Time, bool) {
		var found time.Time
		for _, e := range events {
			if e.cluster != cluster || !set[e.uid] || e.step != s || e.at.Before(t0) || !slices.Contains(kinds, e.kind) {
				continue
			}
			if found.IsZero() || (last && e.at.After(found)) || (!last && e.at.Before(found)) {
				found = e.at
			}
		}
		return found, !found.IsZero()
	}
	pods := []objectKind{kindJobManager, kindTaskManager}
	marks := []struct {
		name string
		at   func() (time.Time, bool)
	}{
		{SpanOperatorStop, func() (time.Time, bool) { return at(old, stepDeleting, false, kindDeployment) }},
		{SpanCascade, func() (time.Time, bool) { return at(old, stepDeleting, true, pods...) }},
		{SpanFlinkShutdown, func() (time.Time, bool) { return at(old, stepExited, true, pods...) }},
		{SpanPodsGone, func() (time.Time, bool) { return at(old, stepGone, true, pods...) }},
		{SpanDeploymentGone, func() (time.Time, bool) { return at(old, stepGone, false, kindDeployment) }},
		{SpanOperatorStart, func() (time.Time, bool) { return at(created, stepCreated, false, kindDeployment) }},
		{SpanControllers, func() (time.Time, bool) { return at(created, stepCreated, false, kindJobManager) }},
		{SpanSchedulerAndNode, func() (time.Time, bool) { return at(created, stepRunning, false, kindJobManager) }},
	}
	var out []Span
	prev := t0
	for _, m := range marks {
		t, ok := m.at()
		if !ok {
			continue
		}
		out = append(out, Span{Name: m.name, Duration: Seconds(t.Sub(prev))})
		prev = t
	}
	return out
}
