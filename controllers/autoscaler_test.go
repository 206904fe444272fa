package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/flinksessionjob"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// scriptedMetrics is a job's metrics as a test scripts them: a source → map → sink graph whose
// map vertex is as busy as busy says, at the parallelism the job runs with (the overrides the
// fake JobManager was last given, else 1).
type scriptedMetrics struct {
	mu    sync.Mutex
	busy  float64 // busyTimeMsPerSecond of the map vertex at parallelism 1
	rate  float64 // records per second into the job
	flink *fakeflink.Server
	calls int
}

// samples is how many samples were taken.
func (m *scriptedMetrics) samples() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

func (m *scriptedMetrics) set(busy, rate float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.busy, m.rate = busy, rate
}

func (m *scriptedMetrics) parallelism(jobID string, v autoscaler.VertexID) int {
	if p := m.flink.Vertices(jobID)[string(v)]; p > 0 {
		return p
	}
	return 1
}

func (m *scriptedMetrics) Topology(_ context.Context, jobID string) (autoscaler.Topology, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return autoscaler.Topology{Vertices: []autoscaler.Vertex{
		{ID: fixtures.VertexSource, Name: "Source: load", Parallelism: m.parallelism(jobID, fixtures.VertexSource), MaxParallelism: 128, Source: true},
		{ID: fixtures.VertexMap, Name: "busy map", Parallelism: m.parallelism(jobID, fixtures.VertexMap), MaxParallelism: 128, Inputs: []autoscaler.VertexID{fixtures.VertexSource}, HashInput: true},
		{ID: fixtures.VertexSink, Name: "Sink: discard", Parallelism: m.parallelism(jobID, fixtures.VertexSink), MaxParallelism: 128, Inputs: []autoscaler.VertexID{fixtures.VertexMap}},
	}}, nil
}

func (m *scriptedMetrics) Sample(_ context.Context, jobID string, t autoscaler.Topology) (autoscaler.Sample, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	p := float64(m.parallelism(jobID, fixtures.VertexMap))
	light := autoscaler.VertexSample{BusyTimeMsPerSecond: 50, RecordsInPerSecond: m.rate, RecordsOutPerSecond: m.rate}
	source := light
	source.PendingRecords, source.HasPendingRecords = 0, true
	return autoscaler.Sample{Vertices: map[autoscaler.VertexID]autoscaler.VertexSample{
		fixtures.VertexSource: source,
		fixtures.VertexMap:    {BusyTimeMsPerSecond: min(1000, m.busy/p), RecordsInPerSecond: m.rate, RecordsOutPerSecond: m.rate},
		fixtures.VertexSink:   light,
	}}, nil
}

// stepClock is a clock that moves a step forward each time it is read, so windows of minutes
// fill within a few reconciles.
type stepClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// autoscalingController runs the FlinkDeployment reconciler with the autoscaler reading source
// on clock.
func autoscalingController(fl *fakeflink.Server, source autoscaler.MetricsSource, clock func() time.Time) func(ctrl.Manager, record.EventRecorder) error {
	return func(mgr ctrl.Manager, rec record.EventRecorder) error {
		return (&flinkdeployment.FlinkDeploymentReconciler{
			Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
			Flink:     &clients.Factory{URLTemplate: fl.URL, Timeout: 2 * time.Second},
			Validator: &validation.Validator{}, Intervals: fixtures.FastIntervals(), ReconcilerOptions: reconciler.ReconcilerOptions{PriorityQueue: true},
			Autoscaling: &jobs.Autoscaling{Source: func(*flink.Client) autoscaler.MetricsSource { return source }, Now: clock},
		}).SetupWithManager(mgr)
	}
}

// withRecordedConfig adds keys to the flinkConfiguration of a lastReconciledSpec as the Apache
// operator serialised it (the envelope and every other field kept as they are).
func withRecordedConfig(t *testing.T, raw string, kv map[string]string) string {
	t.Helper()
	var env map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &env))
	conf, _ := env["spec"]["flinkConfiguration"].(map[string]any)
	if conf == nil {
		conf = map[string]any{}
	}
	for k, v := range kv {
		conf[k] = v
	}
	env["spec"]["flinkConfiguration"] = conf
	out, err := json.Marshal(env)
	require.NoError(t, err)
	return string(out)
}

