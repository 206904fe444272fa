package reconciler

import (
	"context"
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/extension/listener"
	"github.com/flink-operator/flink-operator/pkg/extension/validator"
	"github.com/flink-operator/flink-operator/pkg/redact"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// The reconcilers' hooks into the extension points (pkg/extension): custom validators judge a
// spec as the webhook's do, so with the webhook off the same spec is refused with the same
// field errors; listeners hear of every status the reconcilers write and every event they record.

// CustomValidation asks the custom validators about obj; old carries the spec reconciled last
// (nil before the first deployment). Canaries are never validated (pkg/validation).
func CustomValidation(ctx context.Context, v validator.Validator, kind string, obj, old client.Object) field.ErrorList {
	if v == nil || validation.IsCanary(obj.GetLabels()) {
		return nil
	}
	if o := reflect.ValueOf(old); o.Kind() == reflect.Pointer && o.IsNil() {
		old = nil // a typed nil (no spec reconciled yet) is no old object
	}
	return validator.Run(ctx, v, validator.Request{Operation: validator.Reconcile, Kind: kind, Object: obj, OldObject: old})
}

// WithListener makes rec also tell l of the events on Flink resources (nil l: rec as is).
func WithListener(rec record.EventRecorder, l listener.Listener) record.EventRecorder {
	if l == nil || rec == nil {
		return rec
	}
	return listener.Recorder(rec, l)
}

// JarURIPasswords is the password of a jarURI's user info, for the reconcile's redactor: it
// masks URL passwords wherever it sees a URL, and this one also where a message quotes it in a
// form that no longer reads as a URL.
func JarURIPasswords(job *flinkv1beta1.JobSpec) []string {
	if job == nil {
		return nil
	}
	return redact.URLPasswords(job.JarURI)
}

// StatusWritten tells l of a status the reconciler wrote: obj after the write, oldStatus and
// status as they were before and are now. Their lifecycle states and errors are read at once;
// the statuses are encoded only when a listener asks for them, their secrets masked by their
// place (redact.JSON: secret configuration keys and env values in the recorded specs, URL
// passwords) under the secret-key patterns (redact.DefaultKeyPatterns when nil). status.error
// was masked when it was written.
func StatusWritten(ctx context.Context, l listener.Listener, obj client.Object, oldStatus, status any, secretKeyPatterns []string) {
	if l == nil {
		return
	}
	res, ok := listener.ResourceOf(obj)
	if !ok {
		return
	}
	encode := func(v any) json.RawMessage {
		raw, err := redact.MarshalJSON(v, secretKeyPatterns)
		if err != nil {
			log.FromContext(ctx).Error(err, "cannot encode the status for resource listeners")
			return nil
		}
		return json.RawMessage(raw)
	}
	l.OnStatusChange(ctx, listener.NewStatusChange(res, obj, lifecycleOf(oldStatus), lifecycleOf(status),
		func() (json.RawMessage, json.RawMessage) { return encode(oldStatus), encode(status) }))
}

// lifecycleOf is the lifecycle state (a snapshot's state) and error of a status the
// reconcilers write; the error's URL passwords masked, as encoding the status masks them.
func lifecycleOf(status any) listener.Lifecycle {
	switch s := status.(type) {
	case *flinkv1beta1.FlinkDeploymentStatus:
		return listener.Lifecycle{State: string(s.LifecycleState), Error: redact.URLUserInfo(s.Error)}
	case *flinkv1beta1.FlinkSessionJobStatus:
		return listener.Lifecycle{State: string(s.LifecycleState), Error: redact.URLUserInfo(s.Error)}
	case *flinkv1beta1.FlinkStateSnapshotStatus:
		return listener.Lifecycle{State: string(s.State), Error: redact.URLUserInfo(s.Error)}
	default:
		return listener.Lifecycle{}
	}
}

// DeploymentPods are the pod templates of a FlinkDeployment.
func DeploymentPods(dep *flinkv1beta1.FlinkDeployment) []*corev1.Pod {
	pods := []*corev1.Pod{dep.Spec.PodTemplate}
	if dep.Spec.JobManager != nil {
		pods = append(pods, dep.Spec.JobManager.PodTemplate)
	}
	if dep.Spec.TaskManager != nil {
		pods = append(pods, dep.Spec.TaskManager.PodTemplate)
	}
	return pods
}
