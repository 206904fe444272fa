package cachescope

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
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

// The cache keeps of ConfigMaps only what the operator reads: of the HA ConfigMaps the keys of
// their job graphs and checkpoint pointers, without values; of every other ConfigMap in the
// scope (the operator's own, a tenant's labelled into it) no data at all.
func TestTransformsDropWhatIsNeverRead(t *testing.T) {
	flink := map[string]string{native.LabelApp: "orders", native.LabelType: native.TypeNative}
	big := strings.Repeat("x", 1<<20)
	cm := func(name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			Annotations: map[string]string{"control-plane.alpha.kubernetes.io/leader": big}},
			Data: map[string]string{"config.yaml": big, "jobGraph-0123": big, "checkpointID-0000000000000000001": big,
				"executionPlan-0123": "plan", "counter": "2", "address": "pekko://jm"},
			BinaryData: map[string][]byte{"x": []byte(big)}}
	}
	transform := transformOf(&corev1.ConfigMap{})
	for name, in := range map[string]*corev1.ConfigMap{
		"own configuration":               cm(native.ConfigMapName("orders"), flink),
		"own pod template":                cm(native.PodTemplateConfigMapName("orders"), flink),
		"a tenant's, labelled as Flink's": cm("tenant-blob", flink),
		"HA-named but another cluster's":  cm("payments-cluster-config-map", flink),
		"HA-named without Flink's type":   cm("orders-cluster-config-map", map[string]string{native.LabelApp: "orders"}),
	} {
		out, err := transform(in)
		require.NoError(t, err)
		got := out.(*corev1.ConfigMap)
		assert.Nil(t, got.Data, name)
		assert.Nil(t, got.BinaryData, name)
		assert.Nil(t, got.Annotations, name)
	}
	for _, in := range []*corev1.ConfigMap{
		cm("orders-cluster-config-map", flink),
		cm("orders-0123-config-map", labels.Set(native.HALabels("orders"))),
		cm("orders-dispatcher-leader", flink),
	} {
		out, err := transform(in)
		require.NoError(t, err)
		got := out.(*corev1.ConfigMap)
		assert.Equal(t, map[string]string{"jobGraph-0123": "", "executionPlan-0123": "", "checkpointID-0000000000000000001": ""},
			got.Data, "%s keeps the keys the operator reads, without values", got.Name)
		assert.Nil(t, got.BinaryData)
		assert.Nil(t, got.Annotations)
	}

	own := []metav1.ManagedFieldsEntry{{Manager: native.FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: fieldsV1(`{"f:spec":{}}`)}}
	conf := cm(native.ConfigMapName("orders"), flink)
	conf.ManagedFields = own
	out, err := transform(conf)
	require.NoError(t, err)
	assert.Equal(t, []metav1.ManagedFieldsEntry{{Manager: native.FieldManager, Operation: metav1.ManagedFieldsOperationApply}},
		out.(*corev1.ConfigMap).ManagedFields, "who manages it stays, not which fields")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders-rest", Labels: flink,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: native.FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: fieldsV1(`{"f:spec":{}}`)}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: flink, ClusterIP: "10.0.0.9", ClusterIPs: []string{"10.0.0.9"},
			Ports: []corev1.ServicePort{{Name: "rest", Port: 8081}}, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}}}
	out, err = transformOf(&corev1.Service{})(svc)
	require.NoError(t, err)
	gotSvc := out.(*corev1.Service)
	assert.Equal(t, []metav1.ManagedFieldsEntry{{Manager: native.FieldManager, Operation: metav1.ManagedFieldsOperationApply}}, gotSvc.ManagedFields)
	assert.Equal(t, corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: flink}, gotSvc.Spec,
		"what the REST Service check and the JobManager lookup read stays, nothing else")

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-taskmanager-1-1", Labels: flink,
		Annotations: map[string]string{"a": big}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "flink", Args: []string{big}}}},
		Status: corev1.PodStatus{PodIP: "10.0.0.1", ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true}}}}
	out, err = transformOf(&corev1.Pod{})(pod)
	require.NoError(t, err)
	gotPod := out.(*corev1.Pod)
	assert.Nil(t, gotPod.Annotations)
	assert.Empty(t, gotPod.Spec.Containers)
	assert.Equal(t, flink, gotPod.Labels)
	assert.Equal(t, "10.0.0.1", gotPod.Status.PodIP)
	assert.True(t, gotPod.Status.ContainerStatuses[0].Ready)

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "orders",
		Annotations:   map[string]string{"a": big, native.AnnotationGeneration: "3", native.AnnotationDeployAttempt: "7"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: native.FieldManager, FieldsV1: fieldsV1(`{"f:spec":{}}`)}}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"component": "jobmanager"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"component": "jobmanager"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "flink-main-container", Image: "flink:1.20"}}}}},
		Status: appsv1.DeploymentStatus{AvailableReplicas: 1}}
	out, err = transformOf(&appsv1.Deployment{})(d)
	assert.NoError(t, err)
	gotDeploy := out.(*appsv1.Deployment)
	assert.Equal(t, corev1.PodTemplateSpec{}, gotDeploy.Spec.Template, "pod template dropped: its spec, labels and annotations")
	assert.Nil(t, gotDeploy.Spec.Selector)
	assert.Equal(t, int32(1), *gotDeploy.Spec.Replicas)
	assert.Equal(t, int32(1), gotDeploy.Status.AvailableReplicas)
	assert.Equal(t, map[string]string{native.AnnotationGeneration: "3", native.AnnotationDeployAttempt: "7"}, gotDeploy.Annotations,
		"the operator's own annotations stay, others go")
	assert.Equal(t, native.FieldManager, gotDeploy.ManagedFields[0].Manager, "the manager still tells the operator's own")
	assert.Nil(t, gotDeploy.ManagedFields[0].FieldsV1)
}