// TestAdoptsAnAutoscaledDeployment: a running deployment the Apache
// operator's autoscaler had scaled carries the overrides in its lastReconciledSpec, not in its
// spec. Adopted, it keeps running at that parallelism: no upgrade, no JobManager rollout, no
// job stopped; the overrides stay in force (in the autoscaler's ConfigMap, which is created
// from them when the Apache operator's is gone).
func TestAdoptsAnAutoscaledDeployment(t *testing.T) {
	t.Parallel()
	const overrides = "0a448493b4782967b150582570326227:4,bc764cd8ddf7a0cff126f51c16239658:2"
	for _, withConfigMap := range []bool{false, true} {
		t.Run(fmt.Sprintf("autoscaler ConfigMap left: %v", withConfigMap), func(t *testing.T) {
			fl := fakeflink.New(t)
			c := testEnv(t).Client
			capture := loadCapture(t, "s1-laststate/01-running-stable")
			dep := capture.deployments[0]
			dep.Spec = *withConfig(t, &dep.Spec, map[string]string{"job.autoscaler.enabled": "true",
				"job.autoscaler.stabilization.interval": "1m", "job.autoscaler.metrics.window": "5m"})
			dep.Status.ReconciliationStatus.LastReconciledSpec = withRecordedConfig(t, dep.Status.ReconciliationStatus.LastReconciledSpec,
				map[string]string{"job.autoscaler.enabled": "true", "job.autoscaler.stabilization.interval": "1m",
					"job.autoscaler.metrics.window": "5m", jobs.KeyParallelismOverrides: overrides})
			if withConfigMap {
				// Upstream's autoscaler ConfigMap: its labels, its owner, the overrides in its
				// parallelismOverrides key (a string vertex:parallelism,...).
				capture.configMaps = append(capture.configMaps, &corev1.ConfigMap{
					TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
					ObjectMeta: metav1.ObjectMeta{Name: jobs.AutoscalerConfigMapName(dep.Name),
						Labels: map[string]string{"app": dep.Name, "component": "autoscaler"},
						OwnerReferences: []metav1.OwnerReference{{APIVersion: flinkv1beta1.GroupVersion.String(),
							Kind: "FlinkDeployment", Name: dep.Name}}},
					Data: map[string]string{"parallelismOverrides": overrides},
				})
			}
			ns := adoptCapture(t, c, fl, capture)
			jm := (&cluster{t: t, c: c, flink: fl}).jobManager(ns, capture.jobManagers[0].Name)
			require.NotNil(t, jm)
			source := &scriptedMetrics{flink: fl, busy: 500, rate: 100}
			clock := &stepClock{now: time.Now(), step: 10 * time.Second}
			events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: autoscalingController(fl, source, clock.Now)})

			k := &cluster{t: t, c: c, flink: fl}
			wait.For(t, 30*time.Second, "three observations of the adopted job (or its upgrade)", func() bool {
				jm := k.jobManager(ns, jm.Name)
				return jobRequests(fl, capture.jobs) >= 3 || jm == nil || !jm.DeletionTimestamp.IsZero()
			}, func() string { return fmt.Sprintf("requests %v", fl.Requests()) })
			assert.Empty(t, jobActions(fl), "nothing cancelled, stopped, submitted or rescaled")
			assert.False(t, events.has(reconciler.ReasonSpecChanged), "the autoscaler's overrides are no spec change")
			now := k.jobManager(ns, jm.Name)
			require.NotNil(t, now, "the JobManager is kept")
			assert.True(t, now.DeletionTimestamp.IsZero(), "the JobManager is kept")
			assert.True(t, equality.Semantic.DeepEqual(jm.Spec.Template, now.Spec.Template), "no rollout")
			d := get(t, c, ns, dep.Name)
			assert.Equal(t, flinkv1beta1.ReconciliationDeployed, d.Status.ReconciliationStatus.State)
			assert.Contains(t, d.Status.ReconciliationStatus.LastReconciledSpec, overrides, "the overrides stay recorded as running")
			assert.NotContains(t, string(d.Spec.FlinkConfiguration.Raw), jobs.KeyParallelismOverrides, "never written into the user's spec")

			var cm corev1.ConfigMap
			require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: jobs.AutoscalerConfigMapName(dep.Name)}, &cm))
			state, err := autoscaler.DecodeState(cm.Data)
			require.NoError(t, err)
			assert.Equal(t, overrides, autoscaler.FormatOverrides(state.Overrides), "the autoscaler continues from the adopted overrides")
		})
	}
}

