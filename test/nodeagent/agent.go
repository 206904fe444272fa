// Package nodeagent plays kubelet for one Node of a local cluster: it runs the pods bound to
// the node as real Flink java processes from the distributions in bin/flink, each pod on its
// own loopback address, and reports their status as a kubelet would (phase, probes, restarts,
// crash reasons). Test and development tool only; the product never imports it.
//
// What a container image becomes: images whose name contains "flink" run the Flink image's
// entrypoint commands (jobmanager, taskmanager, standalone-job, kubernetes-jobmanager.sh,
// kubernetes-taskmanager.sh) as java processes of the distribution whose major version matches
// the image tag; job images built on the Flink image (Options.FlinkImages) add their files and
// a PyFlink environment (see FlinkImage). Images of Options.ProcessImages run a locally built binary, or the image
// itself from an OCI image layout, instead (see ProcessImage); busybox images run from the
// layout of Options.Busybox so. Other containers cannot run here and are reported as Waiting with reason
// ImageNotRunnable, so their pods never look healthy.
//
// How a pod sees the world: volumes become directories (configMap and secret files written
// out, emptyDir per pod, hostPath shared under the agent's directory, a claim's bound
// PersistentVolume by its hostPath or local path there too). A Flink container sees the
// volumes mounted under /opt/flink at their mount paths, in a root of its own (flinkroot.go);
// other container paths in its configuration and arguments (/opt/flink's own, mount paths
// elsewhere) are rewritten to the machine's directories.
// Each pod gets a hosts file (given to Java as jdk.net.hosts.file) that resolves Service names
// to the pod addresses of their EndpointSlices, so Flink components find each other by
// Service name without touching the machine's DNS. Native-mode JobManagers get the cluster's
// kubeconfig, so they create TaskManager pods, which this agent then runs.
package nodeagent

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/flink-operator/flink-operator/test/flinkcluster"
)

// Options configure an agent.
type Options struct {
	// Client talks to the cluster's API server.
	Client kubernetes.Interface
	// Kubeconfig is handed to Flink processes (native mode talks to the API server).
	Kubeconfig string
	// NodeName defaults to "local-node".
	NodeName string
	// Dir holds pod directories, hostPath volumes and process logs.
	Dir string
	// Dists are the Flink distributions pods can run.
	Dists []flinkcluster.Dist
	// Log receives the agent's own log lines; nil discards them.
	Log io.Writer
	// StandInImages are image name prefixes whose containers the agent reports as running and
	// ready without starting anything, as kwok does. For pods whose own behaviour is tested
	// elsewhere and only has to look healthy, such as the operator's Deployment that OLM installs.
	StandInImages []string
	// ProcessImages are image name prefixes whose containers run a local binary as a process
	// (ProcessImage), such as the operator's own image in the OLM test; the longest prefix wins.
	ProcessImages map[string]ProcessImage
	// Busybox, when set, is the OCI image layout (`make busybox-image`) that containers of
	// Docker Hub's busybox run from, at any tag or digest (busybox, busybox:1.35.0,
	// docker.io/library/busybox:...), as a ProcessImage with it as Archive: init containers
	// that fetch a job's jar with wget, the storage provisioner's helper pods. ProcessImages
	// win over it.
	Busybox string
	// PodAddressPrefix is the first two octets of pod addresses, with the dot ("10.244."); the
	// range must be routed to this machine's loopback (package podnet). Default "127.1.".
	PodAddressPrefix string
	// MachineHostsFile, when set, is a hosts file the agent keeps current for processes that
	// run on the machine outside any pod (given to Java as jdk.net.hosts.file): every Service
	// by its namespace-relative forms, as a pod's hosts file has them. The migration test runs
	// the Apache operator that way; it reaches JobManagers at <name>-rest.<namespace>.
	MachineHostsFile string
	// FlinkImages are image name prefixes of job images built on the Flink image, with what
	// they add to it (FlinkImage); the longest prefix wins.
	FlinkImages map[string]FlinkImage
	// KubeletAPI, when set, makes `kubectl logs` and `kubectl exec` work: the agent serves
	// kubelet's API for them (kubeletapi.go). Without it the API server has no node to ask.
	KubeletAPI *KubeletAPI
}

