package jobs

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// componentAutoscaler is the component label of the autoscaler's ConfigMap (upstream's).
const componentAutoscaler = "autoscaler"

// AutoscalerConfigMapName is the ConfigMap holding a resource's autoscaler state (upstream's
// name, so the state of a resource the Apache operator scaled is found and continued).
func AutoscalerConfigMapName(resource string) string { return "autoscaler-" + resource }

// autoscalerStore keeps autoscaler.State in the autoscaler-<name> ConfigMap, owned by the
// resource (garbage collected with it), labelled as upstream labels it.
type autoscalerStore struct {
	c client.Client
	// limits bound what reading the ConfigMap may cost (anyone who may edit ConfigMaps in the
	// namespace can write it); zero bounds are autoscaler.DefaultLimits.
	limits autoscaler.Limits
}

// errForeignState: a ConfigMap of the state's name exists that the resource does not own.
var errForeignState = errors.New("not owned by the resource")

// loaded is what load found.
type loaded struct {
	state autoscaler.State
	// found: the ConfigMap exists and the resource owns it.
	found bool
	// unreadable names the entries that could not be read (and were dropped) and why; the
	// rest of the state was read.
	unreadable error
}

// load reads the state. A ConfigMap the resource does not own is errForeignState (wrapped). An
// entry that cannot be read, or is over the budget, is dropped alone, as upstream's
// KubernetesAutoScalerStateStore does; the stored overrides and every other entry survive.
func (s autoscalerStore) load(ctx context.Context, owner client.Object) (loaded, error) {
	var cm corev1.ConfigMap
	key := client.ObjectKey{Namespace: owner.GetNamespace(), Name: AutoscalerConfigMapName(owner.GetName())}
	if err := s.c.Get(ctx, key, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return loaded{}, nil
		}
		return loaded{}, fmt.Errorf("read autoscaler state %s: %w", key, err)
	}
	if !OwnedBy(&cm, owner) {
		// Someone else's ConfigMap of that name: neither read nor overwritten.
		return loaded{}, fmt.Errorf("ConfigMap %s is %w %s %s", key, errForeignState, owner.GetObjectKind().GroupVersionKind().Kind, owner.GetName())
	}
	state, err := autoscaler.DecodeStateWithin(ctx, cm.Data, s.limits)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return loaded{}, fmt.Errorf("read autoscaler state %s: %w", key, ctxErr)
	}
	out := loaded{state: state, found: true}
	if err != nil {
		out.unreadable = fmt.Errorf("ConfigMap %s: %w", key, err)
	}
	return out, nil
}

// save writes the state, creating the ConfigMap when there is none.
func (s autoscalerStore) save(ctx context.Context, owner client.Object, state autoscaler.State) error {
	data, err := state.Encode()
	if err != nil {
		return fmt.Errorf("encode autoscaler state: %w", err)
	}
	key := client.ObjectKey{Namespace: owner.GetNamespace(), Name: AutoscalerConfigMapName(owner.GetName())}
	var cm corev1.ConfigMap
	err = s.c.Get(ctx, key, &cm)
	switch {
	case apierrors.IsNotFound(err):
		gvk, err := apiutil.GVKForObject(owner, s.c.Scheme())
		if err != nil {
			return fmt.Errorf("autoscaler state owner: %w", err)
		}
		cm = corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{native.LabelComponent: componentAutoscaler, native.LabelApp: owner.GetName()},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
					Name: owner.GetName(), UID: owner.GetUID()}}},
			Data: data,
		}
		if err := s.c.Create(ctx, &cm); err != nil {
			return fmt.Errorf("create autoscaler state %s: %w", key, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read autoscaler state %s: %w", key, err)
	case !OwnedBy(&cm, owner):
		return fmt.Errorf("ConfigMap %s is %w %s", key, errForeignState, owner.GetName())
	}
	cm.Data = data
	if err := s.c.Update(ctx, &cm); err != nil {
		return fmt.Errorf("write autoscaler state %s: %w", key, err)
	}
	return nil
}

// OwnedBy: obj has an owner reference to owner (by uid), controller or not (children an upstream
// operator created carry plain owner references).
func OwnedBy(obj metav1.Object, owner client.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}
