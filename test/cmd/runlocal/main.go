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
	"github.com/flink-operator/flink-operator/test/nodeagent"
	"github.com/flink-operator/flink-operator/test/s3store"
)

func main() {
	dir := flag.String("dir", ".dev/local", "Where the cluster keeps its state, logs and kubeconfig (emptied at start).")
	sample := flag.String("sample", "", "FlinkDeployment to apply (default: the storage's example); \"none\" applies none.")
	namespace := flag.String("namespace", "default", "Namespace of the sample.")
	verbose := flag.Bool("v", false, "Print the node agent's and cluster's progress lines.")
	storage := flag.String("storage", storageVolume, "Where the sample keeps checkpoints, savepoints and HA data: "+storageVolume+
		" (a hostPath volume, examples/checkpoint-ha) or "+storageS3+" (an S3-compatible store on "+s3Address+", examples/checkpoint-s3).")
	flag.Parse()
	if *storage != storageVolume && *storage != storageS3 {
		fmt.Fprintf(os.Stderr, "run-local: -storage %q: want %s or %s\n", *storage, storageVolume, storageS3)
		os.Exit(2)
	}
	switch *sample {
	case "":
		*sample = samples[*storage]
	case "none":
		*sample = ""
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dir, *sample, *namespace, *storage, *verbose); err != nil {
		fmt.Fprintf(os.Stderr, "run-local: %v\n", err)
		os.Exit(1)
	}
}

// The storages run-local offers and the example each applies.
const (
	storageVolume = "volume"
	storageS3     = "s3"
	// s3Address is where the S3-compatible store listens: the address examples/checkpoint-s3 names.
	s3Address = "127.0.0.1:8333"
	// s3Bucket is the bucket examples/checkpoint-s3 keeps its state in.
	s3Bucket = "flink-state"
)

var samples = map[string]string{
	storageVolume: "examples/checkpoint-ha/checkpoint-ha.yaml",
	storageS3:     "examples/checkpoint-s3/checkpoint-s3.yaml",
}

func run(ctx context.Context, dir, sample, namespace, storage string, verbose bool) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	var log io.Writer
	if verbose {
		log = os.Stdout
	}
	start := time.Now()
	opts := envOptions(dir, log)
	if storage == storageS3 {
		store, err := s3store.Start(s3Address, s3Bucket)
		if err != nil {
			return fmt.Errorf("%w (-storage s3 needs that address free)", err)
		}
		defer store.Close()
		// The Flink image's S3 plugin, which the example enables (make flink-opt).
		opts.FlinkImages = map[string]nodeagent.FlinkImage{"flink:": {Dirs: map[string]string{"/opt/flink/opt": flinkOptDir}}}
		fmt.Printf("run-local: S3-compatible store on %s, bucket %s (list it: curl -s '%s/%s?list-type=2')\n",
			store.Endpoint, s3Bucket, store.Endpoint, s3Bucket)
	}
	fmt.Println("run-local: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the node agent and the operator")
	env, err := localenv.Start(ctx, opts)
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

// envOptions are what make run-local runs: the local cluster, the node agent, and the operator
// as installed, its admission webhooks on (called by the API server on a loopback URL).
func envOptions(dir string, log io.Writer) localenv.Options {
	return localenv.Options{Dir: dir, Operator: true, Log: log}
}

// flinkOptDir holds what the Flink image has in /opt/flink/opt and the local distribution lacks
// (make flink-opt).
const flinkOptDir = "bin/flink-opt/1.20.3"

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
