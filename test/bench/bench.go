// Package bench measures how fast the operator turns many new FlinkDeployments into JobManager
// Deployments, and what that costs, on a local control plane without Flink.
// It starts kube-apiserver and etcd (package kubeenv), runs the operator binary as a separate
// process under a user of its own, creates N FlinkDeployments at once, and compares the time
// with the limit: the same N JobManager Deployments created straight through the API server by
// a plain client at the same concurrency. `make bench` runs it through test/cmd/bench.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/localcluster"
)

// Options size the run.
type Options struct {
	// N is the number of FlinkDeployments (and of Deployments in the limit run).
	N int
	// Concurrency is the number of client goroutines creating them.
	Concurrency int
	// Steady is the window after the operator settled in which its requests are counted.
	Steady time.Duration
	// Settle bounds the wait, after the last JobManager Deployment appeared, for the operator's
	// requests to stop (status writes of the last reconciles).
	Settle time.Duration
	// Dir holds the operator binary, its kubeconfig and log.
	Dir string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Unrelated, when positive, is how many Pods and as many ConfigMaps that are not Flink's are
	// created in another namespace to compare the operator's memory after a restart without
	// and with them.
	Unrelated int
	// OperatorArgs are passed to the operator after the bench's own flags (e.g.
	// --reconcile-parallelism=50), to measure its settings.
	OperatorArgs []string
	// SkipLimits leaves out both limit runs (a long run whose limits were measured before).
	SkipLimits bool
	// Running, when set, backs every JobManager with a fake Flink REST server, so the jobs run
	// (running.go); nil measures without Flink.
	Running *RunningOptions
}

// Requests counts the operator's API requests in one phase, from its own client-go metric
// rest_client_requests_total (by HTTP method): writes are POST, PUT, PATCH and DELETE; reads
// are GET, which includes the LIST and WATCH requests of its informers. Failed are those the
// API server answered with a 4xx or 5xx code (a 404 GET of an object about to be created, a
// 409 conflict), each one a round trip the API server served for nothing.
type Requests struct {
	Writes int `json:"writes"`
	Reads  int `json:"reads"`
	Failed int `json:"failed"`
}

// Phase is one timed creation of N objects.
type Phase struct {
	// AllExist is the time from the first create request until the last Deployment was seen.
	AllExist time.Duration `json:"allExistNanos"`
	// P50 and P99 are percentiles of each object's time from its create request returning
	// to its Deployment being seen by a watch.
	P50 time.Duration `json:"p50Nanos"`
	P99 time.Duration `json:"p99Nanos"`
}

