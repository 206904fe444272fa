package controllers

import (
	"context"
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
}

// load reads the state; found is false when there is no ConfigMap.
func (s autoscalerStore) load(ctx context.Context, owner client.Object) (autoscaler.State, bool, error) {
	var cm corev1.ConfigMap
	key := client.ObjectKey{Namespace: owner.GetNamespace(), Name: AutoscalerConfigMapName(owner.GetName())}
	if err := s.c.Get(ctx, key, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return autoscaler.State{}, false, nil
		}
		return autoscaler.State{}, false, fmt.Errorf("read autoscaler state %s: %w", key, err)
	}
	if !ownedBy(&cm, owner) {
		// Someone else's ConfigMap of that name: neither read nor overwritten.
		return autoscaler.State{}, false, fmt.Errorf("ConfigMap %s exists and is not owned by %s %s; the autoscaler leaves it alone", key, owner.GetObjectKind().GroupVersionKind().Kind, owner.GetName())
	}
	state, err := autoscaler.DecodeState(cm.Data)
	if err != nil {
		// A state that cannot be read is started over rather than wedging the resource: the
		// job keeps running as it is until a new window is full.
		return autoscaler.State{}, true, nil //nolint:nilerr // reported as a fresh start, by design
	}
	return state, true, nil
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
	case !ownedBy(&cm, owner):
		return fmt.Errorf("ConfigMap %s exists and is not owned by %s; the autoscaler leaves it alone", key, owner.GetName())
	}
	cm.Data = data
	if err := s.c.Update(ctx, &cm); err != nil {
		return fmt.Errorf("write autoscaler state %s: %w", key, err)
	}
	return nil
}

// ownedBy: obj has an owner reference to owner (by uid), controller or not (children an upstream
// operator created carry plain owner references).
func ownedBy(obj metav1.Object, owner client.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}