// autoscaled creates a running deployment on the adaptive scheduler with the autoscaler on (and
// kv), its three vertices at parallelism 1 in the fake JobManager; it returns the job id.
func autoscaled(t *testing.T, c client.Client, k *cluster, ns, name string, kv map[string]string) string {
	t.Helper()
	dep := fixtures.NewDeployment(t, ns, name)
	dep.Spec.Job.Parallelism = 1
	conf := map[string]string{"jobmanager.scheduler": "adaptive", "job.autoscaler.enabled": "true",
		"job.autoscaler.stabilization.interval": "1m", "job.autoscaler.metrics.window": "2m",
		"job.autoscaler.scale-down.interval": "0", "job.autoscaler.utilization.target": "0.5"}
	maps.Copy(conf, kv)
	dep.Spec = *withConfig(t, &dep.Spec, conf)
	require.NoError(t, c.Create(context.Background(), dep))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	jobID := d.Status.JobStatus.JobID
	k.flink.SetVertices(jobID, map[string]int{string(fixtures.VertexSource): 1, string(fixtures.VertexMap): 1, string(fixtures.VertexSink): 1})
	k.run(ns, name, jobID)
	waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
	return jobID
}

// autoscalerState is the state in a resource's autoscaler ConfigMap.
func autoscalerState(t *testing.T, c client.Client, ns, name string) (autoscaler.State, bool) {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: jobs.AutoscalerConfigMapName(name)}, &cm); err != nil {
		return autoscaler.State{}, false
	}
	state, err := autoscaler.DecodeState(cm.Data)
	require.NoError(t, err)
	return state, true
}

// scalingVertex is the vertex of status.scaling with the id, failing the test without it.
func scalingVertex(t *testing.T, sc *flinkv1beta1.ScalingDecision, id autoscaler.VertexID) flinkv1beta1.VertexScaling {
	t.Helper()
	require.NotNil(t, sc, "status.scaling")
	for _, v := range sc.Vertices {
		if v.VertexID == string(id) {
			return v
		}
	}
	t.Fatalf("vertex %s not in status.scaling %+v", id, sc.Vertices)
	return flinkv1beta1.VertexScaling{}
}

// assertScalingExplained checks that status.scaling lists the scripted job's three vertices with
// the evaluated numbers: the map vertex's busy ratio, rates and parallelism, the source's lag
// (none: caught up at once).
func assertScalingExplained(t *testing.T, sc *flinkv1beta1.ScalingDecision, outcome flinkv1beta1.ScalingOutcome, mapFrom, mapTo int) {
	t.Helper()
	require.NotNil(t, sc, "status.scaling")
	assert.Equal(t, outcome, sc.Outcome)
	assert.False(t, sc.EvaluatedAt.IsZero())
	assert.Positive(t, sc.Generation)
	assert.NotEmpty(t, sc.Message)
	require.Len(t, sc.Vertices, 3, "every vertex, in topological order")
	assert.Equal(t, []string{string(fixtures.VertexSource), string(fixtures.VertexMap), string(fixtures.VertexSink)},
		[]string{sc.Vertices[0].VertexID, sc.Vertices[1].VertexID, sc.Vertices[2].VertexID})
	m := scalingVertex(t, sc, fixtures.VertexMap)
	assert.Equal(t, "busy map", m.Name)
	assert.Equal(t, int32(mapFrom), m.CurrentParallelism)
	assert.Equal(t, int32(mapTo), m.NewParallelism)
	assert.Regexp(t, `^[01]\.\d\d$`, m.BusyRatio)
	assert.Regexp(t, `^\d+\.\d$`, m.TrueProcessingRate)
	assert.Equal(t, "1000.0", m.TargetRate, "the scripted 1000 records/s reach the map")
	assert.Empty(t, m.Lag, "lag is a source's")
	src := scalingVertex(t, sc, fixtures.VertexSource)
	assert.Equal(t, "0", src.Lag)
	assert.Regexp(t, `^\d+(m\d+)?s$`, src.ExpectedCatchUp)
}

