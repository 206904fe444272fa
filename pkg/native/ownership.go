package native

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The names of a cluster's objects follow from the FlinkDeployment's name (the JobManager
// Deployment and, without HA, its internal Service are named exactly like it), so a tenant
// allowed to create FlinkDeployments could otherwise name one after another application's
// Service or Deployment and have the operator, with its wider permissions, overwrite that object
// (server-side apply forces ownership) or delete it with the cluster. Every existing object is
// therefore checked to belong to the cluster before it is applied to or deleted.
//
// An object belongs to the cluster of FlinkDeployment UID u when
//   - an ownerReference names u: the JobManager Deployment (this operator sets a controller
//     reference, the Apache operator a non-controller one) and the Ingress;
//   - an ownerReference names the cluster's JobManager Deployment: every other object, as this
//     operator and Flink's native Kubernetes client (the Apache operator's clusters) write them.
//     While no JobManager Deployment exists, a reference to the Deployment of that name whose
//     UID is gone is still the cluster's: a dependent of a JobManager deleted with background
//     propagation, not yet garbage collected;
//   - it has no ownerReference at all, carries the cluster's app label and has fields applied by
//     this operator's field manager: a dependent left by an orphaning deletion.
//
// Flink's HA ConfigMaps carry no ownerReference; they are told apart by Flink's labels and names
// (HAConfigMaps) and never applied to.

// ForeignObjectError reports that an object the cluster needs exists under its name but does not
// belong to the cluster. The object is left exactly as it is.
type ForeignObjectError struct {
	Kind, Namespace, Name string
	// Why says what makes it foreign: who owns it.
	Why string
}

func (e *ForeignObjectError) Error() string {
	return fmt.Sprintf("%s %s/%s already exists and does not belong to this FlinkDeployment (%s); it is left unchanged: "+
		"rename or remove it, or give the FlinkDeployment another name", e.Kind, e.Namespace, e.Name, e.Why)
}

// IsForeignObject reports whether err is (or wraps) a ForeignObjectError, and returns it.
func IsForeignObject(err error) (*ForeignObjectError, bool) {
	var f *ForeignObjectError
	ok := errors.As(err, &f)
	return f, ok
}

// owners are the UIDs whose ownerReferences make an object part of a cluster.
type owners struct {
	cluster string
	// resource is the FlinkDeployment's UID.
	resource types.UID
	// dependent: the object is one the JobManager Deployment owns, so a reference to that
	// Deployment counts (never for the JobManager Deployment itself).
	dependent bool
	// jobManager is the live JobManager Deployment's UID; empty while none exists, in which case
	// a reference to a JobManager Deployment of the cluster's name (gone) is accepted.
	jobManager types.UID
}

// foreignReason returns why obj does not belong to the cluster, or "" when it does.
func (o owners) foreignReason(obj client.Object) string {
	refs := obj.GetOwnerReferences()
	for _, ref := range refs {
		switch {
		case o.resource != "" && ref.UID == o.resource:
			return ""
		case o.dependent && ref.Kind == "Deployment" && ref.Name == JobManagerDeploymentName(o.cluster) &&
			(ref.UID == o.jobManager || o.jobManager == ""):
			return ""
		}
	}
	if len(refs) == 0 {
		if obj.GetLabels()[LabelApp] == o.cluster && managedByUs(obj) {
			return ""
		}
		return "it has no owner"
	}
	ref := refs[0]
	if c := metav1.GetControllerOfNoCopy(obj); c != nil {
		ref = *c
	}
	return fmt.Sprintf("owned by %s %s, uid %s", ref.Kind, ref.Name, ref.UID)
}

// readLive reads the object of obj's kind, namespace and name into a new object; nil when
// there is none.
func readLive(ctx context.Context, r client.Reader, obj client.Object) (client.Object, error) {
	live, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a client.Object", obj)
	}
	err := r.Get(ctx, client.ObjectKeyFromObject(obj), live)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read %s %s/%s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), err)
	}
	return live, nil
}

func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return fmt.Sprintf("%T", obj)
}

// claim checks, before anything is written, that none of the cluster's objects exists as
// someone else's. It returns the live JobManager Deployment's UID (empty when none exists) and
// which of cluster.Objects() were found absent (to be created with applyNew). The objects are
// read together; they are judged in a fixed order (the JobManager first, whose UID the others'
// ownerReferences name), so the error reported is always the same one.
func claim(ctx context.Context, r client.Reader, cluster *Cluster) (types.UID, []bool, error) {
	wanted := cluster.Objects() // the JobManager Deployment first
	found := make([]client.Object, len(wanted))
	g, gctx := errgroup.WithContext(ctx)
	for i, obj := range wanted {
		g.Go(func() error {
			live, err := readLive(gctx, r, obj)
			found[i] = live
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return "", nil, err
	}
	o := owners{cluster: clusterName(cluster.JobManager), resource: cluster.Owner}
	absent := make([]bool, len(found))
	for i, live := range found {
		o.dependent = i > 0 // every object but the JobManager Deployment is owned by it
		if live == nil {
			absent[i] = true
			continue
		}
		if why := o.foreignReason(live); why != "" {
			return "", nil, &ForeignObjectError{Kind: kindOf(wanted[i]), Namespace: live.GetNamespace(), Name: live.GetName(), Why: why}
		}
		if i == 0 {
			o.jobManager = live.GetUID()
		}
	}
	return o.jobManager, absent, nil
}
