package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// The operator applied together with its CRDs starts before they are served: it waits, saying
// which kinds it waits for, and starts once the CRDs are installed, instead of failing on the
// first kind it cannot map (the container restarted, as upstream's e2e install showed).
func TestStartWaitsForTheCRDsToBeServed(t *testing.T) {
	env := kubeenv.Start(t, kubeenv.Options{CRDDirs: []string{"cmd/testdata/no-crds"}})
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	require.NoError(t, err)
	logs := make(chan string, 100)
	log := funcr.New(func(prefix, args string) { logs <- args }, funcr.Options{})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- waitForKinds(ctx, dc, flinkv1beta1.GroupVersion, servedKinds, 100*time.Millisecond, time.Hour, log)
	}()
	select {
	case msg := <-logs:
		assert.Contains(t, msg, "are the CRDs installed?")
		assert.Contains(t, msg, `"missing"=["FlinkDeployment" "FlinkSessionJob" "FlinkStateSnapshot"]`, "it names the kinds it waits for")
	case err := <-done:
		t.Fatalf("returned before any CRD was installed: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no log line while waiting")
	}

	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config", "crd", "bases")}, MaxTime: 3 * time.Minute})
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("still waiting after the CRDs were installed")
	}
}

func TestWaitForKindsEndsWithItsContext(t *testing.T) {
	env := kubeenv.Start(t, kubeenv.Options{CRDDirs: []string{"cmd/testdata/no-crds"}})
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err = waitForKinds(ctx, dc, flinkv1beta1.GroupVersion, servedKinds, 100*time.Millisecond, time.Hour, funcr.New(func(string, string) {}, funcr.Options{}))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