// Result is what a run measured.
type Result struct {
	Date        time.Time `json:"date"`
	N           int       `json:"n"`
	Concurrency int       `json:"concurrency"`
	// Operator is the FlinkDeployment → JobManager Deployment run; Limit the plain client
	// creating the same JobManager Deployments; FullLimit the plain client doing every write the
	// operator does for each new FlinkDeployment, the FlinkDeployment's create included.
	Operator  Phase `json:"operator"`
	Limit     Phase `json:"limit"`
	FullLimit Phase `json:"fullLimit"`
	// Responsiveness is the spec change made half-way through the operator run.
	Responsiveness Responsiveness `json:"responsiveness"`
	// Unrelated is the memory comparison with unrelated objects (Options.Unrelated).
	Unrelated *UnrelatedMemory `json:"unrelated,omitempty"`
	// RSSSteadyAnonMiB is the anonymous part of RSSSteadyMiB (the heap, stacks): the rest is
	// the binary's pages, shared and reclaimable.
	RSSSteadyAnonMiB float64 `json:"rssSteadyAnonMiB"`
	// Deployments is how many JobManager Deployments the operator created (must be N).
	Deployments int `json:"deployments"`
	// RSSPeakMiB is the operator's peak resident memory (VmHWM); RSSSteadyMiB its RSS at the
	// end of the steady window.
	RSSPeakMiB   float64 `json:"rssPeakMiB"`
	RSSSteadyMiB float64 `json:"rssSteadyMiB"`
	// CPUCreateSeconds is the operator's user+system CPU from the first create until it settled.
	CPUCreateSeconds float64 `json:"cpuCreateSeconds"`
	// CPUSteadySeconds is its CPU in the steady window.
	CPUSteadySeconds float64 `json:"cpuSteadySeconds"`
	// ControlPlaneCPUCreateSeconds and ControlPlaneCPULimitSeconds are the CPU of kube-apiserver
	// and etcd in the operator's create phase and in the limit run: with the operator's, they
	// say how much of the machine's two cores each phase used.
	ControlPlaneCPUCreateSeconds float64 `json:"controlPlaneCpuCreateSeconds"`
	ControlPlaneCPULimitSeconds  float64 `json:"controlPlaneCpuLimitSeconds"`
	// ControlPlaneCPUFullLimitSeconds is their CPU in the full limit run.
	ControlPlaneCPUFullLimitSeconds float64 `json:"controlPlaneCpuFullLimitSeconds"`
	// OperatorArgs are the operator flags the bench added.
	OperatorArgs []string `json:"operatorArgs,omitempty"`
	// Goroutines at the end of the create phase and of the steady window (go_goroutines).
	GoroutinesCreate int `json:"goroutinesCreate"`
	GoroutinesSteady int `json:"goroutinesSteady"`
	// Create counts the operator's requests from the first create until it settled; Steady
	// those in the steady window.
	Create       Requests      `json:"create"`
	Steady       Requests      `json:"steady"`
	SteadyWindow time.Duration `json:"steadyWindowNanos"`
	// FailedByRequest counts the failed requests of the create phase as the API server itself
	// recorded them (apiserver_request_total), by verb, resource and code: where Create.Failed
	// came from. Every client is counted (the bench's own requests succeed).
	FailedByRequest map[string]int `json:"failedByRequest,omitempty"`
	WritesPerNew    float64        `json:"writesPerNewResource"`
	ReadsPerNew     float64        `json:"readsPerNewResource"`
	SettledWithin   time.Duration  `json:"settledWithinNanos"`
	// HeapProfile is the operator's heap profile at the end of the steady window (go tool pprof
	// -sample_index=inuse_space reads where the bytes are).
	HeapProfile string `json:"heapProfile,omitempty"`
	// Running is what the running mode measured (nil without it).
	Running *RunningResult `json:"running,omitempty"`
}

const (
	operatorUser = "flink-operator-bench"
	benchNS      = "bench"
	limitNS      = "bench-limit"
	operatorNS   = "flink-operator-system"
)

