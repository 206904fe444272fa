package nodeagent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-operator/flink-operator/test/flinkcluster"
)

func TestFlinkEntrypoint(t *testing.T) {
	tests := []struct {
		name      string
		words     []string
		mainClass string
		role      string
		args      []string
		err       string
	}{
		{name: "native application JobManager", words: []string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-application -Djobmanager.rpc.address=127.1.0.3"},
			mainClass: "org.apache.flink.kubernetes.entrypoint.KubernetesApplicationClusterEntrypoint", role: "jobmanager",
			args: []string{"-Djobmanager.rpc.address=127.1.0.3"}},
		{name: "native session JobManager", words: []string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-session"},
			mainClass: "org.apache.flink.kubernetes.entrypoint.KubernetesSessionClusterEntrypoint", role: "jobmanager"},
		{name: "native TaskManager as Flink creates it", words: []string{"/docker-entrypoint.sh", "bash", "-c", "kubernetes-taskmanager.sh -D taskmanager.resource-id='tm-1 x' -Dk=v"},
			mainClass: "org.apache.flink.kubernetes.taskmanager.KubernetesTaskExecutorRunner", role: "taskmanager",
			args: []string{"-D", "taskmanager.resource-id=tm-1 x", "-Dk=v"}},
		{name: "standalone session", words: []string{"jobmanager"}, mainClass: "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint", role: "jobmanager", args: []string{}},
		{name: "standalone application", words: []string{"standalone-job", "--job-classname", "a.B"},
			mainClass: "org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint", role: "jobmanager", args: []string{"--job-classname", "a.B"}},
		{name: "standalone TaskManager", words: []string{"taskmanager"}, mainClass: "org.apache.flink.runtime.taskexecutor.TaskManagerRunner", role: "taskmanager", args: []string{}},
		{name: "not an entrypoint", words: []string{"sleep", "10"}, err: "not one of the Flink image's entrypoints"},
		{name: "unknown native target", words: []string{"bash", "-c", "kubernetes-jobmanager.sh other"}, err: "unknown target"},
		{name: "no command", words: nil, err: "no command"},
		{name: "unterminated quote", words: []string{"bash", "-c", "kubernetes-taskmanager.sh '-Dk=v"}, err: "unterminated quote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := flinkEntrypoint(tt.words)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.mainClass, ep.mainClass)
			assert.Equal(t, tt.role, ep.role)
			if tt.args != nil {
				assert.Equal(t, tt.args, ep.args)
			}
		})
	}
}

func TestDistForImage(t *testing.T) {
	dists := []flinkcluster.Dist{{Version: "1.18.1"}, {Version: "1.20.3"}, {Version: "2.3.0"}}
	tests := []struct {
		image, version, err string
	}{
		{image: "flink:1.20", version: "1.20.3"},
		{image: "flink:1.18", version: "1.18.1"},
		{image: "flink:1.18.0-java11", version: "1.18.1"},
		{image: "flink:1.17", version: "1.20.3"},
		{image: "apache/flink:2.0.0-scala_2.12-java17", version: "2.3.0"},
		{image: "registry.example.com:5000/team/flink:2.2", version: "2.3.0"},
		{image: "flink", version: "2.3.0"},
		{image: "flink:latest", version: "2.3.0"},
		{image: "registry.invalid/not-runnable:1", err: "not a Flink image"},
		{image: "flink:3.0", err: "no Flink 3.x distribution"},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			d, err := distForImage(tt.image, dists)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.version, d.Version)
		})
	}
}

func TestServiceNames(t *testing.T) {
	svc := func(ns, name string, sel map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Selector: sel}}
	}
	jm := map[string]string{"app": "a", "component": "jobmanager"}
	services := []*corev1.Service{svc("ns1", "a-rest", jm), svc("ns1", "a", jm), svc("ns2", "other", map[string]string{"app": "b"}),
		svc("ns1", "external", nil)}
	pods := []podAddress{
		{namespace: "ns1", labels: map[string]string{"app": "a", "component": "jobmanager"}, ip: "127.1.0.3", ready: false},
		{namespace: "ns1", labels: map[string]string{"app": "a", "component": "taskmanager"}, ip: "127.1.0.4", ready: true},
		{namespace: "ns2", labels: map[string]string{"app": "b"}, ip: "127.1.0.6", ready: true},
		{namespace: "ns2", labels: map[string]string{"app": "b"}, ip: "127.1.0.5", ready: false},
	}
	got := serviceAddresses(services, pods)
	assert.Equal(t, map[string][]string{
		"a-rest.ns1": {"127.1.0.3"}, // not ready yet, but the only one: resolvable before readiness
		"a.ns1":      {"127.1.0.3"},
		"other.ns2":  {"127.1.0.6"}, // ready ones win
	}, got)

	hosts := hostsFile("ns1", "a-jm-0", "127.1.0.3", "machine", got)
	assert.Equal(t, "127.1.0.3 localhost a-jm-0 machine\n"+
		"127.1.0.3 a-rest a-rest.ns1 a-rest.ns1.svc a-rest.ns1.svc.cluster.local\n"+
		"127.1.0.3 a a.ns1 a.ns1.svc a.ns1.svc.cluster.local\n"+
		"127.1.0.6 other.ns2 other.ns2.svc other.ns2.svc.cluster.local\n", hosts,
		"short names only within the pod's own namespace")

	assert.Equal(t, "127.0.0.1 localhost machine\n"+
		"127.1.0.3 a-rest.ns1 a-rest.ns1.svc a-rest.ns1.svc.cluster.local\n"+
		"127.1.0.3 a.ns1 a.ns1.svc a.ns1.svc.cluster.local\n"+
		"127.1.0.6 other.ns2 other.ns2.svc other.ns2.svc.cluster.local\n", machineHostsFile("machine", got),
		"a process outside any pod: the machine's localhost, no short names")
}

