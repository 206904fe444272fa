package controllers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkstatesnapshot"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// clusterNetwork stands in for cluster DNS and kube-proxy, which envtest lacks: the REST URL
// http://<network>/<namespace>/<service> reaches what Kubernetes would route that Service's
// name to. An ExternalName Service is a DNS alias: its externalName
// <service>.<namespace>.svc... is followed to that Service. Any other Service reaches the fake
// JobManager whose pod labels its selector matches, in its namespace.
type clusterNetwork struct {
	t   *testing.T
	c   client.Client
	srv *httptest.Server

	mu   sync.Mutex
	pods []networkPod
}

type networkPod struct {
	namespace string
	labels    map[string]string
	flink     *fakeflink.Server
}

func newClusterNetwork(t *testing.T, c client.Client) *clusterNetwork {
	n := &clusterNetwork{t: t, c: c}
	n.srv = httptest.NewServer(http.HandlerFunc(n.serve))
	t.Cleanup(n.srv.Close)
	return n
}

// URLTemplate is the operator's REST URL template on this network.
func (n *clusterNetwork) URLTemplate() string { return n.srv.URL + "/{{namespace}}/{{name}}-rest" }

// run puts a fake JobManager on the network as a pod of namespace with labels.
func (n *clusterNetwork) run(namespace string, labels map[string]string, flink *fakeflink.Server) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pods = append(n.pods, networkPod{namespace: namespace, labels: labels, flink: flink})
}

func (n *clusterNetwork) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3)
	if len(parts) < 2 {
		http.Error(w, "no such host", http.StatusBadGateway)
		return
	}
	namespace, service, rest := parts[0], parts[1], ""
	if len(parts) == 3 {
		rest = parts[2]
	}
	backend := n.route(r.Context(), namespace, service, 0)
	if backend == nil {
		http.Error(w, "no endpoint", http.StatusBadGateway)
		return
	}
	target, err := url.Parse(backend.URL)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.URL.Path, pr.Out.URL.RawPath = "/"+rest, ""
	}}
	proxy.ServeHTTP(w, r)
}

func (n *clusterNetwork) route(ctx context.Context, namespace, service string, hops int) *fakeflink.Server {
	var svc corev1.Service
	if hops > 3 || n.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: service}, &svc) != nil {
		return nil
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		labels := strings.Split(svc.Spec.ExternalName, ".")
		if len(labels) < 2 {
			return nil
		}
		return n.route(ctx, labels[1], labels[0], hops+1)
	}
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.pods {
		if p.namespace != namespace {
			continue
		}
		matches := true
		for k, v := range svc.Spec.Selector {
			matches = matches && p.labels[k] == v
		}
		if matches {
			return p.flink
		}
	}
	return nil
}

