package listener

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// Recorder records events with next and tells l of those on Flink resources.
func Recorder(next record.EventRecorder, l Listener) record.EventRecorder {
	return &recorder{next: next, l: l}
}

type recorder struct {
	next record.EventRecorder
	l    Listener
}

func (r *recorder) Event(o runtime.Object, eventtype, reason, message string) {
	r.next.Event(o, eventtype, reason, message)
	r.tell(o, eventtype, reason, message)
}

func (r *recorder) Eventf(o runtime.Object, eventtype, reason, format string, args ...any) {
	r.next.Eventf(o, eventtype, reason, format, args...)
	r.tell(o, eventtype, reason, fmt.Sprintf(format, args...))
}

func (r *recorder) AnnotatedEventf(o runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	r.next.AnnotatedEventf(o, annotations, eventtype, reason, format, args...)
	r.tell(o, eventtype, reason, fmt.Sprintf(format, args...))
}

func (r *recorder) tell(o runtime.Object, eventtype, reason, message string) {
	res, ok := ResourceOf(o)
	if !ok {
		return
	}
	r.l.OnEvent(context.Background(), Event{Resource: res, Type: eventtype, Reason: reason, Message: message, Time: time.Now()})
}

// ResourceOf identifies a Flink resource (false for other objects).
func ResourceOf(o runtime.Object) (Resource, bool) {
	var kind string
	switch o.(type) {
	case *flinkv1beta1.FlinkDeployment:
		kind = "FlinkDeployment"
	case *flinkv1beta1.FlinkSessionJob:
		kind = "FlinkSessionJob"
	case *flinkv1beta1.FlinkStateSnapshot:
		kind = "FlinkStateSnapshot"
	default:
		return Resource{}, false
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return Resource{}, false
	}
	return Resource{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID(), Generation: m.GetGeneration()}, true
}