// Run starts a control plane and the operator, measures, and stops everything.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.N <= 0 || o.Concurrency <= 0 {
		return nil, fmt.Errorf("bench options: N (%d) and Concurrency (%d) must be positive", o.N, o.Concurrency)
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "bench: "+format+"\n", args...)
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "manager")
	if err := kubeenv.BuildOperator(ctx, bin); err != nil {
		return nil, err
	}
	logf("operator built; starting kube-apiserver and etcd")
	// Every FlinkDeployment gets a ClusterIP Service: the default /24 would run out at ~250.
	env, stop, err := kubeenv.StartMain(kubeenv.Options{ServiceCIDR: "10.96.0.0/16"})
	if err != nil {
		return nil, err
	}
	defer stop()

	// The bench's own client must not be throttled client-side: the limit is the API server's.
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1e6, 1e6
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return nil, err
	}
	for _, ns := range []string{benchNS, limitNS, operatorNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
	}

	// The client learns both kinds' REST mappings now (discovery), not inside the timed phases.
	if err := c.List(ctx, &flinkv1beta1.FlinkDeploymentList{}, client.InNamespace(benchNS)); err != nil {
		return nil, err
	}
	if err := c.List(ctx, &appsv1.DeploymentList{}, client.InNamespace(limitNS)); err != nil {
		return nil, err
	}

	var rm *running
	operatorArgs := o.OperatorArgs
	if o.Running != nil {
		if rm, err = startRunning(ctx, cfg, env.Scheme, c, o.N, *o.Running, logf); err != nil {
			return nil, err
		}
		defer rm.stop()
		operatorArgs = append(rm.operatorArgs(), operatorArgs...)
	}
	op, err := startOperator(ctx, env, bin, dir, operatorArgs...)
	if err != nil {
		return nil, err
	}
	defer op.stop()
	logf("operator ready (pid %d); creating %d FlinkDeployments with %d goroutines", op.cmd.Process.Pid, o.N, o.Concurrency)

	res := &Result{Date: time.Now().UTC(), N: o.N, Concurrency: o.Concurrency, OperatorArgs: o.OperatorArgs}
	before, err := op.scrape()
	if err != nil {
		return nil, err
	}
	apiBefore, err := scrapeAPIServer(ctx, env)
	if err != nil {
		return nil, err
	}
	cpu0, err := cpuSeconds(op.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	cp0, err := controlPlaneCPU()
	if err != nil {
		return nil, err
	}
	if _, err := flinkDeployment(0); err != nil {
		return nil, err
	}
	object := func(i int) client.Object {
		fd, _ := flinkDeployment(i) // checked above: the same YAML every time
		return fd
	}
	if rm != nil {
		object = rm.flinkDeployment
	}
	createStart := time.Now()
	// Half-way through, one resource already deployed gets a spec change: the operator must act
	// on it while the others are still being deployed (not in the running mode, whose upgrades
	// are measured on their own).
	var probe sync.WaitGroup
	var probeErr error
	var probeOnce sync.Once
	phase, template, err := timeCreation(ctx, cfg, benchNS, o, func(ctx context.Context, i int) (string, time.Time, error) {
		obj := object(i)
		err := c.Create(ctx, obj)
		return obj.GetName(), time.Now(), err
	}, isJobManager, func(seen int, last string) {
		if seen < o.N/2 || o.N < 4 || rm != nil {
			return
		}
		probeOnce.Do(func() {
			probe.Add(1)
			go func() {
				defer probe.Done()
				res.Responsiveness, probeErr = probeSpecChange(ctx, c, last, seen, time.Minute)
			}()
		})
	})
	if err != nil {
		return nil, fmt.Errorf("operator run (log %s): %w", op.log, err)
	}
	probe.Wait()
	if probeErr != nil {
		return nil, fmt.Errorf("spec change during the run: %w", probeErr)
	}
	res.Operator = phase
	// Counted again from the API server, not from the watch that timed them.
	var deployments appsv1.DeploymentList
	if err := c.List(ctx, &deployments, client.InNamespace(benchNS)); err != nil {
		return nil, err
	}
	for i := range deployments.Items {
		if _, ok := isJobManager(&deployments.Items[i]); ok {
			res.Deployments++
		}
	}
	afterCreate, err := op.scrape()
	if err != nil {
		return nil, err
	}
	res.GoroutinesCreate = int(afterCreate.gauge("go_goroutines"))
	logf("all %d JobManager Deployments exist after %s; waiting for the operator to settle", o.N, phase.AllExist.Round(time.Millisecond))
	if rm != nil {
		if err := rm.waitRunning(ctx, createStart); err != nil {
			return nil, fmt.Errorf("running mode (operator log %s): %w", op.log, err)
		}
		logf("all %d jobs RUNNING after %s", o.N, rm.result.AllRunning.Round(time.Millisecond))
	}

	settleStart := time.Now()
	settled, err := op.waitQuiet(ctx, 5*time.Second, o.Settle)
	if err != nil {
		return nil, err
	}
	res.SettledWithin = time.Since(settleStart)
	cpu1, err := cpuSeconds(op.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	res.CPUCreateSeconds = cpu1 - cpu0
	cp1, err := controlPlaneCPU()
	if err != nil {
		return nil, err
	}
	res.ControlPlaneCPUCreateSeconds = cp1 - cp0
	res.Create = settled.requests().minus(before.requests())
	if res.FailedByRequest, err = failedSince(ctx, env, apiBefore); err != nil {
		return nil, err
	}
	res.WritesPerNew = float64(res.Create.Writes) / float64(o.N)
	res.ReadsPerNew = float64(res.Create.Reads) / float64(o.N)

	logf("settled; steady window of %s", o.Steady)
	if rm != nil {
		rm.steadyStart()
	}
	select {
	case <-time.After(o.Steady):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res.SteadyWindow = o.Steady
	end, err := op.scrape()
	if err != nil {
		return nil, err
	}
	cpu2, err := cpuSeconds(op.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	res.CPUSteadySeconds = cpu2 - cpu1
	res.Steady = end.requests().minus(settled.requests())
	res.GoroutinesSteady = int(end.gauge("go_goroutines"))
	mem, err := memory(op.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	res.RSSPeakMiB, res.RSSSteadyMiB, res.RSSSteadyAnonMiB = mem.peakMiB, mem.rssMiB, mem.anonMiB
	res.HeapProfile = filepath.Join(dir, "heap-steady.pb.gz")
	if err := op.saveHeapProfile(ctx, res.HeapProfile); err != nil {
		return nil, err
	}
	if rm != nil {
		rm.steadyEnd(o.Steady, res.CPUSteadySeconds)
		logf("%d savepoint upgrades at once", o.Running.Upgrades)
		if err := rm.upgrade(ctx, op, o); err != nil {
			return nil, fmt.Errorf("running mode (operator log %s): %w", op.log, err)
		}
		res.Running = rm.result
		rm.stop()
	}
	op.stop()

	if o.Unrelated > 0 {
		if err := measureUnrelated(ctx, c, env, bin, dir, o, res, logf); err != nil {
			return nil, err
		}
	}
	if o.SkipLimits {
		return res, nil
	}
	// The limits run without the operator, so the API server serves only the plain client.
	sample, err := readSample(ctx, c, "fd-00000")
	if err != nil {
		return nil, fmt.Errorf("sample cluster: %w", err)
	}
	if err := runLimits(ctx, c, cfg, o, template, sample, res, logf); err != nil {
		return nil, err
	}
	return res, nil
}

// isJobManager says whether d is the JobManager Deployment of a FlinkDeployment, and of which:
// the one named after the FlinkDeployment that controls it.
func isJobManager(d *appsv1.Deployment) (string, bool) {
	for _, ref := range d.OwnerReferences {
		if ref.Kind == "FlinkDeployment" && ref.Controller != nil && *ref.Controller {
			return ref.Name, d.Name == ref.Name
		}
	}
	return "", false
}

// timeCreation runs work for N objects with o.Concurrency goroutines and waits until a
// Deployment for each was seen by a watch of namespace ns; work returns the object's name and
// when it was created (its create request returned), key maps a Deployment to the name of the
// object it is for (false: not one of them), and progress, when set, is told of each new one
// seen. It returns the timings and one of the Deployments seen.
func timeCreation(ctx context.Context, cfg *rest.Config, ns string, o Options,
	work func(ctx context.Context, i int) (string, time.Time, error), key func(*appsv1.Deployment) (string, bool),
	progress func(seen int, last string)) (Phase, *appsv1.Deployment, error) {
	// An informer rather than a bare watch: the API server closes a watch that falls behind a
	// burst of creates, and the informer lists again and reports what it missed.
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Phase{}, nil, err
	}
	type sighting struct {
		d  *appsv1.Deployment
		at time.Time
	}
	sightings := make(chan sighting, o.N+1)
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	informer := factory.Apps().V1().Deployments().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if d, ok := obj.(*appsv1.Deployment); ok {
			select {
			case sightings <- sighting{d: d, at: time.Now()}:
			default: // more Deployments than expected: the count is already complete
			}
		}
	}}); err != nil {
		return Phase{}, nil, err
	}
	stopInformer := make(chan struct{})
	defer func() { close(stopInformer); factory.Shutdown() }()
	factory.Start(stopInformer)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return Phase{}, nil, errors.New("deployment informer did not sync")
	}

	var mu sync.Mutex
	created := make(map[string]time.Time, o.N)
	seen := make(map[string]time.Time, o.N)
	var sample *appsv1.Deployment
	start := time.Now()
	jobs := make(chan int)
	errs := make(chan error, o.Concurrency)
	var wg sync.WaitGroup
	for range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				name, at, err := work(ctx, i)
				if err != nil {
					errs <- fmt.Errorf("object %d: %w", i, err)
					return
				}
				mu.Lock()
				created[name] = at
				mu.Unlock()
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range o.N {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	// The deadline is generous: a stuck operator fails the run rather than hanging it.
	deadline := time.After(time.Duration(o.N)*200*time.Millisecond + 2*time.Minute)
	for len(seen) < o.N {
		select {
		case s := <-sightings:
			if name, ok := key(s.d); ok {
				if _, dup := seen[name]; !dup {
					seen[name] = s.at
					sample = s.d
					if progress != nil {
						progress(len(seen), name)
					}
				}
			}
		case err := <-errs:
			return Phase{}, nil, err
		case <-deadline:
			return Phase{}, nil, fmt.Errorf("%d of %d Deployments after the deadline", len(seen), o.N)
		case <-ctx.Done():
			return Phase{}, nil, ctx.Err()
		}
	}
	allExist := time.Since(start)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	lat := make([]time.Duration, 0, o.N)
	for name, t := range seen {
		c, ok := created[name]
		if !ok || t.Before(c) {
			// The watch can report the Deployment before the create call returned to its
			// goroutine (the limit run): that object took no longer than its request.
			lat = append(lat, 0)
			continue
		}
		lat = append(lat, t.Sub(c))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return Phase{AllExist: allExist, P50: percentile(lat, 50), P99: percentile(lat, 99)}, sample, nil
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(i, 0)]
}