// TestRESTServiceDecidesNothing: the tenant's REST Service does not decide where the operator's
// REST calls go. A tenant switches its cluster's REST Service to an ExternalName aliasing
// another namespace's JobManager (the victim), or points its selector at other pods, then
// deletes a FlinkStateSnapshot recording an existing savepoint at a path of the victim's: the
// operator refuses the Service with a Warning event and makes no REST call, so the victim's
// JobManager receives no disposal. Once the Service is as rendered, the disposal goes to the
// tenant's own JobManager.
func TestRESTServiceDecidesNothing(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	tenant := testEnv(t).NewNamespace(t, "rest-tenant")
	victimNS := testEnv(t).NewNamespace(t, "rest-victim")
	network := newClusterNetwork(t, c)

	own, victim, neighbour := fakeflink.New(t), fakeflink.New(t), fakeflink.New(t)
	network.run(tenant, map[string]string{"app": "app", "component": "jobmanager", "type": "flink-native-kubernetes"}, own)
	network.run(tenant, map[string]string{"app": "neighbour"}, neighbour)
	network.run(victimNS, map[string]string{"app": "victim", "component": "jobmanager", "type": "flink-native-kubernetes"}, victim)
	victimSvc := restServiceOf(victimNS, "victim")
	require.NoError(t, c.Create(ctx, victimSvc))

	dep := fixtures.NewDeployment(t, tenant, "app")
	require.NoError(t, c.Create(ctx, dep))
	const jobID = "0000000000000000000000000000beef"
	dep.Status.JobStatus.JobID, dep.Status.JobStatus.State = jobID, flinkv1beta1.JobStatusRunning
	dep.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, dep))
	own.SetJob(jobID, "RUNNING")

	events, _ := startManager(t, managerOptions{namespaces: []string{tenant}, setup: func(mgr ctrl.Manager, rec record.EventRecorder) error {
		return (&flinkstatesnapshot.FlinkStateSnapshotReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
			Flink:     &clients.Factory{URLTemplate: network.URLTemplate(), Endpoints: mgr.GetAPIReader(), Timeout: 2 * time.Second},
			Intervals: fixtures.FastIntervals(), BaseBackoff: 200 * time.Millisecond}).SetupWithManager(mgr)
	}})

	yes := true
	// disposeVia replaces the tenant's REST Service with svc, records an existing savepoint at
	// path and deletes the record, and returns its key once the operator acted on it: refused
	// the Service (an event) or disposed of something somewhere.
	disposeVia := func(t *testing.T, name string, svc *corev1.Service, path string) client.ObjectKey {
		t.Helper()
		old := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "app-rest"}}
		_ = c.Delete(ctx, old)
		wait.For(t, 10*time.Second, "the old REST Service to go", func() bool {
			return c.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Service{}) != nil
		})
		require.NoError(t, c.Create(ctx, svc))
		snap := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: name},
			Spec: flinkv1beta1.FlinkStateSnapshotSpec{JobReference: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: "app"},
				Savepoint: &flinkv1beta1.SavepointSpec{Path: path, AlreadyExists: &yes, DisposeOnDelete: &yes}}}
		require.NoError(t, c.Create(ctx, snap))
		key := client.ObjectKeyFromObject(snap)
		wait.For(t, 20*time.Second, name+" to be COMPLETED", func() bool {
			return c.Get(ctx, key, snap) == nil && snap.Status.State == flinkv1beta1.SnapshotCompleted &&
				len(snap.Finalizers) > 0
		})
		require.NoError(t, c.Delete(ctx, snap))
		return key
	}
	acted := func(path string) func() bool {
		return func() bool {
			return events.has(clients.ReasonRESTServiceRefused) || len(victim.Disposed()) > 0 || len(own.Disposed()) > 0 ||
				len(neighbour.Disposed()) > 0 || strings.Contains(strings.Join(own.Requests(), " "), path)
		}
	}

	t.Run("ExternalName to another namespace's JobManager", func(t *testing.T) {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "app-rest"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "victim-rest." + victimNS + ".svc.cluster.local"}}
		disposeVia(t, "alias", svc, "file:///victim/savepoint-1")
		wait.For(t, 20*time.Second, "the operator to refuse the Service or dispose", acted("file:///victim/savepoint-1"))
		assert.Empty(t, victim.Disposed(), "the victim's JobManager disposed of a savepoint for the tenant")
		assert.Empty(t, victim.Requests(), "the victim's JobManager was called")
		events.seen(t, "REST Service "+tenant+"/app-rest: it is of type ExternalName")
	})

	t.Run("a selector of other pods", func(t *testing.T) {
		svc := restServiceOf(tenant, "app")
		svc.Spec.Selector = map[string]string{"app": "neighbour"}
		disposeVia(t, "selector", svc, "file:///neighbour/savepoint-2")
		wait.For(t, 20*time.Second, "the operator to refuse the Service or dispose", func() bool {
			return events.has("its selector is {app=neighbour}") || len(neighbour.Disposed()) > 0
		})
		assert.Empty(t, neighbour.Disposed(), "the pods the tenant's selector picked disposed of a savepoint")
		assert.Empty(t, neighbour.Requests())
	})

	t.Run("the Service as rendered reaches the cluster's own JobManager", func(t *testing.T) {
		disposeVia(t, "own", restServiceOf(tenant, "app"), "file:///own/savepoint-3")
		// The refused deletions, still waiting, go through too now: to the tenant's own
		// JobManager.
		wait.For(t, 20*time.Second, "the disposals", func() bool { return len(own.Disposed()) == 3 },
			func() string { return strings.Join(own.Disposed(), " ") })
		assert.ElementsMatch(t, []string{"file:///victim/savepoint-1", "file:///neighbour/savepoint-2", "file:///own/savepoint-3"}, own.Disposed())
		assert.Empty(t, victim.Requests())
		assert.Empty(t, neighbour.Requests())
	})
}
