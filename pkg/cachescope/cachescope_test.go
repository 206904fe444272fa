package cachescope

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

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

// The cache keeps of the operator's own ConfigMaps and of Deployments only what the operator
// reads; the HA ConfigMaps (checkpoint pointers, job graphs) keep their data.
func TestTransformsDropWhatIsNeverRead(t *testing.T) {
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{native.LabelApp: "orders"}},
			Data: map[string]string{"config.yaml": "a: b"}, BinaryData: map[string][]byte{"x": {1}}}
	}
	transform := transformOf(&corev1.ConfigMap{})
	for _, name := range []string{native.ConfigMapName("orders"), native.PodTemplateConfigMapName("orders")} {
		out, err := transform(cm(name))
		assert.NoError(t, err)
		assert.Nil(t, out.(*corev1.ConfigMap).Data, name)
		assert.Nil(t, out.(*corev1.ConfigMap).BinaryData, name)
	}
	for _, name := range []string{"orders-cluster-config-map", "orders-0123-config-map", native.ConfigMapName("payments")} {
		out, err := transform(cm(name))
		assert.NoError(t, err)
		assert.Equal(t, "a: b", out.(*corev1.ConfigMap).Data["config.yaml"], "%s keeps its data", name)
	}

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "orders", Annotations: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: native.FieldManager, FieldsV1: fieldsV1(`{"f:spec":{}}`)}}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"component": "jobmanager"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "flink-main-container", Image: "flink:1.20"}}}}},
		Status: appsv1.DeploymentStatus{AvailableReplicas: 1}}
	out, err := transformOf(&appsv1.Deployment{})(d)
	assert.NoError(t, err)
	got := out.(*appsv1.Deployment)
	assert.Empty(t, got.Spec.Template.Spec.Containers, "pod spec dropped")
	assert.Equal(t, "jobmanager", got.Spec.Template.Labels["component"])
	assert.Equal(t, int32(1), *got.Spec.Replicas)
	assert.Equal(t, int32(1), got.Status.AvailableReplicas)
	assert.Equal(t, "b", got.Annotations["a"])
	assert.Equal(t, native.FieldManager, got.ManagedFields[0].Manager, "the manager still tells the operator's own")
	assert.Nil(t, got.ManagedFields[0].FieldsV1)
}

func fieldsV1(raw string) *metav1.FieldsV1 {
	f := &metav1.FieldsV1{}
	f.SetRawString(raw)
	return f
}
