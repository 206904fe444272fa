package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/controllers"
	"github.com/flink-operator/flink-operator/test/kubeenv"
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
	env := kubeenv.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const leaseNS = "flink-operator-system"
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}}))

	o := options{
		metricsAddr:          freeAddr(t),
		probeAddr:            freeAddr(t),
		enableLeaderElection: true,
		leaderElectionID:     "flink-operator-test",
		leaderElectionNS:     leaseNS,
		watchNamespaces:      "team-a,team-b",
		enableWebhooks:       false,
		restURLTemplate:      controllers.DefaultRESTURLTemplate,
		reconcileInterval:    time.Minute,
		progressInterval:     10 * time.Second,
	}
	mgr, err := newManager(env.Config, o)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()

	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	require.Eventually(t, func() bool {
		code, _ := get("http://" + o.probeAddr + "/readyz")
		return code == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "readyz never became ready")
	code, body := get("http://" + o.probeAddr + "/healthz")
	assert.Equal(t, http.StatusOK, code, body)

	require.Eventually(t, func() bool {
		lease := &coordinationv1.Lease{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: o.leaderElectionID}, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	}, 30*time.Second, 100*time.Millisecond, "the manager never took the leader Lease")

	code, body = get("http://" + o.metricsAddr + "/metrics")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "leader_election_master_status")

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