func TestExpandVars(t *testing.T) {
	env := map[string]string{"_POD_IP_ADDRESS": "127.1.0.3", "A": "x"}
	assert.Equal(t, "-Djobmanager.rpc.address=127.1.0.3", expandVars("-Djobmanager.rpc.address=$(_POD_IP_ADDRESS)", env))
	assert.Equal(t, "$(A) x $(MISSING)", expandVars("$$(A) $(A) $(MISSING)", env))
}

func TestProbeTimesKeepTheTotalWindow(t *testing.T) {
	period, failures := probeTimes(&corev1.Probe{PeriodSeconds: 5, FailureThreshold: 60})
	assert.Equal(t, 300.0, period.Seconds()*float64(failures), "startup window of 5 minutes kept")
	period, failures = probeTimes(&corev1.Probe{PeriodSeconds: 1, FailureThreshold: 3})
	assert.Equal(t, 1.0, period.Seconds())
	assert.Equal(t, 3, failures)
}

func TestIPPoolNeverHandsOutAnAddressTwice(t *testing.T) {
	p := newIPPool("")
	seen := map[string]bool{}
	for range 600 {
		ip := p.allocate()
		require.False(t, seen[ip], ip)
		seen[ip] = true
	}
	p.release("127.1.0.2")
	assert.NotEqual(t, "127.1.0.2", p.allocate(), "released addresses are reused only after the pool wraps")
}

func TestProcessArgs(t *testing.T) {
	c := corev1.Container{Command: []string{"/manager", "--config=$(CONF)"}, Args: []string{
		"--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=0.0.0.0:8443",
		"--other=[::]:9000", "--kept=127.0.0.1:8080", "-p=:1"}}
	args := processArgs(c, map[string]string{"CONF": "x"}, "10.244.0.7")
	assert.Equal(t, []string{"--config=x", "--leader-elect", "--health-probe-bind-address=10.244.0.7:8081",
		"--metrics-bind-address=10.244.0.7:8443", "--other=10.244.0.7:9000", "--kept=127.0.0.1:8080", "-p=10.244.0.7:1"}, args)
	assert.Equal(t, []string{"a"}, processArgs(corev1.Container{Args: []string{"a"}}, nil, "10.244.0.7"), "no command: the image's entrypoint")
}

func TestFieldValue(t *testing.T) {
	r := &podRunner{ip: "10.244.0.7", pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
		Annotations: map[string]string{"olm.targetNamespaces": "a,b"}, Labels: map[string]string{"app": "x"}}}}
	for path, want := range map[string]string{"metadata.namespace": "ns", "status.podIP": "10.244.0.7",
		"metadata.annotations['olm.targetNamespaces']": "a,b", "metadata.labels['app']": "x", "metadata.annotations['none']": ""} {
		got, err := r.fieldValue(path)
		require.NoError(t, err, path)
		assert.Equal(t, want, got, path)
	}
	_, err := r.fieldValue("status.phase")
	assert.ErrorContains(t, err, "status.phase is not supported")
}

func TestProcessImage(t *testing.T) {
	a := &Agent{opts: Options{ProcessImages: map[string]ProcessImage{"ghcr.io/o/op:": {Binary: "short"}, "ghcr.io/o/op:1.": {Binary: "long"}}}}
	img, ok := a.processImage("ghcr.io/o/op:1.2")
	assert.True(t, ok)
	assert.Equal(t, "long", img.Binary, "the longest prefix wins")
	_, ok = a.processImage("flink:1.20")
	assert.False(t, ok)
}
