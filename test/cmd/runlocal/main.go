// Command runlocal is `make run-local`: it starts a local cluster with real Flink (control
// plane, node agent, operator), applies a sample FlinkDeployment, waits until it is Ready and
// prints what to try next. Ctrl-C stops everything. Development tool only.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/localenv"
)

func main() {
	dir := flag.String("dir", ".dev/local", "Where the cluster keeps its state, logs and kubeconfig (emptied at start).")
	sample := flag.String("sample", "examples/checkpoint-ha/checkpoint-ha.yaml", "FlinkDeployment to apply; empty applies none.")
	namespace := flag.String("namespace", "default", "Namespace of the sample.")
	verbose := flag.Bool("v", false, "Print the node agent's and cluster's progress lines.")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dir, *sample, *namespace, *verbose); err != nil {
		fmt.Fprintf(os.Stderr, "run-local: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir, sample, namespace string, verbose bool) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	var log io.Writer
	if verbose {
		log = os.Stdout
	}
	start := time.Now()
	fmt.Println("run-local: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the node agent and the operator")
	env, err := startEnv(ctx, dir, log)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("run-local: stopping (Flink processes, operator, control plane)")
		env.Stop()
	}()
	kubeconfig := env.Cluster.Kubeconfig
	fmt.Printf("run-local: cluster up in %s\n  export KUBECONFIG=%s\n  operator log: %s\n  pod logs: %s\n",
		time.Since(start).Round(time.Second), kubeconfig, env.OperatorLog(), filepath.Join(env.Dir, "node", "pods"))
	if err := env.Namespace(ctx, namespace); err != nil {
		return err
	}
	if sample != "" {
		dep, err := apply(ctx, env.Client, sample, namespace)
		if err != nil {
			return err
		}
		if err := waitReady(ctx, env.Client, dep); err != nil {
			return err
		}
		fmt.Printf(`
run-local: %[1]s is Ready, its job RUNNING (%[2]s after start). Try:
  export KUBECONFIG=%[3]s
  kubectl get flinkdeployments,pods
  kubectl logs deploy/%[1]s --tail=20 -f                         # the JobManager's log (the node agent serves kubelet's API)
  kubectl exec deploy/%[1]s -- ls /opt/flink/log                 # a command in the JobManager's container
  kubectl patch flinkdeployment/%[1]s --type=merge -p '{"spec":{"job":{"parallelism":2}}}'           # rescale: a savepoint upgrade
  kubectl patch flinkdeployment/%[1]s --type=merge -p '{"spec":{"job":{"savepointTriggerNonce":1}}}'   # manual savepoint
  kubectl get flinkstatesnapshots                                # ... as a FlinkStateSnapshot
  kubectl patch flinkdeployment/%[1]s --type=merge -p '{"spec":{"job":{"state":"suspended"}}}'         # suspend
  kubectl patch flinkdeployment/%[1]s --type=merge -p '{"spec":{"job":{"state":"running"}}}'           # resume
  kubectl wait --for=condition=Ready flinkdeployment/%[1]s --timeout=5m
Ctrl-C stops everything.
`, dep.Name, time.Since(start).Round(time.Second), kubeconfig)
	}
	<-ctx.Done()
	return nil
}

// startEnv starts what make run-local runs: the local cluster, the node agent, and the operator
// as installed, its admission webhooks on (called by the API server on a loopback URL).
func startEnv(ctx context.Context, dir string, log io.Writer) (*localenv.Env, error) {
	return localenv.Start(ctx, localenv.Options{Dir: dir, Operator: true, Log: log})
}

func apply(ctx context.Context, c client.Client, path, namespace string) (*flinkv1beta1.FlinkDeployment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dep := &flinkv1beta1.FlinkDeployment{}
	if err := yaml.UnmarshalStrict(data, dep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dep.Namespace = namespace
	if err := c.Create(ctx, dep); err != nil {
		return nil, fmt.Errorf("create %s: %w", dep.Name, err)
	}
	fmt.Printf("run-local: applied %s (FlinkDeployment %s/%s)\n", path, namespace, dep.Name)
	return dep, nil
}

func waitReady(ctx context.Context, c client.Client, dep *flinkv1beta1.FlinkDeployment) error {
	last := ""
	for {
		cur := &flinkv1beta1.FlinkDeployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), cur); err != nil {
			return err
		}
		st := cur.Status
		line := fmt.Sprintf("lifecycle=%s jobManager=%s job=%s", st.LifecycleState, st.JobManagerDeploymentStatus, st.JobStatus.State)
		if line != last {
			fmt.Println("run-local:   " + line)
			last = line
		}
		if meta.IsStatusConditionTrue(st.Conditions, "Ready") && st.JobStatus.State == flinkv1beta1.JobStatusRunning {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
