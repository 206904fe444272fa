package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/test/wait"
)

func TestWatchNamespacesOption(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]cache.Config
		wantErr string
	}{
		{in: "", want: nil},
		{in: " , ", want: nil},
		{in: "a", want: map[string]cache.Config{"a": {}}},
		{in: "a, b,,c", want: map[string]cache.Config{"a": {}, "b": {}, "c": {}}},
		{in: "a/b", wantErr: `--watch-namespaces: "a/b" is not a namespace name`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := (&options{watchNamespaces: tt.in}).namespaces()
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestManagerServesProbesMetricsAndLeaderElection runs the manager against a real API server.
func TestManagerServesProbesMetricsAndLeaderElection(t *testing.T) {
	env := testEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	leaseNS := env.NewNamespace(t, "flink-operator-system")
	teamA, teamB := env.NewNamespace(t, "team-a"), env.NewNamespace(t, "team-b")

	o := options{
		metricsAddr:          freeAddr(t),
		probeAddr:            freeAddr(t),
		enableLeaderElection: true,
		leaderElectionID:     "flink-operator-test",
		leaderElectionNS:     leaseNS,
		watchNamespaces:      teamA + "," + teamB,
		enableWebhooks:       false,
		restURLTemplate:      clients.DefaultRESTURLTemplate,
		reconcileInterval:    time.Minute,
		progressInterval:     10 * time.Second,
	}
	mgr, err := newManager(env.Config, o)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()

	get := func(url string) (int, string) { return httpGet(t, url) }
	wait.For(t, 30*time.Second, "readyz never became ready", func() bool {
		code, _ := get("http://" + o.probeAddr + "/readyz")
		return code == http.StatusOK
	})
	code, body := get("http://" + o.probeAddr + "/healthz")
	assert.Equal(t, http.StatusOK, code, body)

	wait.For(t, 30*time.Second, "the manager never took the leader Lease", func() bool {
		lease := &coordinationv1.Lease{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: o.leaderElectionID}, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	})

	code, body = get("http://" + o.metricsAddr + "/metrics")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "leader_election_master_status")

	// Resource metrics follow the resources: a FlinkDeployment appears in the counts and
	// leaves no series once deleted. (This one fails validation, so nothing is deployed.)
	dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "orders"},
		Spec: flinkv1beta1.FlinkDeploymentSpec{Image: "flink:1.20", FlinkVersion: flinkv1beta1.FlinkVersion1_20,
			Job: &flinkv1beta1.JobSpec{JarURI: "local:///x.jar", UpgradeMode: flinkv1beta1.UpgradeModeSavepoint}}}
	require.NoError(t, env.Client.Create(ctx, dep))
	wait.For(t, 30*time.Second, "metrics of the new FlinkDeployment", func() bool {
		_, body := get("http://" + o.metricsAddr + "/metrics")
		return strings.Contains(body, `flink_operator_resources{kind="FlinkDeployment",namespace="`+teamA+`"} 1`) &&
			strings.Contains(body, `flink_operator_resources_lifecycle_state{kind="FlinkDeployment",namespace="`+teamA+`",state="FAILED"} 1`)
	})
	require.NoError(t, env.Client.Delete(ctx, dep))
	wait.For(t, 30*time.Second, "series of the deleted FlinkDeployment are gone", func() bool {
		_, body := get("http://" + o.metricsAddr + "/metrics")
		return !strings.Contains(body, `flink_operator_resources{kind="FlinkDeployment",namespace="`+teamA+`"}`) &&
			!strings.Contains(body, `flink_operator_resources_lifecycle_state{kind="FlinkDeployment",namespace="`+teamA+`"`)
	})

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("manager did not stop")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return fmt.Sprintf("127.0.0.1:%d", l.Addr().(*net.TCPAddr).Port)
}