// TestAutoscalerScalesADeployment: the busy vertex of a running job is scaled up while the
// scripted load is high and down once it falls, in place (adaptive scheduler, Flink 1.20); each
// decision is a ScalingReport event and its overrides are in the autoscaler ConfigMap before
// Flink is asked; the user's spec never gets them. A restarted operator continues from the
// ConfigMap (no restart of the job, the overrides kept); autoscalerResetNonce clears the state
// and returns the job to the spec's parallelism.
func TestAutoscalerScalesADeployment(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns := testEnv(t).NewNamespace(t, "autoscale")
	fl := fakeflink.New(t)
	k := &cluster{t: t, c: c, flink: fl}
	source := &scriptedMetrics{flink: fl, busy: 300, rate: 1000}
	clock := &stepClock{now: time.Now(), step: 20 * time.Second}
	events, stop := startManager(t, managerOptions{namespaces: []string{ns}, setup: autoscalingController(fl, source, clock.Now)})
	const name = "job"
	jobID := autoscaled(t, c, k, ns, name, nil)
	jm := k.jobManager(ns, name)

	source.set(1800, 1000) // the map vertex needs about four subtasks at 50% utilization
	wait.For(t, 30*time.Second, "scaled up", func() bool { return fl.Vertices(jobID)[string(fixtures.VertexMap)] > 1 })
	up := fl.Vertices(jobID)[string(fixtures.VertexMap)]
	events.seen(t, jobs.ReasonScalingReport)
	// As upstream: the overrides are a spec change, announced before the job is rescaled.
	events.seen(t, "SpecChanged SCALE change(s) detected (Diff: FlinkDeploymentSpec[flinkConfiguration.pipeline.jobvertex-parallelism-overrides : null -> ")
	events.seen(t, "Scaled the running job in place")
	state, ok := autoscalerState(t, c, ns, name)
	require.True(t, ok, "the autoscaler ConfigMap exists")
	assert.Equal(t, up, state.Overrides[fixtures.VertexMap], "the decision is in the ConfigMap")
	assert.NotEmpty(t, state.History[fixtures.VertexMap], "and in its scaling history")
	d := get(t, c, ns, name)
	assert.NotContains(t, string(d.Spec.FlinkConfiguration.Raw), jobs.KeyParallelismOverrides, "never written into the user's spec")
	assert.Equal(t, jobID, d.Status.JobStatus.JobID, "same job")
	assert.Equal(t, jm.UID, k.jobManager(ns, name).UID, "same JobManager: no restart")
	assert.Empty(t, fl.Stops(), "no savepoint: rescaled in place")
	// The decision explains itself in the status: kubectl get -o jsonpath='{.status.scaling}'.
	d = waitFor(t, c, ns, name, "the scale-up in status.scaling", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.Scaling != nil })
	assertScalingExplained(t, d.Status.Scaling, flinkv1beta1.ScalingApplied, 1, up)

	source.set(100, 1000) // the load falls
	wait.For(t, 30*time.Second, "scaled down", func() bool { return fl.Vertices(jobID)[string(fixtures.VertexMap)] < up })
	down := fl.Vertices(jobID)[string(fixtures.VertexMap)]
	wait.For(t, 10*time.Second, "the scale-down is in the ConfigMap", func() bool {
		state, _ := autoscalerState(t, c, ns, name)
		return state.Overrides[fixtures.VertexMap] == down
	})
	d = waitFor(t, c, ns, name, "the scale-down in status.scaling", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.Scaling != nil && d.Status.Scaling.Vertices[1].CurrentParallelism == int32(up)
	})
	assertScalingExplained(t, d.Status.Scaling, flinkv1beta1.ScalingApplied, up, down)

	// A restarted operator continues from the ConfigMap: the overrides stay in force, nothing
	// restarts.
	stop()
	requests := len(fl.Requests())
	_, _ = startManager(t, managerOptions{namespaces: []string{ns}, setup: autoscalingController(fl, source, clock.Now)})
	wait.For(t, 30*time.Second, "observed again after the restart", func() bool {
		return jobRequests(fl, map[string]string{jobID: ""}) > 0 && len(fl.Requests()) > requests+5
	}, func() string { return fmt.Sprintf("requests %v", fl.Requests()[requests:]) })
	d = get(t, c, ns, name)
	assert.Equal(t, flinkv1beta1.ReconciliationDeployed, d.Status.ReconciliationStatus.State, "no upgrade after the restart")
	assert.Equal(t, jm.UID, k.jobManager(ns, name).UID)
	assert.True(t, k.jobManager(ns, name).DeletionTimestamp.IsZero())
	assert.Equal(t, down, fl.Vertices(jobID)[string(fixtures.VertexMap)])

	// autoscalerResetNonce: the state goes, and the job returns to the spec's parallelism
	// (the overrides removed: an upgrade).
	update(t, c, ns, name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.AutoscalerResetNonce = fixtures.Ptr(int64(1)) })
	waitFor(t, c, ns, name, "the reset recorded and the upgrade begun", func(d *flinkv1beta1.FlinkDeployment) bool {
		return strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, `"autoscalerResetNonce":1`) &&
			!strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, jobs.KeyParallelismOverrides)
	})
	state, ok = autoscalerState(t, c, ns, name)
	require.True(t, ok)
	assert.Empty(t, state.Overrides, "no overrides after the reset")
	assert.Empty(t, state.History, "no history after the reset")
	assert.Nil(t, get(t, c, ns, name).Status.Scaling, "nor a decision in the status")
}

