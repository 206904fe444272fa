package bench

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// RunningOptions turn on the running mode: every JobManager is backed by
// the bench's fake Flink REST server, so each FlinkDeployment's job runs, and the bench
// measures what observing N running jobs costs and how fast simultaneous savepoint upgrades
// complete.
type RunningOptions struct {
	// Upgrades is how many resources get a new spec at once (savepoint upgrades), at most N.
	Upgrades int
	// ObserveInterval is the operator's --reconcile-interval: how often a settled resource
	// with a RUNNING job is observed. 0 keeps the operator's default (60 s).
	ObserveInterval time.Duration
	// ProgressCheck is the operator's --progress-check-interval: how often a resource in
	// motion (an upgrade waiting for its savepoint) is looked at. 0 keeps the default (10 s).
	ProgressCheck time.Duration
}

// RunningResult is what the running mode measured.
type RunningResult struct {
	// ObserveInterval is the operator's --reconcile-interval in the run (0: its default).
	ObserveInterval time.Duration `json:"observeIntervalNanos"`
	// ProgressCheck is its --progress-check-interval (0: its default).
	ProgressCheck time.Duration `json:"progressCheckIntervalNanos"`
	// AllRunning runs from the first create until every resource was STABLE with its job
	// RUNNING.
	AllRunning time.Duration `json:"allRunningNanos"`
	// SteadyCalls are the Flink REST calls to all clusters in the steady window, by route.
	SteadyCalls map[string]int `json:"steadyCalls"`
	// SteadyCallsPerJobPerInterval is the steady window's calls per job per observe interval
	// (calls / N / (window / interval)); SteadyCallsByRoute the same by route.
	SteadyCallsPerJobPerInterval float64            `json:"steadyCallsPerJobPerInterval"`
	SteadyCallsByRoute           map[string]float64 `json:"steadyCallsPerJobPerIntervalByRoute"`
	// SteadyCPUPercent is the operator's CPU in the steady window, in % of one core.
	SteadyCPUPercent float64 `json:"steadyCPUPercentOfOneCore"`
	// Upgrades were asked for at once; Upgraded completed (STABLE, DEPLOYED with the new spec,
	// the job RUNNING, started by the fake from the savepoint its stop produced).
	Upgrades int `json:"upgrades"`
	Upgraded int `json:"upgraded"`
	// UpgradeAll runs from the first spec change until the last upgrade completed; P50 and
	// P99 are of each resource's time from its spec change to its upgrade completed.
	UpgradeAll time.Duration `json:"upgradeAllNanos"`
	UpgradeP50 time.Duration `json:"upgradeP50Nanos"`
	UpgradeP99 time.Duration `json:"upgradeP99Nanos"`
	// UpgradeRequests are the operator's API requests from the first spec change until its
	// requests stopped (5 s quiet); per upgrade below. They include the periodic observation
	// of the resources not upgraded, which costs no requests in the steady state.
	UpgradeRequests  Requests `json:"upgradeRequests"`
	WritesPerUpgrade float64  `json:"writesPerUpgrade"`
	ReadsPerUpgrade  float64  `json:"readsPerUpgrade"`
	// UpgradeCalls are the REST calls to the upgraded clusters from the first spec change
	// until the last upgrade completed, by route.
	UpgradeCalls    map[string]int `json:"upgradeCalls"`
	CallsPerUpgrade float64        `json:"callsPerUpgrade"`
}

// runningFlinkDeploymentYAML is flinkDeploymentYAML with the savepoint upgrade mode and the
// checkpoint and savepoint directories it requires.
var runningFlinkDeploymentYAML = strings.NewReplacer(
	"upgradeMode: stateless", "upgradeMode: savepoint",
	"  flinkConfiguration:\n", "  flinkConfiguration:\n    state.checkpoints.dir: file:///flink/checkpoints\n    state.savepoints.dir: file:///flink/savepoints\n",
).Replace(flinkDeploymentYAML)

// running is the running mode's machinery around one bench run: the fake JobManagers, the
// stand-in for kubelet and garbage collector, and a watch of the FlinkDeployments.
type running struct {
	o       RunningOptions
	n       int
	c       client.Client
	fake    *jobManagers
	host    *clusterHost
	fds     crcache.Cache
	stopFDs context.CancelFunc
	result  *RunningResult
	logf    func(string, ...any)

	mu      sync.Mutex
	waiters []*waiter
	// allRunning waits, from the start, for every resource to run.
	allRunning *waiter
	stopped    bool
	// steady marks the start of the steady window.
	steadyCalls callCounts
}

// waiter records when each of a set of FlinkDeployments first satisfied a condition.
type waiter struct {
	cond func(*flinkv1beta1.FlinkDeployment) bool
	want map[string]bool
	done map[string]time.Time
	all  chan struct{}
}