// Agent is a running node agent.
type Agent struct {
	opts   Options
	client kubernetes.Interface

	mu   sync.Mutex
	pods map[types.UID]*podRunner
	// imageMu serializes unpacking images (ProcessImage.Archive) into the shared cache.
	imageMu sync.Mutex
	ips     *ipPool

	done chan struct{}

	podInformer     cache.SharedIndexInformer
	serviceInformer cache.SharedIndexInformer
	hostname        string
	// kubeletPort is where the kubelet API listens on 127.0.0.1; 0 when it is not served.
	kubeletPort int
}

// standIn reports whether containers of image only pretend to run.
func (a *Agent) standIn(image string) bool {
	for _, prefix := range a.opts.StandInImages {
		if strings.HasPrefix(image, prefix) {
			return true
		}
	}
	return false
}

// Start registers the node and starts running its pods. The agent stops, killing every
// process it started, when ctx is cancelled; Wait returns after that.
func Start(ctx context.Context, opts Options) (*Agent, error) {
	if opts.NodeName == "" {
		opts.NodeName = "local-node"
	}
	if len(opts.Dists) == 0 {
		return nil, fmt.Errorf("no Flink distribution to run pods with")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	a := &Agent{opts: opts, client: opts.Client, pods: map[types.UID]*podRunner{}, ips: newIPPool(opts.PodAddressPrefix), hostname: host,
		done: make(chan struct{})}
	if opts.KubeletAPI != nil {
		port, err := a.serveKubeletAPI(ctx, *opts.KubeletAPI)
		if err != nil {
			return nil, fmt.Errorf("kubelet API: %w", err)
		}
		a.kubeletPort = port
	}
	if err := a.registerNode(ctx); err != nil {
		return nil, fmt.Errorf("register node %s: %w", opts.NodeName, err)
	}

	podFactory := informers.NewSharedInformerFactoryWithOptions(a.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", opts.NodeName).String()
	}))
	a.podInformer = podFactory.Core().V1().Pods().Informer()
	factory := informers.NewSharedInformerFactory(a.client, 0)
	a.serviceInformer = factory.Core().V1().Services().Informer()

	changed := make(chan struct{}, 1)
	kick := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { kick() },
		UpdateFunc: func(any, any) { kick() },
		DeleteFunc: func(any) { kick() },
	}
	if _, err := a.podInformer.AddEventHandler(handler); err != nil {
		return nil, err
	}
	if _, err := a.serviceInformer.AddEventHandler(handler); err != nil {
		return nil, err
	}
	podFactory.Start(ctx.Done())
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), a.podInformer.HasSynced, a.serviceInformer.HasSynced) {
		return nil, fmt.Errorf("informer caches did not sync")
	}

	go a.heartbeat(ctx)
	go a.loop(ctx, changed)
	a.logf("node %s ready; pods run from %s", opts.NodeName, opts.Dir)
	return a, nil
}

// Wait returns once the agent has stopped and its processes are gone.
func (a *Agent) Wait() { <-a.done }

func (a *Agent) logf(format string, args ...any) {
	if a.opts.Log != nil {
		fmt.Fprintf(a.opts.Log, time.Now().Format("15:04:05.000")+" nodeagent: "+format+"\n", args...)
	}
}

// loop syncs pods and name files on every change, and at least once a second.
func (a *Agent) loop(ctx context.Context, changed <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			a.stopAll()
			close(a.done)
			return
		case <-changed:
		case <-tick.C:
		}
		a.syncPods(ctx)
		a.writeHostsFiles()
	}
}

func (a *Agent) syncPods(ctx context.Context) {
	seen := map[types.UID]bool{}
	for _, obj := range a.podInformer.GetStore().List() {
		pod := obj.(*corev1.Pod)
		seen[pod.UID] = true
		a.mu.Lock()
		r := a.pods[pod.UID]
		a.mu.Unlock()
		switch {
		case pod.DeletionTimestamp != nil:
			if r != nil {
				go a.terminate(ctx, r, pod)
			} else {
				go a.finalizeDeletion(ctx, pod)
			}
		case r == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			r = newPodRunner(a, pod.DeepCopy())
			a.mu.Lock()
			a.pods[pod.UID] = r
			a.mu.Unlock()
			a.logf("pod %s/%s: starting on %s", pod.Namespace, pod.Name, r.ip)
			go r.run(ctx)
		}
	}
	// Pods deleted without a grace period are gone from the store at once.
	a.mu.Lock()
	var gone []*podRunner
	for uid, r := range a.pods {
		if !seen[uid] {
			gone = append(gone, r)
			delete(a.pods, uid)
		}
	}
	a.mu.Unlock()
	for _, r := range gone {
		go r.stop(0)
	}
}