func fieldsV1(raw string) *metav1.FieldsV1 {
	f := &metav1.FieldsV1{}
	f.SetRawString(raw)
	return f
}

// FuzzTrimConfigMap: whatever a ConfigMap in the scope holds (a tenant writes them, and the HA
// ConfigMaps with its JobManager's permissions), the cached copy keeps no value, only keys the
// operator reads and only of HA ConfigMaps, and answers the operator's questions (is there a
// checkpoint, is there a job graph) as the whole object would.
func FuzzTrimConfigMap(f *testing.F) {
	f.Add("orders-cluster-config-map", "orders", native.TypeNative, "jobGraph-0123", "graph", "counter", "2")
	f.Add("orders-0123-config-map", "orders", "", "checkpointID-0000000000000000001", "pointer", "executionPlan-1", "")
	f.Add("orders-dispatcher-leader", "orders", native.TypeNative, "address", "pekko://", "jobGraph-", "x")
	f.Add(native.ConfigMapName("orders"), "orders", native.TypeNative, "config.yaml", "a: b", "checkpointID-", "")
	f.Add("orders-config-map", "orders", native.TypeStandalone, "checkpointID-1", strings.Repeat("A", 4096), "k", "v")
	f.Fuzz(func(t *testing.T, name, app, typ, k1, v1, k2, v2 string) {
		labels := map[string]string{native.LabelApp: app, native.LabelType: typ}
		if typ == "" {
			labels = map[string]string(native.HALabels(app))
		}
		data := map[string]string{k1: v1, k2: v2}
		in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}
		ha := native.IsHAConfigMap(in)
		out, err := transformOf(&corev1.ConfigMap{})(in.DeepCopy())
		require.NoError(t, err)
		got := out.(*corev1.ConfigMap)
		if !ha {
			assert.Nil(t, got.Data)
			return
		}
		for k, v := range got.Data {
			assert.Empty(t, v)
			assert.True(t, native.IsHAKeyRead(k), k)
			assert.Contains(t, data, k)
		}
		for k := range data {
			_, kept := got.Data[k]
			assert.Equal(t, native.IsHAKeyRead(k), kept, k)
		}
	})
}