// startRunning starts the fake JobManagers, the cluster host and the FlinkDeployment watch for
// N resources in namespace benchNS.
func startRunning(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, c client.Client, n int, o RunningOptions,
	logf func(string, ...any)) (*running, error) {
	if o.Upgrades <= 0 || o.Upgrades > n {
		return nil, fmt.Errorf("bench running mode: Upgrades (%d) must be between 1 and N (%d)", o.Upgrades, n)
	}
	if !strings.Contains(runningFlinkDeploymentYAML, "upgradeMode: savepoint") || !strings.Contains(runningFlinkDeploymentYAML, "state.savepoints.dir") {
		return nil, errors.New("bench running mode: the FlinkDeployment template lost its upgradeMode or flinkConfiguration")
	}
	r := &running{o: o, n: n, c: c, fake: newJobManagers(), logf: logf,
		result: &RunningResult{ObserveInterval: o.ObserveInterval, ProgressCheck: o.ProgressCheck, Upgrades: o.Upgrades}}
	ok := false
	defer func() {
		if !ok {
			r.stop()
		}
	}()
	var err error
	if r.host, err = newClusterHost(cfg, benchNS, r.fake); err != nil {
		return nil, err
	}
	if err := r.host.start(ctx, 8); err != nil {
		return nil, err
	}
	if r.fds, err = crcache.New(cfg, crcache.Options{Scheme: scheme, DefaultNamespaces: map[string]crcache.Config{benchNS: {}}}); err != nil {
		return nil, fmt.Errorf("FlinkDeployment cache: %w", err)
	}
	inf, err := r.fds.GetInformer(ctx, &flinkv1beta1.FlinkDeployment{})
	if err != nil {
		return nil, err
	}
	seen := func(obj any) {
		if fd, ok := obj.(*flinkv1beta1.FlinkDeployment); ok {
			r.seen(fd)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }}); err != nil {
		return nil, err
	}
	fdCtx, cancel := context.WithCancel(context.Background())
	r.stopFDs = cancel
	go func() { _ = r.fds.Start(fdCtx) }()
	if !r.fds.WaitForCacheSync(ctx) {
		return nil, errors.New("FlinkDeployment cache did not sync")
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("fd-%05d", i)
	}
	if r.allRunning, err = r.await(ctx, names, runningStable); err != nil {
		return nil, err
	}
	ok = true
	return r, nil
}

// stop ends what startRunning started; it may be called more than once.
func (r *running) stop() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.stopped = true
	r.mu.Unlock()
	if r.stopFDs != nil {
		r.stopFDs()
	}
	if r.host != nil {
		r.host.stop()
	}
	r.fake.close()
}

// operatorArgs route every cluster's REST calls to the fake and set the intervals.
func (r *running) operatorArgs() []string {
	args := []string{"--flink-rest-url-template=" + r.fake.urlTemplate()}
	if r.o.ObserveInterval > 0 {
		args = append(args, "--reconcile-interval="+r.o.ObserveInterval.String())
	}
	if r.o.ProgressCheck > 0 {
		args = append(args, "--progress-check-interval="+r.o.ProgressCheck.String())
	}
	return args
}

// flinkDeployment is resource i of the running mode.
func (r *running) flinkDeployment(i int) client.Object {
	fd := &flinkv1beta1.FlinkDeployment{}
	// Checked to unmarshal by the default mode's template in Run; the replacements keep it YAML.
	_ = yaml.Unmarshal([]byte(runningFlinkDeploymentYAML), fd)
	fd.Name, fd.Namespace = fmt.Sprintf("fd-%05d", i), benchNS
	return fd
}

// runningStable: the resource is STABLE and DEPLOYED, its job RUNNING.
func runningStable(fd *flinkv1beta1.FlinkDeployment) bool {
	st := &fd.Status
	return st.LifecycleState == flinkv1beta1.LifecycleStable && st.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed &&
		st.JobStatus.State == flinkv1beta1.JobStatusRunning
}

// await starts recording when each named FlinkDeployment first satisfies cond (those that
// already do, now).
func (r *running) await(ctx context.Context, names []string, cond func(*flinkv1beta1.FlinkDeployment) bool) (*waiter, error) {
	w := &waiter{cond: cond, want: map[string]bool{}, done: map[string]time.Time{}, all: make(chan struct{})}
	for _, n := range names {
		w.want[n] = true
	}
	r.mu.Lock()
	r.waiters = append(r.waiters, w)
	r.mu.Unlock()
	var list flinkv1beta1.FlinkDeploymentList
	if err := r.fds.List(ctx, &list, client.InNamespace(benchNS)); err != nil {
		return nil, err
	}
	for i := range list.Items {
		r.seen(&list.Items[i])
	}
	return w, nil
}

// seen records a FlinkDeployment's state with the waiters.
func (r *running) seen(fd *flinkv1beta1.FlinkDeployment) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.waiters {
		if _, done := w.done[fd.Name]; done || !w.want[fd.Name] || !w.cond(fd) {
			continue
		}
		w.done[fd.Name] = now
		if len(w.done) == len(w.want) {
			close(w.all)
		}
	}
}