// flinkDeploymentYAML is a small application FlinkDeployment, as examples/basic.
const flinkDeploymentYAML = `
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
spec:
  image: flink:1.20
  flinkVersion: v1_20
  flinkConfiguration:
    taskmanager.numberOfTaskSlots: "2"
  serviceAccount: flink
  jobManager:
    resource: {memory: 1024m, cpu: 0.5}
  taskManager:
    resource: {memory: 1024m, cpu: 0.5}
  job:
    jarURI: local:///opt/flink/examples/streaming/TopSpeedWindowing.jar
    parallelism: 2
    upgradeMode: stateless
`

func flinkDeployment(i int) (*flinkv1beta1.FlinkDeployment, error) {
	fd := &flinkv1beta1.FlinkDeployment{}
	if err := yaml.Unmarshal([]byte(flinkDeploymentYAML), fd); err != nil {
		return nil, fmt.Errorf("bench FlinkDeployment: %w", err)
	}
	fd.Name, fd.Namespace = fmt.Sprintf("fd-%05d", i), benchNS
	return fd, nil
}

// limitDeployment is a copy of a JobManager Deployment the operator created, under a new name in
// the limit namespace, without what ties it to its FlinkDeployment.
func limitDeployment(template *appsv1.Deployment, i int) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("jm-%05d", i), Namespace: limitNS,
			Labels: template.Labels, Annotations: template.Annotations},
		Spec: *template.Spec.DeepCopy(),
	}
	return d
}