// TestAutoscalerRecommendOnly: with job.autoscaler.scaling.enabled false the autoscaler reports
// what it would do and changes nothing.
func TestAutoscalerRecommendOnly(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns := testEnv(t).NewNamespace(t, "recommend")
	fl := fakeflink.New(t)
	k := &cluster{t: t, c: c, flink: fl}
	source := &scriptedMetrics{flink: fl, busy: 1800, rate: 1000}
	clock := &stepClock{now: time.Now(), step: 20 * time.Second}
	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: autoscalingController(fl, source, clock.Now)})
	const name = "job"
	jobID := autoscaled(t, c, k, ns, name, map[string]string{"job.autoscaler.scaling.enabled": "false"})
	jm := k.jobManager(ns, name)

	events.seen(t, jobs.ReasonScalingReport)
	before := source.samples()
	wait.For(t, 30*time.Second, "evaluated again", func() bool { return source.samples() > before+5 })
	assert.Equal(t, 1, fl.Vertices(jobID)[string(fixtures.VertexMap)], "Flink's parallelism unchanged")
	assert.Empty(t, jobActions(fl), "nothing rescaled, stopped or submitted")
	d := get(t, c, ns, name)
	assert.NotContains(t, d.Status.ReconciliationStatus.LastReconciledSpec, jobs.KeyParallelismOverrides)
	assert.Equal(t, jm.UID, k.jobManager(ns, name).UID)
	state, ok := autoscalerState(t, c, ns, name)
	require.True(t, ok)
	assert.Empty(t, state.Overrides, "a recommendation is not an override")

	// The recommendation is in the status, without decoding the ConfigMap.
	sc := d.Status.Scaling
	require.NotNil(t, sc, "status.scaling")
	assertScalingExplained(t, sc, flinkv1beta1.ScalingRecommended, 1, int(scalingVertex(t, sc, fixtures.VertexMap).NewParallelism))
	assert.Greater(t, scalingVertex(t, sc, fixtures.VertexMap).NewParallelism, int32(1), "a scale-up recommended")
	assert.Contains(t, sc.Message, "scaling.enabled is false")

	// Turned off, the autoscaler's decision goes with it.
	update(t, c, ns, name, func(d *flinkv1beta1.FlinkDeployment) {
		d.Spec = *withConfig(t, &d.Spec, map[string]string{"job.autoscaler.enabled": "false"})
	})
	waitFor(t, c, ns, name, "status.scaling removed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.Scaling == nil })
}