// A cached resource's last stable spec shares its bytes with the last reconciled spec when they
// are equal, and keeps its own value when they differ; either way the values are unchanged.
func TestShareStableSpec(t *testing.T) {
	spec := `{"job":{"jarURI":"local:///opt/flink/examples/streaming/TopSpeedWindowing.jar","parallelism":2}}`
	decoded := func(reconciled, stable string) flinkv1beta1.ReconciliationStatus {
		// Copies of their own, as the JSON decoder makes them.
		return flinkv1beta1.ReconciliationStatus{LastReconciledSpec: strings.Clone(reconciled), LastStableSpec: strings.Clone(stable)}
	}
	transform := Options(nil).DefaultTransform

	dep := &flinkv1beta1.FlinkDeployment{Status: flinkv1beta1.FlinkDeploymentStatus{}}
	dep.Status.ReconciliationStatus = decoded(spec, spec)
	require.NotSame(t, unsafe.StringData(dep.Status.ReconciliationStatus.LastReconciledSpec), unsafe.StringData(dep.Status.ReconciliationStatus.LastStableSpec))
	out, err := transform(dep)
	require.NoError(t, err)
	rs := out.(*flinkv1beta1.FlinkDeployment).Status.ReconciliationStatus
	assert.Equal(t, spec, rs.LastStableSpec)
	assert.Same(t, unsafe.StringData(rs.LastReconciledSpec), unsafe.StringData(rs.LastStableSpec), "one copy of the bytes")

	job := &flinkv1beta1.FlinkSessionJob{}
	job.Status.ReconciliationStatus = decoded(spec, spec)
	out, err = transform(job)
	require.NoError(t, err)
	rs = out.(*flinkv1beta1.FlinkSessionJob).Status.ReconciliationStatus
	assert.Same(t, unsafe.StringData(rs.LastReconciledSpec), unsafe.StringData(rs.LastStableSpec))

	upgrading := &flinkv1beta1.FlinkDeployment{}
	newer := strings.Replace(spec, `"parallelism":2`, `"parallelism":4`, 1)
	upgrading.Status.ReconciliationStatus = decoded(newer, spec)
	out, err = transform(upgrading)
	require.NoError(t, err)
	rs = out.(*flinkv1beta1.FlinkDeployment).Status.ReconciliationStatus
	assert.Equal(t, newer, rs.LastReconciledSpec)
	assert.Equal(t, spec, rs.LastStableSpec, "a change not yet stable keeps the stable spec it had")
}

