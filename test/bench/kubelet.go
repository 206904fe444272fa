package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/yaml"

	"github.com/flink-operator/flink-operator/pkg/native"
)

// clusterHost stands in for what the bench's control plane lacks (no controller-manager, no
// kubelet) for the JobManager Deployments of the running mode:
//   - as kubelet and Deployment controller: once a JobManager Deployment and its configuration
//     ConfigMap exist, the cluster's job is started in the fake JobManager under the job id and
//     restore path of that configuration ($internal.pipeline.job-id, execution.state-recovery.path
//     or execution.savepoint.path: what Flink's application entrypoint reads), and the
//     Deployment's status is set available;
//   - as garbage collector: a JobManager Deployment deleted in the foreground loses its
//     dependents (ConfigMaps and Services it controls), then its foregroundDeletion finalizer.
//
// It works from informers of one namespace and a work queue of cluster names, so thousands of
// clusters cost it a few requests each.
type clusterHost struct {
	ns    string
	kube  kubernetes.Interface
	fake  *jobManagers
	queue workqueue.TypedRateLimitingInterface[string]

	factory                        informers.SharedInformerFactory
	deployments, configMaps, svcs  cache.SharedIndexInformer
	stopInformers                  chan struct{}
	workers                        sync.WaitGroup
	errMu                          sync.Mutex
	lastErr                        error
	started, collected, notStarted int
}

const ownerIndex = "controller-uid"

func newClusterHost(cfg *rest.Config, ns string, fake *jobManagers) (*clusterHost, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	h := &clusterHost{ns: ns, kube: kube, fake: fake, stopInformers: make(chan struct{}),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	h.factory = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	h.deployments = h.factory.Apps().V1().Deployments().Informer()
	h.configMaps = h.factory.Core().V1().ConfigMaps().Informer()
	h.svcs = h.factory.Core().V1().Services().Informer()
	byController := cache.Indexers{ownerIndex: func(obj any) ([]string, error) {
		if ref := metav1.GetControllerOf(obj.(metav1.Object)); ref != nil {
			return []string{string(ref.UID)}, nil
		}
		return nil, nil
	}}
	for _, inf := range []cache.SharedIndexInformer{h.configMaps, h.svcs} {
		if err := inf.AddIndexers(byController); err != nil {
			return nil, err
		}
	}
	enqueue := func(cluster func(obj any) string) cache.ResourceEventHandlerFuncs {
		add := func(obj any) {
			if name := cluster(obj); name != "" {
				h.queue.Add(name)
			}
		}
		return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}
	}
	if _, err := h.deployments.AddEventHandler(enqueue(func(obj any) string {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return ""
		}
		name, _ := isJobManager(d)
		return name
	})); err != nil {
		return nil, err
	}
	if _, err := h.configMaps.AddEventHandler(enqueue(func(obj any) string {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok || !strings.HasPrefix(cm.Name, native.ConfigMapName("")) {
			return ""
		}
		return strings.TrimPrefix(cm.Name, native.ConfigMapName(""))
	})); err != nil {
		return nil, err
	}
	return h, nil
}

// start runs the informers and workers until stop.
func (h *clusterHost) start(ctx context.Context, workers int) error {
	h.factory.Start(h.stopInformers)
	if !cache.WaitForCacheSync(ctx.Done(), h.deployments.HasSynced, h.configMaps.HasSynced, h.svcs.HasSynced) {
		return fmt.Errorf("cluster host: informers of namespace %s did not sync", h.ns)
	}
	for range workers {
		h.workers.Add(1)
		go func() {
			defer h.workers.Done()
			for h.next(ctx) {
			}
		}()
	}
	return nil
}

func (h *clusterHost) stop() {
	h.queue.ShutDown()
	h.workers.Wait()
	close(h.stopInformers)
	h.factory.Shutdown()
}

// err is the last error of a cluster's step, for a run that timed out.
func (h *clusterHost) err() error {
	h.errMu.Lock()
	defer h.errMu.Unlock()
	return h.lastErr
}

func (h *clusterHost) next(ctx context.Context) bool {
	name, shutdown := h.queue.Get()
	if shutdown {
		return false
	}
	defer h.queue.Done(name)
	if err := h.sync(ctx, name); err != nil {
		h.errMu.Lock()
		h.lastErr = fmt.Errorf("cluster %s/%s: %w", h.ns, name, err)
		h.errMu.Unlock()
		h.queue.AddRateLimited(name)
		return true
	}
	h.queue.Forget(name)
	return true
}

