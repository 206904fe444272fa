// Package shard decides which Flink resources one operator instance serves when several split
// them (kubernetes.operator.label.selector): it parses the selector, and gives the labels a
// resource the operator creates on behalf of another (a FlinkStateSnapshot of a
// FlinkDeployment) must carry to land in the same instance's caches as its parent, and reads
// from the API server a resource of another shard that a reference leads to.
package shard

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Parse reads a label selector in Kubernetes' syntax (kubectl -l). Empty selects every resource
// (nil). A selector that does not parse is an error naming the option and the syntax allowed.
func Parse(s string) (labels.Selector, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a label selector (allowed: comma-separated requirements such as "+
			"shard=a, shard!=a, shard in (a,b), shard notin (a,b), shard, !shard): %w", options.LabelSelector.Key, s, err)
	}
	return sel, nil
}

// Labels are the labels a resource created for parent must carry so that sel selects it
// exactly when it selects parent: parent's value of every key sel names. A selector only
// looks at the keys it names, so a child with the parent's values of those keys (and no others
// of them) matches exactly when the parent does. Nil when sel is nil (no sharding): the
// parent's other labels (an Argo CD or Helm instance label, say) are never copied, so tools
// that track objects by label do not take the child for theirs.
func Labels(sel labels.Selector, parent map[string]string) map[string]string {
	if sel == nil {
		return nil
	}
	reqs, _ := sel.Requirements() // false only for a selector that selects nothing
	var out map[string]string
	for _, r := range reqs {
		v, ok := parent[r.Key()]
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[r.Key()] = v
	}
	return out
}

// GetByName reads the object key from r through a list by name into obj; list is obj's list
// type. The operator's RBAC grants list and watch on the Flink resources, not get, and a read
// of another shard's resource from the API server needs no more than that. An object that is
// not there is a NotFound error, as a Get's.
func GetByName(ctx context.Context, r client.Reader, key client.ObjectKey, obj client.Object, list client.ObjectList) error {
	if err := r.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingFields{"metadata.name": key.Name}); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	for _, item := range items {
		if o, ok := item.(client.Object); ok && o.GetName() == key.Name && o.GetNamespace() == key.Namespace {
			dst, src := reflect.ValueOf(obj), reflect.ValueOf(item)
			if dst.Type() != src.Type() {
				return fmt.Errorf("read %s: a %T list holds %T, not %T", key, list, item, obj)
			}
			dst.Elem().Set(src.Elem())
			return nil
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(reflect.TypeOf(obj).Elem().Name())}, key.Name)
}

// ReadThrough is a client whose Gets of FlinkDeployments and FlinkSessionJobs that its cache
// does not hold are asked of the API server (Live, through GetByName). It is for code that
// follows a reference to a resource of possibly another shard (a snapshot's job, a session
// job's cluster, admission), never for a reconciler's read of its own request: that one must
// find nothing outside the shard, so that the request is a no-op there.
type ReadThrough struct {
	client.Client
	Live client.Reader
}

// Get reads from the cache, then, for a Flink resource it does not hold, from the API server.
func (r ReadThrough) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Client.Get(ctx, key, obj, opts...)
	if !apierrors.IsNotFound(err) || r.Live == nil {
		return err
	}
	switch obj.(type) {
	case *flinkv1beta1.FlinkDeployment:
		return GetByName(ctx, r.Live, key, obj, &flinkv1beta1.FlinkDeploymentList{})
	case *flinkv1beta1.FlinkSessionJob:
		return GetByName(ctx, r.Live, key, obj, &flinkv1beta1.FlinkSessionJobList{})
	}
	return err
}