// operator is the running operator process.
type operator struct {
	cmd     *exec.Cmd
	done    chan struct{}
	metrics string
	// pprof is the operator's /debug/pprof base URL (--pprof-bind-address on loopback).
	pprof string
	log   string
}

// saveHeapProfile writes the operator's heap profile, taken after a garbage collection so that
// it shows what is live, to path.
func (op *operator) saveHeapProfile(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, op.pprof+"/heap?gc=1", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}

func startOperator(ctx context.Context, env *kubeenv.Env, bin, dir string, extraArgs ...string) (*operator, error) {
	// Its own user, so its requests are its own; system:masters, as RBAC is not what is measured.
	user, err := env.Environment.ControlPlane.AddUser(envtest.User{Name: operatorUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("operator user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "operator.kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return nil, err
	}
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	probe := "127.0.0.1:" + strconv.Itoa(ports[1])
	pprof := "127.0.0.1:" + strconv.Itoa(ports[2])
	logPath := filepath.Join(dir, "operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--enable-webhooks=false", "--leader-elect=false",
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(ports[0]), "--health-probe-bind-address=" + probe,
		"--pprof-bind-address=" + pprof}, extraArgs...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+operatorNS)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start operator: %w", err)
	}
	op := &operator{cmd: cmd, done: make(chan struct{}), log: logPath,
		metrics: "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/metrics", pprof: "http://" + pprof + "/debug/pprof"}
	go func() { _ = cmd.Wait(); logFile.Close(); close(op.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + probe + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return op, nil
			}
		}
		select {
		case <-op.done:
			return nil, fmt.Errorf("operator exited; log: %s", logPath)
		case <-ctx.Done():
			op.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	op.stop()
	return nil, fmt.Errorf("operator not ready after 60s; log: %s", logPath)
}

// stop ends the operator (SIGTERM, then SIGKILL after 10 s); it may be called more than once.
func (op *operator) stop() {
	select {
	case <-op.done:
		return
	default:
	}
	_ = syscall.Kill(-op.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-op.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-op.cmd.Process.Pid, syscall.SIGKILL)
		<-op.done
	}
}

