package kubectlflink

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// Kind is one of the four Flink kinds.
type Kind string

const (
	KindDeployment Kind = "FlinkDeployment"
	KindSessionJob Kind = "FlinkSessionJob"
	KindSnapshot   Kind = "FlinkStateSnapshot"
	KindBlueGreen  Kind = "FlinkBlueGreenDeployment"
)

// kindNames are the names a kind is given on the command line: kubectl's plural, singular and
// short names, and the plugin's short ones.
var kindNames = map[string]Kind{
	"flinkdeployment": KindDeployment, "flinkdeployments": KindDeployment, "flinkdep": KindDeployment, "deployment": KindDeployment, "fd": KindDeployment,
	"flinksessionjob": KindSessionJob, "flinksessionjobs": KindSessionJob, "sessionjob": KindSessionJob, "sj": KindSessionJob,
	"flinkstatesnapshot": KindSnapshot, "flinkstatesnapshots": KindSnapshot, "snapshot": KindSnapshot, "flinksnapshot": KindSnapshot,
	"flinkbluegreendeployment": KindBlueGreen, "flinkbluegreendeployments": KindBlueGreen, "bluegreen": KindBlueGreen, "fbgd": KindBlueGreen,
}

// Target is the resource a command acts on.
type Target struct {
	Kind      Kind
	Namespace string
	Name      string
}

func (t Target) String() string {
	return strings.ToLower(string(t.Kind)) + " " + t.Namespace + "/" + t.Name
}

// parseTarget reads NAME or KIND/NAME; kind is --kind ("" for FlinkDeployment, the default).
func parseTarget(arg, kind, namespace string) (Target, error) {
	name := arg
	if k, n, ok := strings.Cut(arg, "/"); ok {
		if kind != "" {
			return Target{}, fmt.Errorf("%q names its kind; leave out --kind", arg)
		}
		kind, name = k, n
	}
	if name == "" {
		return Target{}, fmt.Errorf("no resource name in %q", arg)
	}
	t := Target{Kind: KindDeployment, Namespace: namespace, Name: name}
	if kind != "" {
		k, ok := kindNames[strings.ToLower(strings.TrimSuffix(kind, ".flink.apache.org"))]
		if !ok {
			return Target{}, fmt.Errorf("unknown kind %q: use deployment, sessionjob, snapshot or bluegreen", kind)
		}
		t.Kind = k
	}
	return t, nil
}

// newObject is an empty typed object of the kind.
func newObject(k Kind) client.Object {
	switch k {
	case KindSessionJob:
		return &flinkv1beta1.FlinkSessionJob{}
	case KindSnapshot:
		return &flinkv1beta1.FlinkStateSnapshot{}
	case KindBlueGreen:
		return &flinkv1beta1.FlinkBlueGreenDeployment{}
	}
	return &flinkv1beta1.FlinkDeployment{}
}

// get reads the target as unstructured (status.scaling and fields newer than this plugin are
// kept) and as its typed object, decoded from the same read.
func get(ctx context.Context, c client.Client, t Target) (*unstructured.Unstructured, client.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(flinkv1beta1.GroupVersion.WithKind(string(t.Kind)))
	if err := c.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Name}, u); err != nil {
		return nil, nil, notFoundHint(t, err)
	}
	// status.scaling is read from u (readScaling), which tolerates a shape other than the one
	// this plugin knows; the typed object is decoded without it, so that such a shape does not
	// make the whole resource unreadable.
	typed := u.DeepCopy()
	unstructured.RemoveNestedField(typed.Object, "status", "scaling")
	obj := newObject(t.Kind)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(typed.Object, obj); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", t, err)
	}
	return u, obj, nil
}

// getTyped reads the target's typed object.
func getTyped(ctx context.Context, c client.Client, t Target) (client.Object, error) {
	obj := newObject(t.Kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Name}, obj); err != nil {
		return nil, notFoundHint(t, err)
	}
	return obj, nil
}

// notFoundHint says what to check when the resource is not there.
func notFoundHint(t Target, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s not found: check the name and namespace (-n), or the kind (--kind, or KIND/NAME)", t)
	}
	return fmt.Errorf("read %s: %w", t, err)
}