// wait waits until every resource of w satisfied its condition, at most limit.
func (r *running) wait(ctx context.Context, w *waiter, limit time.Duration, what string) error {
	select {
	case <-w.all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(limit):
	}
	r.mu.Lock()
	done := len(w.done)
	r.mu.Unlock()
	err := fmt.Errorf("%s: %d of %d after %s", what, done, len(w.want), limit)
	if hostErr := r.host.err(); hostErr != nil {
		err = fmt.Errorf("%w (the bench's cluster host last failed with: %v)", err, hostErr)
	}
	return err
}

// waitRunning waits until every resource runs; createStart is when the creates began.
func (r *running) waitRunning(ctx context.Context, createStart time.Time) error {
	if err := r.wait(ctx, r.allRunning, time.Duration(r.n)*200*time.Millisecond+2*time.Minute, "FlinkDeployments STABLE with a RUNNING job"); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	for _, t := range r.allRunning.done {
		if t.After(last) {
			last = t
		}
	}
	r.result.AllRunning = last.Sub(createStart)
	return nil
}

// steadyStart marks the start of the steady window.
func (r *running) steadyStart() { r.steadyCalls = r.fake.counts(nil) }

// steadyEnd records the steady window's REST calls and CPU.
func (r *running) steadyEnd(window time.Duration, cpuSeconds float64) {
	calls := r.fake.counts(nil).minus(r.steadyCalls)
	res := r.result
	res.SteadyCalls = calls
	res.SteadyCPUPercent = cpuSeconds / window.Seconds() * 100
	interval := r.o.ObserveInterval
	if interval <= 0 {
		interval = time.Minute // the operator's default --reconcile-interval
	}
	intervals := window.Seconds() / interval.Seconds()
	res.SteadyCallsByRoute = map[string]float64{}
	for route, n := range calls {
		res.SteadyCallsByRoute[route] = float64(n) / float64(r.n) / intervals
	}
	res.SteadyCallsPerJobPerInterval = float64(calls.total()) / float64(r.n) / intervals
}

// upgrade changes the spec of the first Upgrades resources at once (a new job argument) and
// waits until every one of them was upgraded through a savepoint.
func (r *running) upgrade(ctx context.Context, op *operator, o Options) error {
	u := r.o.Upgrades
	names := make([]string, u)
	clusters := map[string]bool{}
	for i := range names {
		names[i] = fmt.Sprintf("fd-%05d", i)
		clusters[benchNS+"/"+names[i]] = true
	}
	marker := fmt.Sprintf("bench-upgrade-%d", time.Now().UnixNano())
	upgraded := func(fd *flinkv1beta1.FlinkDeployment) bool {
		return runningStable(fd) && strings.Contains(fd.Status.ReconciliationStatus.LastReconciledSpec, marker) &&
			r.fake.restoredFromLastSavepoint(benchNS, fd.Name, fd.Status.JobStatus.JobID)
	}
	before, err := op.scrape()
	if err != nil {
		return err
	}
	callsBefore := r.fake.counts(clusters)
	w, err := r.await(ctx, names, upgraded)
	if err != nil {
		return err
	}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"job":{"args":["--bench-upgrade",%q]}}}`, marker)))
	var mu sync.Mutex
	changed := make(map[string]time.Time, u)
	start := time.Now()
	jobs := make(chan string)
	errs := make(chan error, o.Concurrency)
	var wg sync.WaitGroup
	for range min(o.Concurrency, u) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range jobs {
				fd := &flinkv1beta1.FlinkDeployment{}
				fd.Name, fd.Namespace = name, benchNS
				if err := r.c.Patch(ctx, fd, patch); err != nil {
					errs <- fmt.Errorf("change the spec of %s: %w", name, err)
					return
				}
				mu.Lock()
				changed[name] = time.Now()
				mu.Unlock()
			}
		}()
	}
	for _, name := range names {
		jobs <- name
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	if err := r.wait(ctx, w, time.Duration(u)*time.Second+2*time.Minute, "savepoint upgrades completed"); err != nil {
		return err
	}
	res := r.result
	res.UpgradeAll = time.Since(start)
	// Counted now: the upgraded clusters' periodic observation from here on is steady state.
	res.UpgradeCalls = r.fake.counts(clusters).minus(callsBefore)
	res.CallsPerUpgrade = float64(callCounts(res.UpgradeCalls).total()) / float64(u)
	r.mu.Lock()
	res.Upgraded = len(w.done)
	lat := make([]time.Duration, 0, u)
	for name, t := range w.done {
		lat = append(lat, max(t.Sub(changed[name]), 0))
	}
	r.mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	res.UpgradeP50, res.UpgradeP99 = percentile(lat, 50), percentile(lat, 99)
	r.logf("%d savepoint upgrades completed after %s; waiting for the operator to settle", u, res.UpgradeAll.Round(time.Millisecond))

	settled, err := op.waitQuiet(ctx, 5*time.Second, o.Settle)
	if err != nil {
		return err
	}
	res.UpgradeRequests = settled.requests().minus(before.requests())
	res.WritesPerUpgrade = float64(res.UpgradeRequests.Writes) / float64(u)
	res.ReadsPerUpgrade = float64(res.UpgradeRequests.Reads) / float64(u)
	return nil
}