// TestLeaderFailover: two replicas share the Lease; when the leader is killed (SIGKILL, so it
// cannot step down), the standby takes over after the lease expires and reconciles.
func TestLeaderFailover(t *testing.T) {
	env := testEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaseNS, ns := env.NewNamespace(t, "flink-operator-system"), env.NewNamespace(t, "failover")
	const id = "flink-operator-failover"
	admin, err := env.Environment.AddUser(envtest.User{Name: "leader", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	kubeconfig, err := admin.KubeConfig()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubeconfig"), kubeconfig, 0o600))
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "manager"), ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	lease := []string{"--leader-elect", "--leader-election-id=" + id, "--leader-election-namespace=" + leaseNS,
		"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms"}
	// Both replicas watch this test's namespace only: the shared control plane holds what
	// other tests left, which is not this test's to reconcile.
	leader := exec.Command(filepath.Join(dir, "manager"), append([]string{"--enable-webhooks=false", "--metrics-bind-address=0",
		"--health-probe-bind-address=" + freeAddr(t), "--watch-namespaces=" + ns}, lease...)...)
	leader.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "kubeconfig"))
	logFile, err := os.Create(filepath.Join(dir, "leader.log"))
	require.NoError(t, err)
	leader.Stdout, leader.Stderr = logFile, logFile
	require.NoError(t, leader.Start())
	defer func() { _ = leader.Process.Kill(); _ = leader.Wait() }()

	holder := func() string {
		l := &coordinationv1.Lease{}
		if env.Client.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: id}, l) != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	wait.For(t, 30*time.Second, "no leader", func() bool { return holder() != "" })
	first := holder()

	standby, err := newManager(env.Config, options{metricsAddr: "0", probeAddr: freeAddr(t), enableLeaderElection: true,
		leaderElectionID: id, leaderElectionNS: leaseNS, leaseDuration: 4 * time.Second, renewDeadline: 3 * time.Second,
		retryPeriod: 500 * time.Millisecond, reconcileInterval: time.Minute, progressInterval: time.Second, watchNamespaces: ns})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- standby.Start(ctx) }()
	defer func() { cancel(); <-done }()

	reconciled := func(name string) bool {
		d := &flinkv1beta1.FlinkDeployment{}
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d) == nil && d.Status.LifecycleState != ""
	}
	create := func(name string) {
		require.NoError(t, env.Client.Create(ctx, &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: flinkv1beta1.FlinkDeploymentSpec{Image: "flink:1.20", FlinkVersion: flinkv1beta1.FlinkVersion1_20,
				Job: &flinkv1beta1.JobSpec{JarURI: "local:///x.jar", UpgradeMode: flinkv1beta1.UpgradeModeSavepoint}}}))
	}
	create("before")
	wait.For(t, 30*time.Second, "the leader reconciles", func() bool { return reconciled("before") })
	require.Equal(t, first, holder(), "the standby does not take the lease from a live leader")

	require.NoError(t, leader.Process.Signal(syscall.SIGKILL))
	_ = leader.Wait()
	create("after")
	wait.For(t, 30*time.Second, "the standby took over and reconciles", func() bool { return reconciled("after") })
	require.NotEqual(t, first, holder())
}

// TestDynamicConfiguration: the operator ConfigMap's watched namespaces and reconcile interval
// change while it runs, and both take effect without a restart of the process.
func TestDynamicConfiguration(t *testing.T) {
	env := testEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opNS, nsA, nsB := env.NewNamespace(t, "flink-operator-system"), env.NewNamespace(t, "ns-a"), env.NewNamespace(t, "ns-b")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: opNS, Name: "flink-operator-config"},
		Data: map[string]string{"config.yaml": "kubernetes.operator.watched.namespaces: " + nsA + "\nkubernetes.operator.reconcile.interval: 1 h\n"}}
	require.NoError(t, env.Client.Create(ctx, cm))

	o := options{metricsAddr: freeAddr(t), probeAddr: freeAddr(t), configMap: cm.Name, configMapNamespace: opNS,
		reconcileInterval: time.Minute, progressInterval: time.Second, restTimeout: time.Second}
	done := make(chan error, 1)
	go func() { done <- run(ctx, env.Config, o, map[string]bool{}) }()
	defer func() { cancel(); <-done }()

	invalid := func(ns string) *flinkv1beta1.FlinkDeployment {
		return &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"},
			Spec: flinkv1beta1.FlinkDeploymentSpec{Image: "flink:1.20", FlinkVersion: flinkv1beta1.FlinkVersion1_20,
				Job: &flinkv1beta1.JobSpec{JarURI: "local:///x.jar", UpgradeMode: flinkv1beta1.UpgradeModeSavepoint}}}
	}
	reconciled := func(ns string) bool {
		d := &flinkv1beta1.FlinkDeployment{}
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, d) == nil && d.Status.LifecycleState != ""
	}
	reconciles := func() float64 {
		resp, err := http.Get("http://" + o.metricsAddr + "/metrics")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		total := 0.0
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, `controller_runtime_reconcile_total{controller="flinkdeployment"`) {
				var v float64
				_, _ = fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v)
				total += v
			}
		}
		return total
	}
	require.NoError(t, env.Client.Create(ctx, invalid(nsA)))
	require.NoError(t, env.Client.Create(ctx, invalid(nsB)))
	wait.For(t, 30*time.Second, "the awaited condition", func() bool { return reconciled(nsA) })
	wait.Never(t, 2*time.Second, "ns-b was reconciled while not watched", func() bool { return reconciled(nsB) })
	before := reconciles()
	wait.Never(t, 2*time.Second, "with a 1 h interval a failed resource was looked at again", func() bool {
		return math.Abs(reconciles()-before) > 1
	})

	cm.Data["config.yaml"] = "kubernetes.operator.watched.namespaces: " + nsA + "," + nsB + "\nkubernetes.operator.reconcile.interval: 1 s\n"
	require.NoError(t, env.Client.Update(ctx, cm))
	wait.For(t, 30*time.Second, "ns-b is watched after the change", func() bool { return reconciled(nsB) })
	// At least 3 reconciles within some 2 s: the count is sampled every poll, and each sample
	// is compared with the newest one taken at least 2 s before it (a sliding window, where the
	// test used to sleep 2 s between two samples).
	type sample struct {
		at    time.Time
		count float64
	}
	var samples []sample
	wait.For(t, 20*time.Second, "the 1 s reconcile interval to apply (3 reconciles within 2 s)", func() bool {
		now := sample{time.Now(), reconciles()}
		if now.count < 0 { // the metrics endpoint did not answer: no sample
			return false
		}
		samples = append(samples, now)
		for i := len(samples) - 1; i >= 0; i-- {
			if now.at.Sub(samples[i].at) >= 2*time.Second {
				samples = samples[i:] // older ones are never the newest 2 s before a later sample
				return now.count-samples[0].count >= 3
			}
		}
		return false
	})
}
