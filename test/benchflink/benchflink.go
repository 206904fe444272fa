// Package benchflink measures what the operator adds to Flink's own time in a job's life
// (`make bench-flink`): a few streaming jobs (the checkpoint-ha example: TopSpeedWindowing with
// Kubernetes HA and checkpoints) run on the local cluster with real Flink (package localenv),
// the operator built from this checkout with its default options. Each job is created, upgraded
// with a savepoint, upgraded with last-state, suspended and resumed; each flow's time is split
// into what Flink reports it spent (its REST API: job timestamps, checkpoint statistics) and
// the rest, the operator's and Kubernetes' overhead. Test and development only.
package benchflink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/localenv"
	"github.com/flink-operator/flink-operator/test/podnet"
)

// Example is the FlinkDeployment every job is made from, relative to the repository root:
// TopSpeedWindowing on Flink 1.20 with Kubernetes HA, checkpoints every 5 s and savepoint
// upgrades, state on a hostPath volume.
const Example = "examples/checkpoint-ha/checkpoint-ha.yaml"

// operatorDefaults describes the operator's options the flows wait on: its defaults, not set
// here (localenv adds only what running it on the local cluster needs: webhook, metrics and
// probe addresses, the JobManagers' pod IPs).
const operatorDefaults = "defaults (reconcile interval 60 s, progress check 10 s)"

// startTimeout bounds each wait of a flow. A flow's steps wait for the operator's progress
// checks (10 s) and, on two loaded cores, for JVMs that take tens of seconds to start.
const startTimeout = 5 * time.Minute

// Options configure a benchmark.
type Options struct {
	// Jobs run side by side in each run.
	Jobs int
	// Runs are made one after the other, each with new FlinkDeployments.
	Runs int
	// Dir holds the local cluster's state and logs (the operator's among them); emptied first.
	Dir string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// bench is a benchmark in progress.
type bench struct {
	env *localenv.Env
	log io.Writer
	// example is Example, parsed.
	example *flinkv1beta1.FlinkDeployment

	// timeline sees the clusters' Deployments and pods go through each flow's steps.
	timeline *timeline

	mu      sync.Mutex
	version string
}

// Run starts the local cluster and the operator (with no options but what localenv needs to run
// it there: the defaults are what is measured), runs the flows and returns their samples.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Jobs <= 0 || o.Runs <= 0 {
		return nil, fmt.Errorf("jobs (%d) and runs (%d) must be positive", o.Jobs, o.Runs)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	b := &bench{log: o.Log}
	root, err := kubeenv.RepoRoot()
	if err != nil {
		return nil, fmt.Errorf("repository root: %w", err)
	}
	if b.example, err = loadDeployment(filepath.Join(root, Example)); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(o.Dir); err != nil {
		return nil, fmt.Errorf("empty %s: %w", o.Dir, err)
	}
	start := time.Now()
	b.logf("starting the local cluster and the operator in %s (pods: %s)", o.Dir, podnet.Current())
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if b.env, err = localenv.Start(startCtx, localenv.Options{Dir: o.Dir, Operator: true, Pods: podnet.Current()}); err != nil {
		return nil, fmt.Errorf("local cluster: %w", err)
	}
	defer b.env.Stop()
	b.logf("up in %s; operator log %s", time.Since(start).Round(time.Millisecond), b.env.OperatorLog())
	if b.timeline, err = watchTimeline(b.env.Kube, "benchflink-"); err != nil {
		return nil, err
	}
	defer b.timeline.close()

	res := &Result{Jobs: o.Jobs, Runs: o.Runs, Started: start, Operator: operatorDefaults}
	for run := 1; run <= o.Runs; run++ {
		if err := b.run(ctx, run, o.Jobs, res); err != nil {
			return nil, fmt.Errorf("run %d (operator log %s): %w", run, b.env.OperatorLog(), err)
		}
	}
	res.FlinkVersion = b.version
	res.summarize()
	return res, nil
}