// terminate stops a deleted pod's containers within its grace period and then removes the
// pod object, as kubelet does.
func (a *Agent) terminate(ctx context.Context, r *podRunner, pod *corev1.Pod) {
	if !r.beginTermination() {
		return
	}
	grace := 30 * time.Second
	if pod.DeletionGracePeriodSeconds != nil {
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	a.logf("pod %s/%s: stopping (grace %s)", pod.Namespace, pod.Name, grace)
	r.stop(grace)
	a.mu.Lock()
	delete(a.pods, pod.UID)
	a.mu.Unlock()
	a.ips.release(r.ip)
	a.finalizeDeletion(ctx, pod)
}

func (a *Agent) finalizeDeletion(ctx context.Context, pod *corev1.Pod) {
	err := a.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		a.logf("pod %s/%s: final delete: %v", pod.Namespace, pod.Name, err)
	}
}

func (a *Agent) stopAll() {
	a.mu.Lock()
	runners := make([]*podRunner, 0, len(a.pods))
	for _, r := range a.pods {
		runners = append(runners, r)
	}
	a.pods = map[types.UID]*podRunner{}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Add(1)
		go func() { defer wg.Done(); r.stop(5 * time.Second) }()
	}
	wg.Wait()
}

// registerNode creates or refreshes the Node with a Ready condition and ample capacity
// (the processes share the machine; requests only have to fit for the scheduler).
func (a *Agent) registerNode(ctx context.Context) error {
	name := a.opts.NodeName
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"node.kubernetes.io/local-agent": "true",
	}}}
	if _, err := a.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return a.updateNodeStatus(ctx)
}

func (a *Agent) updateNodeStatus(ctx context.Context) error {
	// The node controllers write the Node too (taints, annotations): retry on conflicts.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return a.tryUpdateNodeStatus(ctx) })
}

func (a *Agent) tryUpdateNodeStatus(ctx context.Context) error {
	node, err := a.client.CoreV1().Nodes().Get(ctx, a.opts.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("64"),
		corev1.ResourceMemory:           resource.MustParse("256Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
	node.Status.Capacity, node.Status.Allocatable = capacity, capacity
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: a.opts.NodeName}}
	// The API server proxies logs and exec to InternalIP:kubeletEndpoint.port.
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(a.kubeletPort)
	node.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64",
		ContainerRuntimeVersion: "nodeagent://flink-processes"}
	var conds []corev1.NodeCondition
	for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		conds = append(conds, corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: "AgentHasNoPressure", LastHeartbeatTime: now, LastTransitionTime: now})
	}
	conds = append(conds, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "AgentReady",
		Message: "local node agent is running Flink processes", LastHeartbeatTime: now, LastTransitionTime: now})
	for i := range conds {
		for _, old := range node.Status.Conditions {
			if old.Type == conds[i].Type && old.Status == conds[i].Status {
				conds[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	node.Status.Conditions = conds
	_, err = a.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// heartbeat renews the node Lease every 10 s and the Ready condition every 30 s, so the node
// lifecycle controller never marks the node unreachable.
func (a *Agent) heartbeat(ctx context.Context) {
	leases := a.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	lastStatus := time.Now()
	for {
		now := metav1.NewMicroTime(time.Now())
		lease, err := leases.Get(ctx, a.opts.NodeName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: a.opts.NodeName, Namespace: corev1.NamespaceNodeLease},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(a.opts.NodeName), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
			}, metav1.CreateOptions{})
		case err == nil:
			lease.Spec.RenewTime = &now
			_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		}
		if err != nil && ctx.Err() == nil {
			a.logf("node lease: %v", err)
		}
		if time.Since(lastStatus) > 30*time.Second {
			if err := a.updateNodeStatus(ctx); err != nil && ctx.Err() == nil {
				a.logf("node status: %v", err)
			}
			lastStatus = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Second):
		}
	}
}

// services returns the Services the hosts files are computed from.
func (a *Agent) services() []*corev1.Service {
	var out []*corev1.Service
	for _, obj := range a.serviceInformer.GetStore().List() {
		out = append(out, obj.(*corev1.Service))
	}
	return out
}

func (a *Agent) podDir(pod *corev1.Pod) string {
	return filepath.Join(a.opts.Dir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID)[:8])
}

func (a *Agent) hostPathDir(path string) string {
	return filepath.Join(a.opts.Dir, "hostpath", filepath.Clean("/"+path))
}
