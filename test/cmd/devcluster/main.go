// Command devcluster starts a local control plane (etcd + kube-apiserver, built by
// `make envtest-assets`) with the project's CRDs installed, writes an admin kubeconfig,
// and runs until interrupted. `make run` uses it when no cluster is reachable, so a
// newcomer can try the operator on one machine. Development tool only.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/flink-operator/flink-operator/test/kubeenv"
)

func main() {
	kubeconfig := flag.String("write-kubeconfig", ".dev/kubeconfig", "Where to write the admin kubeconfig.")
	flag.Parse()
	if err := run(*kubeconfig); err != nil {
		fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
		os.Exit(1)
	}
}

func run(kubeconfigPath string) error {
	root, err := kubeenv.RepoRoot()
	if err != nil {
		return err
	}
	te := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := te.Start(); err != nil {
		return fmt.Errorf("start control plane (run `make envtest-assets` and set KUBEBUILDER_ASSETS): %w", err)
	}
	defer func() { _ = te.Stop() }()

	admin, err := te.AddUser(envtest.User{Name: "dev-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("add admin user: %w", err)
	}
	cfg, err := admin.KubeConfig()
	if err != nil {
		return fmt.Errorf("render kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(kubeconfigPath), 0o755); err != nil {
		return err
	}
	tmp := kubeconfigPath + ".tmp"
	if err := os.WriteFile(tmp, cfg, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, kubeconfigPath); err != nil { // atomic: readers never see half a file
		return err
	}
	defer os.Remove(kubeconfigPath)
	fmt.Printf("control plane ready; export KUBECONFIG=%s\n", kubeconfigPath)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	fmt.Println("stopping control plane")
	return nil
}