// run puts jobs FlinkDeployments of a namespace of their own through the flows side by side,
// then deletes them and waits until their pods are gone, so that runs do not overlap.
func (b *bench) run(ctx context.Context, run, jobs int, res *Result) error {
	ns := fmt.Sprintf("benchflink-%d", run)
	if err := b.env.Namespace(ctx, ns); err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	var mu sync.Mutex
	record := func(flow string, s Sample) {
		mu.Lock()
		defer mu.Unlock()
		res.add(flow, s)
	}
	g, gctx := errgroup.WithContext(ctx)
	keys := make([]client.ObjectKey, jobs)
	for i := range keys {
		// Names unique across runs: the operator derives job ids, and the example's shared
		// hostPath keys checkpoints and HA data by them.
		keys[i] = client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("run%d-job%d", run, i+1)}
		j := &job{b: b, key: keys[i], run: run}
		g.Go(func() error { return j.flows(gctx, record) })
	}
	flowsErr := g.Wait()
	return errors.Join(flowsErr, b.deleteAll(ctx, keys))
}

// deleteAll deletes the FlinkDeployments and waits until they and their pods are gone.
func (b *bench) deleteAll(ctx context.Context, keys []client.ObjectKey) error {
	for _, key := range keys {
		dep := &flinkv1beta1.FlinkDeployment{}
		dep.Namespace, dep.Name = key.Namespace, key.Name
		if err := b.env.Client.Delete(ctx, dep); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", key, err)
		}
	}
	for _, key := range keys {
		err := poll(ctx, startTimeout, key.Name+": deleted, no pods left", func() (bool, error) {
			if err := b.env.Client.Get(ctx, key, &flinkv1beta1.FlinkDeployment{}); !apierrors.IsNotFound(err) {
				return false, err
			}
			var pods corev1.PodList
			err := b.env.Client.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabels{native.LabelApp: key.Name})
			return err == nil && len(pods.Items) == 0, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// deployment is the example named key, its JobManager archiving ended jobs (archive.go).
func (b *bench) deployment(key client.ObjectKey) (*flinkv1beta1.FlinkDeployment, error) {
	dep := b.example.DeepCopy()
	dep.Namespace, dep.Name = key.Namespace, key.Name
	conf, err := dep.Spec.FlinkConfiguration.Flatten()
	if err != nil {
		return nil, fmt.Errorf("example's configuration: %w", err)
	}
	conf["jobmanager.archive.fs.dir"] = archiveConfDir
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
	return dep, nil
}

func loadDeployment(path string) (*flinkv1beta1.FlinkDeployment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read example: %w", err)
	}
	dep := &flinkv1beta1.FlinkDeployment{}
	if err := yaml.UnmarshalStrict(data, dep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return dep, nil
}

// noteVersion records the Flink version the first JobManager reports.
func (b *bench) noteVersion(ctx context.Context, jm *jobManager) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.version != "" {
		return
	}
	if c, err := jm.rest.Config(ctx); err == nil {
		b.version = c.FlinkVersion
	}
}

// waitOperator waits until the operator's status of the FlinkDeployment satisfies cond.
func (b *bench) waitOperator(ctx context.Context, key client.ObjectKey, what string, cond func(*flinkv1beta1.FlinkDeployment) bool) error {
	return poll(ctx, startTimeout, "the operator reports "+what, func() (bool, error) {
		d := &flinkv1beta1.FlinkDeployment{}
		if err := b.env.Client.Get(ctx, key, d); err != nil {
			return false, err
		}
		return cond(d), nil
	})
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, time.Now().Format("15:04:05.000")+" benchflink: "+format+"\n", args...)
}

// pollEvery is how often a wait asks again: well below the precision the flows are reported
// with (hundreds of milliseconds), and light on the API server and Flink.
const pollEvery = 100 * time.Millisecond

// poll calls cond every pollEvery until it returns true; after timeout it fails with what was
// awaited and cond's last error. cond's errors are not final: a JobManager starting or going
// away refuses connections for a while.
func poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
		case <-time.After(pollEvery):
		}
	}
}
