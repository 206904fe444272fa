package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// TestCacheHoldsOnlyFlinkObjects: a namespace full of objects that are not
// Flink's (200 ConfigMaps of 100 KiB, some with a common app label, pods, Deployments,
// Services, Ingresses) beside one with a FlinkDeployment. The operator still deploys the
// FlinkDeployment and sees what Flink wrote, but its caches hold none of the other objects,
// and they keep the managed fields of the operator's own objects only. A same-named object
// outside the scope is still found by name, through the API server.
func TestCacheHoldsOnlyFlinkObjects(t *testing.T) {
	env := testEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	noise, flinkNS := env.NewNamespace(t, "cache-noise"), env.NewNamespace(t, "cache-flink")

	big := strings.Repeat("x", 100<<10)
	labels := []map[string]string{nil, {"app": "web"}, {"app": "web", "type": "frontend"}}
	var objs []client.Object
	for i := range 200 {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: noise, Name: fmt.Sprintf("cm-%d", i), Labels: labels[i%len(labels)]},
			Data: map[string]string{"blob": big}})
	}
	for i := range 30 {
		l := labels[i%len(labels)]
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: noise, Name: fmt.Sprintf("pod-%d", i), Labels: l},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}})
	}
	for i := range 5 {
		sel := map[string]string{"app": fmt.Sprintf("web-%d", i)}
		objs = append(objs,
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: noise, Name: fmt.Sprintf("deploy-%d", i), Labels: sel},
				Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: noise, Name: fmt.Sprintf("svc-%d", i), Labels: sel},
				Spec: corev1.ServiceSpec{Selector: sel, Ports: []corev1.ServicePort{{Port: 80}}}},
			&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: noise, Name: fmt.Sprintf("ing-%d", i), Labels: sel},
				Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "svc", Port: networkingv1.ServiceBackendPort{Number: 80}}}}})
	}
	// What Flink writes beside the operator's objects: an HA ConfigMap as Flink 2.x labels it
	// (1.x adds configmap-type), and a TaskManager pod of a native cluster.
	const name, foreignService = "orders", "orders-db"
	const tenantBlob, tenantPod, haJob = "tenant-blob", "tenant-pod", "orders-00000000000000000000000000000001-config-map"
	flinkLabels := map[string]string{native.LabelApp: name, native.LabelType: native.TypeNative}
	objs = append(objs,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: flinkNS, Name: native.HAClusterConfigMapName(name), Labels: flinkLabels}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: flinkNS, Name: name + "-taskmanager-1-1",
			Labels: native.SelectorLabels(name, native.ComponentTaskManager, native.TypeNative)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: native.MainContainer, Image: "flink:1.20"}}}},
		// A tenant's ConfigMap and pod labelled into the scope, each near the API server's
		// 1 MiB object limit, and an HA ConfigMap of Flink's name with large values.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: flinkNS, Name: tenantBlob, Labels: flinkLabels},
			Data: map[string]string{"blob": strings.Repeat("t", 1000<<10)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: flinkNS, Name: haJob, Labels: flinkLabels},
			Data: map[string]string{"checkpointID-0000000000000000001": strings.Repeat("p", 900<<10), "counter": "2"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: flinkNS, Name: tenantPod, Labels: flinkLabels,
			Annotations: map[string]string{"blob": strings.Repeat("a", 200<<10)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Args: []string{strings.Repeat("s", 200<<10)}}}}},
		// Someone else's unlabelled Service beside the cluster. (One with a name of the cluster's
		// own is refused as foreign: TestForeignObjectsAreLeftAlone, on this same cache scope.)
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: flinkNS, Name: foreignService},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}})
	createAll(t, env.Client, objs)

	o := options{metricsAddr: "0", probeAddr: freeAddr(t), watchNamespaces: noise + "," + flinkNS,
		restURLTemplate: clients.DefaultRESTURLTemplate, reconcileInterval: time.Minute, progressInterval: time.Second,
		restTimeout: time.Second, reconcileDeadline: time.Minute}
	mgr, err := newManager(env.Config, o)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
