package cachescope

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flink-operator/flink-operator/pkg/native"
)

// The selectors take exactly the labels Flink clusters' objects carry, whoever made them.
func TestSelectors(t *testing.T) {
	flink := map[string]labels.Set{
		"JobManager pods and Deployment":    native.SelectorLabels("orders", native.ComponentJobManager, native.TypeNative),
		"TaskManager pods (Flink's)":        native.SelectorLabels("orders", native.ComponentTaskManager, native.TypeNative),
		"standalone TaskManager":            native.SelectorLabels("orders", native.ComponentTaskManager, native.TypeStandalone),
		"Services and ConfigMaps":           {"app": "orders", "type": "flink-native-kubernetes"},
		"HA ConfigMaps of Flink 1.x":        labels.Set(native.HALabels("orders")),
		"HA ConfigMaps of Flink 2.x":        {"app": "orders", "type": "flink-native-kubernetes"},
		"Apache operator's JM Deployment":   {"app": "orders", "component": "jobmanager", "type": "flink-native-kubernetes"},
		"Apache operator's config CM":       {"app": "orders", "type": "flink-native-kubernetes"},
		"JobManager pod with user labels":   {"app": "orders", "component": "jobmanager", "type": "flink-native-kubernetes", "team": "a"},
		"pod-template-hash from ReplicaSet": {"app": "orders", "component": "jobmanager", "type": "flink-native-kubernetes", "pod-template-hash": "7c95b66d97"},
	}
	for what, l := range flink {
		assert.True(t, FlinkObjects().Matches(l), what)
	}
	for what, l := range map[string]labels.Set{
		"unlabelled":                 {},
		"a common app label":         {"app": "web"},
		"another type":               {"app": "web", "type": "frontend"},
		"Flink's type without app":   {"type": "flink-native-kubernetes"},
		"the autoscaler's ConfigMap": {"app": "orders", "component": "autoscaler"},
		"an Ingress (no type label)": {"app": "orders", "component": "ingress"},
	} {
		assert.False(t, FlinkObjects().Matches(l), what)
	}
	assert.True(t, Ingresses().Matches(labels.Set{"app": "orders", "component": "ingress", "team": "a"}))
	assert.False(t, Ingresses().Matches(labels.Set{"app": "web"}))
	assert.False(t, Ingresses().Matches(labels.Set{}))
}

// Managed fields stay on the operator's own objects (it deletes only what it applied, and an
// Update must not send a partial list) and go from everything else.
func TestStripForeignManagedFields(t *testing.T) {
	ours := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}, {Manager: native.FieldManager, Operation: metav1.ManagedFieldsOperationApply}}}}
	want := ours.DeepCopy()
	out, err := StripForeignManagedFields(ours)
	assert.NoError(t, err)
	assert.Equal(t, want, out)

	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "okhttp", Operation: metav1.ManagedFieldsOperationUpdate}}}}
	out, err = StripForeignManagedFields(theirs)
	assert.NoError(t, err)
	assert.Nil(t, out.(*corev1.ConfigMap).ManagedFields)

	out, err = StripForeignManagedFields("not an object")
	assert.NoError(t, err)
	assert.Equal(t, "not an object", out)
}