// The cached copies of two clusters' objects share their repeated strings (namespace, label keys
// and values, owner references) instead of holding a copy each, and keep of managed fields one
// entry saying the operator applied the object, or none; every value read stays the same.
func TestCompactMetadata(t *testing.T) {
	object := func(cluster, uid string, managers ...string) *corev1.Service {
		var mfs []metav1.ManagedFieldsEntry
		for _, m := range managers {
			mfs = append(mfs, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: fieldsV1(`{"f:metadata":{}}`), Time: &metav1.Time{}})
		}
		// Built from bytes, as a decoder builds them: no string shares its bytes with another.
		s := func(v string) string { return string([]byte(v)) }
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: s(cluster + "-rest"), Namespace: s("tenant-a"),
			Labels:          map[string]string{s(native.LabelApp): s(cluster), s(native.LabelType): s(native.TypeNative)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: s("flink.apache.org/v1beta1"), Kind: s("FlinkDeployment"), Name: s(cluster), UID: types.UID(s(uid))}},
			ManagedFields:   mfs}}
	}
	transform := transformOf(&corev1.Service{})
	compact := func(in *corev1.Service) *corev1.Service {
		want := in.DeepCopy()
		out, err := transform(in)
		require.NoError(t, err)
		got := out.(*corev1.Service)
		assert.Equal(t, want.Name, got.Name)
		assert.Equal(t, want.Namespace, got.Namespace)
		assert.Equal(t, want.Labels, got.Labels)
		assert.Equal(t, want.OwnerReferences, got.OwnerReferences)
		return got
	}
	a := compact(object("orders", "uid-1", "kube-controller-manager", native.FieldManager))
	b := compact(object("payments", "uid-2", native.FieldManager))
	c := compact(object("orders", "uid-1", "kubectl"))

	assert.Equal(t, []metav1.ManagedFieldsEntry{{Manager: native.FieldManager, Operation: metav1.ManagedFieldsOperationApply}}, a.ManagedFields)
	assert.Equal(t, a.ManagedFields, b.ManagedFields)
	assert.Nil(t, c.ManagedFields, "nobody's apply of the operator: nothing kept")

	same := func(x, y string, what string) {
		assert.Same(t, unsafe.StringData(x), unsafe.StringData(y), "%s: one copy", what)
	}
	same(a.Namespace, b.Namespace, "namespace")
	same(a.OwnerReferences[0].APIVersion, b.OwnerReferences[0].APIVersion, "owner's API version")
	same(a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind, "owner's kind")
	same(a.OwnerReferences[0].Name, c.OwnerReferences[0].Name, "owner's name, in two objects of one cluster")
	same(string(a.OwnerReferences[0].UID), string(c.OwnerReferences[0].UID), "owner's UID, in two objects of one cluster")
	same(a.Labels[native.LabelApp], c.Labels[native.LabelApp], "the cluster's name as a label value")
	same(a.Labels[native.LabelType], b.Labels[native.LabelType], "Flink's type label")
	for k := range a.Labels {
		for k2 := range b.Labels {
			if k == k2 {
				same(k, k2, "a label key")
			}
		}
	}
}

// Two resources decoded apart share their conditions' strings and their namespace after the
// transform, and every value read stays the same.
func TestInternStatusStrings(t *testing.T) {
	s := func(v string) string { return string([]byte(v)) } // as a decoder builds them
	resource := func(name string) *flinkv1beta1.FlinkDeployment {
		fd := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s("tenant-a"),
			Finalizers: []string{s("flinkdeployments.flink.apache.org/finalizer")}}}
		fd.Status.LifecycleState = flinkv1beta1.LifecycleState(s("STABLE"))
		fd.Status.JobStatus.State = flinkv1beta1.JobStatusState(s("RUNNING"))
		fd.Status.Conditions = []metav1.Condition{{Type: s("Degraded"), Status: metav1.ConditionStatus(s("False")),
			Reason: s("Healthy"), Message: s("Nothing wrong observed"), ObservedGeneration: 3}}
		return fd
	}
	transform := func(fd *flinkv1beta1.FlinkDeployment) *flinkv1beta1.FlinkDeployment {
		want := fd.DeepCopy()
		out, err := Options(nil).DefaultTransform(fd)
		require.NoError(t, err)
		require.Equal(t, want, out)
		return out.(*flinkv1beta1.FlinkDeployment)
	}
	a, b := transform(resource("orders")), transform(resource("payments"))
	ca, cb := a.Status.Conditions[0], b.Status.Conditions[0]
	for what, pair := range map[string][2]string{
		"namespace": {a.Namespace, b.Namespace}, "finalizer": {a.Finalizers[0], b.Finalizers[0]},
		"condition type": {ca.Type, cb.Type}, "condition status": {string(ca.Status), string(cb.Status)},
		"condition reason": {ca.Reason, cb.Reason}, "condition message": {ca.Message, cb.Message},
		"lifecycle state": {string(a.Status.LifecycleState), string(b.Status.LifecycleState)},
		"job state":       {string(a.Status.JobStatus.State), string(b.Status.JobStatus.State)},
	} {
		assert.Same(t, unsafe.StringData(pair[0]), unsafe.StringData(pair[1]), "%s: one copy", what)
	}
}