spec:
  image: flink:1.20
  flinkVersion: v1_20
  serviceAccount: flink
  flinkConfiguration: {taskmanager.numberOfTaskSlots: "2"}
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
`), dep))
	dep.Namespace, dep.Name = flinkNS, name
	require.NoError(t, env.Client.Create(ctx, dep))
	wait.For(t, 30*time.Second, "the FlinkDeployment was never deployed", func() bool {
		jm := &appsv1.Deployment{}
		return env.Client.Get(ctx, client.ObjectKey{Namespace: flinkNS, Name: native.JobManagerDeploymentName(name)}, jm) == nil
	})
	wait.For(t, 30*time.Second, "the operator never observed its JobManager Deployment", func() bool {
		got := &flinkv1beta1.FlinkDeployment{}
		return env.Client.Get(ctx, client.ObjectKeyFromObject(dep), got) == nil &&
			got.Status.JobManagerDeploymentStatus == flinkv1beta1.JobManagerDeploying
	})

	// Everything the caches hold is Flink's; what the operator and Flink made is there.
	inScope := func(kind string, l map[string]string) bool {
		if kind == "Ingress" {
			return l[native.LabelApp] != "" && l[native.LabelComponent] == native.ComponentIngress
		}
		return l[native.LabelApp] != "" && (l[native.LabelType] == native.TypeNative || l[native.LabelType] == native.TypeStandalone)
	}
	cached := map[string][]string{}
	var outOfScope, othersManagedFields []string
	for kind, list := range map[string]client.ObjectList{"ConfigMap": &corev1.ConfigMapList{}, "Pod": &corev1.PodList{},
		"Deployment": &appsv1.DeploymentList{}, "Service": &corev1.ServiceList{}, "Ingress": &networkingv1.IngressList{}} {
		for _, ns := range []string{noise, flinkNS} {
			require.NoError(t, mgr.GetCache().List(ctx, list, client.InNamespace(ns)))
			items, err := metaItems(list)
			require.NoError(t, err)
			for _, item := range items {
				id := kind + " " + ns + "/" + item.GetName()
				cached[kind] = append(cached[kind], item.GetName())
				if !inScope(kind, item.GetLabels()) {
					outOfScope = append(outOfScope, id)
				}
				ours := false
				for _, mf := range item.GetManagedFields() {
					ours = ours || mf.Manager == native.FieldManager
				}
				if !ours && item.GetManagedFields() != nil {
					othersManagedFields = append(othersManagedFields, id)
				}
			}
		}
	}
	assert.Empty(t, outOfScope, "objects that are not Flink's are cached")
	assert.Empty(t, othersManagedFields, "the cache keeps the managed fields of objects the operator never applied")
	assert.Contains(t, cached["Deployment"], native.JobManagerDeploymentName(name))
	assert.Contains(t, cached["ConfigMap"], native.ConfigMapName(name))
	assert.Contains(t, cached["ConfigMap"], native.HAClusterConfigMapName(name))
	assert.Contains(t, cached["Pod"], name+"-taskmanager-1-1")
	assert.Contains(t, cached["Service"], flinkconf.RESTServiceName(name))
	assert.NotContains(t, cached["Service"], foreignService)

	jm := &appsv1.Deployment{}
	require.NoError(t, mgr.GetCache().Get(ctx, client.ObjectKey{Namespace: flinkNS, Name: native.JobManagerDeploymentName(name)}, jm))
	assert.NotEmpty(t, jm.ManagedFields, "the operator's own objects keep their managed fields (it deletes only what it applied)")

	// What tenants write into the scope is cached without its bulk: no data, no annotations,
	// no pod spec; an HA ConfigMap keeps the keys the operator reads, without their values.
	blob := &corev1.ConfigMap{}
	require.NoError(t, mgr.GetClient().Get(ctx, client.ObjectKey{Namespace: flinkNS, Name: tenantBlob}, blob))
	assert.Zero(t, len(blob.Data["blob"]), "a tenant's ConfigMap labelled into the cache keeps its data there")
	ha := &corev1.ConfigMap{}
	require.NoError(t, mgr.GetClient().Get(ctx, client.ObjectKey{Namespace: flinkNS, Name: haJob}, ha))
	assert.Contains(t, ha.Data, "checkpointID-0000000000000000001")
	assert.Equal(t, 1, len(ha.Data), "only the checkpoint key is kept")
	assert.Zero(t, len(ha.Data["checkpointID-0000000000000000001"]), "the checkpoint pointer's value is kept")
	pod := &corev1.Pod{}
	require.NoError(t, mgr.GetClient().Get(ctx, client.ObjectKey{Namespace: flinkNS, Name: tenantPod}, pod))
	assert.Zero(t, len(pod.Annotations["blob"]), "the pod's annotations are kept")
	assert.Zero(t, len(pod.Spec.Containers), "the pod's spec is kept")
	// The operator still sees from the cache that the cluster has a checkpoint in HA.
	has, err := native.HasHACheckpoint(ctx, mgr.GetClient(), flinkNS, name)
	require.NoError(t, err)
	assert.True(t, has)

	// Read by name, an object outside the scope is still there.
	foreign := &corev1.Service{}
	require.NoError(t, mgr.GetClient().Get(ctx, client.ObjectKey{Namespace: flinkNS, Name: foreignService}, foreign))
	assert.Empty(t, foreign.Labels)

	code, body := httpGet(t, "http://"+o.probeAddr+"/healthz/"+stuckReconcilesCheck)
	assert.Equal(t, http.StatusOK, code, "the stuck-reconciles liveness check is served: %s", body)
}

// createAll creates objs with a few writers at a time.
func createAll(t *testing.T, c client.Client, objs []client.Object) {
	t.Helper()
	work := make(chan client.Object)
	errs := make(chan error, len(objs))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range work {
				if err := c.Create(context.Background(), obj); err != nil {
					errs <- fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
				}
			}
		}()
	}
	for _, obj := range objs {
		work <- obj
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func metaItems(list client.ObjectList) ([]metav1.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