// sync takes the step cluster name needs: collect its deleted JobManager, or start its job and
// make its JobManager available.
func (h *clusterHost) sync(ctx context.Context, name string) error {
	obj, exists, err := h.deployments.GetIndexer().GetByKey(h.ns + "/" + native.JobManagerDeploymentName(name))
	if err != nil || !exists {
		return err
	}
	d := obj.(*appsv1.Deployment)
	if d.DeletionTimestamp != nil {
		return h.collect(ctx, d)
	}
	if d.Status.AvailableReplicas >= 1 {
		return nil
	}
	obj, exists, err = h.configMaps.GetIndexer().GetByKey(h.ns + "/" + native.ConfigMapName(name))
	if err != nil {
		return err
	}
	// The ConfigMap is applied after the Deployment; until this Deployment's is there, its
	// event brings the cluster back here.
	if !exists {
		return nil
	}
	cm := obj.(*corev1.ConfigMap)
	if ref := metav1.GetControllerOf(cm); ref == nil || ref.UID != d.UID {
		return nil
	}
	conf, err := flinkConfig(cm)
	if err != nil {
		return err
	}
	jobID := conf["$internal.pipeline.job-id"]
	if jobID == "" {
		h.errMu.Lock()
		h.notStarted++
		h.errMu.Unlock()
		return fmt.Errorf("configuration %s has no $internal.pipeline.job-id", cm.Name)
	}
	restore := conf["execution.state-recovery.path"]
	if restore == "" {
		restore = conf["execution.savepoint.path"]
	}
	h.fake.start(h.ns, name, jobID, restore)
	patch := fmt.Sprintf(`{"status":{"observedGeneration":%d,"replicas":1,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1}}`, d.Generation)
	if _, err := h.kube.AppsV1().Deployments(h.ns).Patch(ctx, d.Name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark JobManager available: %w", err)
	}
	h.errMu.Lock()
	h.started++
	h.errMu.Unlock()
	return nil
}

// collect does the garbage collector's part of a foreground deletion: the dependents go, then
// the finalizer that waited for them.
func (h *clusterHost) collect(ctx context.Context, d *appsv1.Deployment) error {
	if !slices.Contains(d.Finalizers, metav1.FinalizerDeleteDependents) {
		return nil
	}
	for _, inf := range []cache.SharedIndexInformer{h.configMaps, h.svcs} {
		deps, err := inf.GetIndexer().ByIndex(ownerIndex, string(d.UID))
		if err != nil {
			return err
		}
		for _, obj := range deps {
			var err error
			switch o := obj.(type) {
			case *corev1.ConfigMap:
				err = h.kube.CoreV1().ConfigMaps(h.ns).Delete(ctx, o.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &o.UID}})
			case *corev1.Service:
				err = h.kube.CoreV1().Services(h.ns).Delete(ctx, o.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &o.UID}})
			}
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("delete dependent of %s: %w", d.Name, err)
			}
		}
	}
	finalizers := slices.DeleteFunc(slices.Clone(d.Finalizers), func(f string) bool { return f == metav1.FinalizerDeleteDependents })
	patch := map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": d.ResourceVersion}}
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := h.kube.AppsV1().Deployments(h.ns).Patch(ctx, d.Name, types.MergePatchType, raw, metav1.PatchOptions{}); err != nil &&
		!apierrors.IsNotFound(err) {
		return fmt.Errorf("remove foregroundDeletion of %s: %w", d.Name, err)
	}
	h.errMu.Lock()
	h.collected++
	h.errMu.Unlock()
	return nil
}

// flinkConfig reads the Flink configuration file of a cluster's ConfigMap (config.yaml of
// Flink 1.19+, flat keys, or flink-conf.yaml's "key: value" lines).
func flinkConfig(cm *corev1.ConfigMap) (map[string]string, error) {
	if file, ok := cm.Data["config.yaml"]; ok {
		var raw map[string]any
		if err := yaml.Unmarshal([]byte(file), &raw); err != nil {
			return nil, fmt.Errorf("%s config.yaml: %w", cm.Name, err)
		}
		conf := make(map[string]string, len(raw))
		for k, v := range raw {
			conf[k] = fmt.Sprint(v)
		}
		return conf, nil
	}
	file, ok := cm.Data["flink-conf.yaml"]
	if !ok {
		return nil, fmt.Errorf("%s has neither config.yaml nor flink-conf.yaml", cm.Name)
	}
	conf := map[string]string{}
	for _, line := range strings.Split(file, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			conf[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return conf, nil
}