// waitQuiet waits until the operator's request count has not moved for quiet, at most limit,
// and returns the metrics at that point.
func (op *operator) waitQuiet(ctx context.Context, quiet, limit time.Duration) (metrics, error) {
	last, err := op.scrape()
	if err != nil {
		return nil, err
	}
	lastChange := time.Now()
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		m, err := op.scrape()
		if err != nil {
			return nil, err
		}
		if m.requests() != last.requests() {
			last, lastChange = m, time.Now()
		} else if time.Since(lastChange) >= quiet {
			return m, nil
		}
	}
	return last, nil
}

// metrics are the samples of a Prometheus text exposition, by series (name and labels).
type metrics map[string]float64

func (op *operator) scrape() (metrics, error) {
	resp, err := http.Get(op.metrics)
	if err != nil {
		return nil, fmt.Errorf("scrape operator metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape operator metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads a Prometheus text exposition into samples by series.
func parseMetrics(r io.Reader) (metrics, error) {
	m := metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

func (m metrics) gauge(name string) float64 { return m[name] }

// requests sums rest_client_requests_total by method into writes and reads.
func (m metrics) requests() Requests {
	var r Requests
	for series, v := range m {
		if !strings.HasPrefix(series, "rest_client_requests_total{") {
			continue
		}
		if code := label(series, "code"); len(code) == 3 && code >= "400" {
			r.Failed += int(v)
		}
		switch {
		case strings.Contains(series, `method="GET"`):
			r.Reads += int(v)
		case strings.Contains(series, `method="POST"`), strings.Contains(series, `method="PUT"`),
			strings.Contains(series, `method="PATCH"`), strings.Contains(series, `method="DELETE"`):
			r.Writes += int(v)
		}
	}
	return r
}

func (r Requests) minus(o Requests) Requests {
	return Requests{Writes: r.Writes - o.Writes, Reads: r.Reads - o.Reads, Failed: r.Failed - o.Failed}
}

// label returns the value of one label of a series written as name{a="x",b="y"}.
func label(series, name string) string {
	i := strings.Index(series, name+`="`)
	if i < 0 || (i > 0 && series[i-1] != '{' && series[i-1] != ',') {
		return ""
	}
	rest := series[i+len(name)+2:]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// scrapeAPIServer reads the API server's own metrics with the bench's administrator client.
func scrapeAPIServer(ctx context.Context, env *kubeenv.Env) (metrics, error) {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape kube-apiserver metrics: %w", err)
	}
	return parseMetrics(bytes.NewReader(raw))
}

// failedSince returns the requests the API server answered with a 4xx or 5xx code since
// before, by "VERB resource[/subresource] code".
func failedSince(ctx context.Context, env *kubeenv.Env, before metrics) (map[string]int, error) {
	now, err := scrapeAPIServer(ctx, env)
	if err != nil {
		return nil, err
	}
	failed := map[string]int{}
	for series, v := range now {
		if !strings.HasPrefix(series, "apiserver_request_total{") {
			continue
		}
		code := label(series, "code")
		if len(code) != 3 || code < "400" {
			continue
		}
		if n := int(v - before[series]); n > 0 {
			resource := label(series, "resource")
			if sub := label(series, "subresource"); sub != "" {
				resource += "/" + sub
			}
			failed[label(series, "verb")+" "+resource+" "+code] += n
		}
	}
	return failed, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// cpuSeconds is the user+system CPU time of process pid (its threads included).
func cpuSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err := strconv.ParseFloat(fields[11], 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseFloat(fields[12], 64)
	if err != nil {
		return 0, err
	}
	return (utime + stime) / clockTicks, nil
}

type mem struct{ rssMiB, peakMiB, anonMiB float64 }

// memory reads VmRSS, VmHWM (peak RSS) and RssAnon of process pid.
func memory(pid int) (mem, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return mem{}, err
	}
	var m mem
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kib, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			m.rssMiB = kib / 1024
		case "VmHWM:":
			m.peakMiB = kib / 1024
		case "RssAnon:":
			m.anonMiB = kib / 1024
		}
	}
	return m, nil
}
