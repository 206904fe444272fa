package ingressproxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/podnet"
	"github.com/flink-operator/flink-operator/test/wait"
)

func TestMain(m *testing.M) {
	// EndpointSlices refuse loopback addresses: the backend the test runs listens on a pod
	// address of a network namespace of the test's own.
	podnet.Enter("ingressproxy", false)
	os.Exit(m.Run())
}

// The Ingress the operator renders for upstream's e2e FlinkDeployments, served as minikube's
// ingress-nginx serves it: GET /default/<name>/overview reaches the REST Service as /overview.
func TestServesTheOperatorsIngress(t *testing.T) {
	require.Equal(t, podnet.Namespace, podnet.Current(),
		"the test needs a network namespace of its own (root, unshare): EndpointSlices refuse loopback addresses")
	cfg := startAPIServer(t)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	ctx := t.Context()

	// The JobManager's REST endpoint, on a pod address: it answers with the path it received.
	rest, err := net.Listen("tcp", podnet.Prefix+"254.1:0")
	require.NoError(t, err)
	server := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "backend saw "+r.URL.Path) //nolint:gosec // plain text, to the test
	})}
	go func() { _ = server.Serve(rest) }()
	t.Cleanup(func() { _ = server.Close() })
	restPort := int32(rest.Addr().(*net.TCPAddr).Port)

	// What upstream's e2e manifests create beside the FlinkDeployment, and what the operator and
	// the endpoint slice controller would.
	class := nginxClass()
	create(t, c, class)
	create(t, c, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x-rest"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "rest", Port: 8081, TargetPort: intstr.FromInt(8081)}}}})
	create(t, c, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "x-rest-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: "x-rest"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{podnet.Prefix + "254.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("rest"), Port: &restPort, Protocol: ptr.To(corev1.ProtocolTCP)}}})
	dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"},
		Spec: flinkv1beta1.FlinkDeploymentSpec{Ingress: &flinkv1beta1.IngressSpec{
			Template: "/{{namespace}}/{{name}}(/|$)(.*)", ClassName: "nginx",
			Annotations: map[string]string{AnnotationRewriteTarget: "/$2"}}}}
	ingress, err := native.BuildIngress(dep, 8081)
	require.NoError(t, err)
	ingress.OwnerReferences = nil // no FlinkDeployment in this API server to own it
	create(t, c, ingress)

	ctrl, err := Start(ctx, Options{Client: kube, Address: podnet.Prefix + "254.2:0", Log: testLog{t}})
	require.NoError(t, err)
	t.Cleanup(ctrl.Wait)

	body, status := get(t, "http://"+ctrl.Addr()+"/default/x/overview")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "backend saw /overview", body)
	_, status = get(t, "http://"+ctrl.Addr()+"/default/y/overview")
	assert.Equal(t, http.StatusNotFound, status)

	// kubectl get ingress shows the address, as with ingress-nginx.
	wait.Object(t, c, client.ObjectKeyFromObject(ingress), 30*time.Second, "the Ingress's status names the controller's address",
		func(i *networkingv1.Ingress) bool {
			lb := i.Status.LoadBalancer.Ingress
			return len(lb) == 1 && lb[0].IP == podnet.Prefix+"254.2"
		})
}

// startAPIServer starts etcd and kube-apiserver (envtest) in the test's network namespace.
func startAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	require.NotEmpty(t, os.Getenv("KUBEBUILDER_ASSETS"),
		"KUBEBUILDER_ASSETS is not set: run the tests with `make test`, which builds kube-apiserver and etcd into bin/ and sets it")
	te := &envtest.Environment{ControlPlaneStartTimeout: 2 * time.Minute}
	te.ControlPlane.GetAPIServer().Configure().
		// The namespace has no default route, which kube-apiserver picks the address it
		// advertises from.
		Set("advertise-address", "127.0.0.1").
		// 1.37 refuses a loopback address for the kubernetes Service's endpoints; nothing here
		// reaches the API server through that Service.
		Set("endpoint-reconciler-type", "none")
	cfg, err := te.Start()
	require.NoError(t, err, "start envtest")
	t.Cleanup(func() {
		if err := te.Stop(); err != nil {
			t.Logf("stop envtest: %v", err)
		}
	})
	return cfg
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	require.NoError(t, c.Create(context.Background(), obj))
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s: %v", obj.GetName(), err)
		}
	})
}

func get(t *testing.T, url string) (string, int) {
	t.Helper()
	// Straight to the address: a proxy from the environment cannot reach the namespace's.
	c := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body), resp.StatusCode
}

// testLog writes the controller's log lines to the test's.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