// TestAutoscalerScalesASessionJob: a session job's autoscaler decision is applied as an upgrade
// with its upgrade mode (stop with a savepoint, resubmit from it), the overrides in the job's
// recorded configuration and the autoscaler ConfigMap, never in its spec.
func TestAutoscalerScalesASessionJob(t *testing.T) {
	t.Parallel()
	fl := fakeflink.New(t)
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "autoscale-sessionjob")
	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))
	session := fixtures.NewDeployment(t, ns, "session")
	session.Spec.Job = nil
	require.NoError(t, c.Create(ctx, session))
	session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, session))

	source := &scriptedMetrics{flink: fl, busy: 1800, rate: 1000}
	clock := &stepClock{now: time.Now(), step: 20 * time.Second}
	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: func(mgr ctrl.Manager, rec record.EventRecorder) error {
		return (&flinksessionjob.FlinkSessionJobReconciler{
			Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
			Flink:     &clients.Factory{URLTemplate: fl.URL, Timeout: 2 * time.Second},
			Artifacts: &artifact.Fetcher{MaxSize: 1 << 20, LocalDir: "/"},
			Validator: &validation.Validator{AllowedJarSchemes: []string{"file"}}, Intervals: fixtures.FastIntervals(),
			Autoscaling: &jobs.Autoscaling{Source: func(*flink.Client) autoscaler.MetricsSource { return source }, Now: clock.Now},
		}).SetupWithManager(mgr)
	}})

	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{
			JarURI: "file://" + jar, Parallelism: 1, UpgradeMode: flinkv1beta1.UpgradeModeSavepoint},
			FlinkConfiguration: flinkv1beta1.NewFlinkConfiguration(map[string]string{"job.autoscaler.enabled": "true",
				"job.autoscaler.stabilization.interval": "1m", "job.autoscaler.metrics.window": "2m",
				"job.autoscaler.utilization.target": "0.5"})}}
	key := client.ObjectKeyFromObject(job)
	require.NoError(t, c.Create(ctx, job))
	current := func() *flinkv1beta1.FlinkSessionJob {
		j := &flinkv1beta1.FlinkSessionJob{}
		require.NoError(t, c.Get(ctx, key, j))
		return j
	}
	var first string
	wait.For(t, 30*time.Second, "running", func() bool {
		j := current()
		if j.Status.JobStatus.JobID != "" && j.Status.JobStatus.State != flinkv1beta1.JobStatusRunning {
			fl.SetJob(j.Status.JobStatus.JobID, "RUNNING")
		}
		first = j.Status.JobStatus.JobID
		return j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	}, func() string { return fmt.Sprintf("status %+v", current().Status) })

	var j *flinkv1beta1.FlinkSessionJob
	wait.For(t, 60*time.Second, "upgraded by the autoscaler", func() bool {
		j = current()
		return j.Status.JobStatus.JobID != first && j.Status.JobStatus.JobID != "" &&
			strings.Contains(j.Status.ReconciliationStatus.LastReconciledSpec, jobs.KeyParallelismOverrides)
	}, func() string { return fmt.Sprintf("status %+v; events %v", current().Status, events.events) })
	events.seen(t, jobs.ReasonScalingReport)
	assert.Len(t, fl.Stops(), 1, "stopped with a savepoint (its upgrade mode)")
	assert.Equal(t, "FINISHED", fl.Job(first))
	state, ok := autoscalerState(t, c, ns, job.Name)
	require.True(t, ok)
	assert.Greater(t, state.Overrides[fixtures.VertexMap], 1, "the scale-up is in the ConfigMap")
	assert.Contains(t, j.Status.ReconciliationStatus.LastReconciledSpec,
		fmt.Sprintf("%s:%d", fixtures.VertexMap, state.Overrides[fixtures.VertexMap]), "the job was resubmitted with the overrides")
	assert.NotContains(t, string(j.Spec.FlinkConfiguration.Raw), jobs.KeyParallelismOverrides, "never written into the user's spec")
	// A session job explains the decision in its status too.
	require.NotNil(t, j.Status.Scaling, "status.scaling")
	assert.Equal(t, flinkv1beta1.ScalingApplied, j.Status.Scaling.Outcome)
	assert.Equal(t, int32(state.Overrides[fixtures.VertexMap]), scalingVertex(t, j.Status.Scaling, fixtures.VertexMap).NewParallelism)
}
