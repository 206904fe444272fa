package controllers

// The harness of this package's envtest scenarios: what a scenario creates (deployments, session
// jobs), the parts of a cluster envtest lacks (cluster), the events a manager recorded, and how
// a test waits for a resource. The control plane and the managers are in suite_test.go.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// cluster plays the parts envtest lacks: the JobManager Deployment becomes available (as the
// deployment controller and kubelet would make it) and the garbage collector finishes
// foreground deletions. The fake Flink runs whatever job id the JobManager was deployed with.
type cluster struct {
	t     *testing.T
	c     client.Client
	flink *fakeflink.Server
}

func (k *cluster) jobManager(ns, name string) *appsv1.Deployment {
	jm := &appsv1.Deployment{}
	if err := k.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, jm); err != nil {
		return nil
	}
	return jm
}

// run makes the JobManager available and its job RUNNING in the fake Flink.
func (k *cluster) run(ns, name, jobID string) {
	k.t.Helper()
	k.makeAvailable(ns, name)
	k.flink.SetJob(jobID, "RUNNING")
	k.writeHAMetadata(ns, name, jobID)
}

// makeAvailable makes the JobManager Deployment available, as the deployment controller and
// kubelet would.
func (k *cluster) makeAvailable(ns, name string) {
	k.t.Helper()
	wait.For(k.t, 20*time.Second, "the JobManager deployment, made available", func() bool {
		jm := k.jobManager(ns, name)
		if jm == nil || !jm.DeletionTimestamp.IsZero() {
			return false
		}
		jm.Status.Replicas, jm.Status.AvailableReplicas, jm.Status.ReadyReplicas = 1, 1, 1
		return k.c.Status().Update(context.Background(), jm) == nil
	})
}

// writeHAMetadata does what Flink's Kubernetes HA services do for a running job of a cluster
// with HA enabled: a ConfigMap with the job's checkpoint pointers, labelled for its cluster and
// owned by nothing (so it survives the cluster).
func (k *cluster) writeHAMetadata(ns, name, jobID string) {
	k.t.Helper()
	var d flinkv1beta1.FlinkDeployment
	require.NoError(k.t, k.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d))
	conf, err := d.Spec.FlinkConfiguration.Flatten()
	require.NoError(k.t, err)
	if conf["high-availability.type"] == "" && conf["high-availability"] == "" {
		return
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-" + jobID + "-config-map", Labels: native.HALabels(name)},
		Data: map[string]string{"counter": "2", "checkpointID-0000000000000000001": "pointer"}}
	if err := k.c.Create(context.Background(), cm); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(k.t, err)
	}
	// The submitted job's graph, which a JobManager recovers when it finds it.
	require.NoError(k.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		graphs := &corev1.ConfigMap{}
		err := k.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: native.HAClusterConfigMapName(name)}, graphs)
		if apierrors.IsNotFound(err) {
			graphs = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: native.HAClusterConfigMapName(name), Labels: native.HALabels(name)},
				Data: map[string]string{"jobGraph-" + jobID: "graph"}}
			return k.c.Create(context.Background(), graphs)
		}
		if err != nil {
			return err
		}
		if graphs.Data == nil {
			graphs.Data = map[string]string{}
		}
		graphs.Data["jobGraph-"+jobID] = "graph"
		return k.c.Update(context.Background(), graphs)
	}))
}

// jobGraphs are the job graphs the cluster's HA metadata holds.
func (k *cluster) jobGraphs(ns, name string) []string {
	k.t.Helper()
	graphs := &corev1.ConfigMap{}
	if err := k.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: native.HAClusterConfigMapName(name)}, graphs); err != nil {
		return nil
	}
	var keys []string
	for key := range graphs.Data {
		if strings.HasPrefix(key, "jobGraph-") {
			keys = append(keys, key)
		}
	}
	return keys
}

// collect finishes the foreground deletion of the current JobManager Deployment, and returns
// once it is gone (the operator may already have created the next one).
func (k *cluster) collect(ns, name string) {
	k.t.Helper()
	current := k.jobManager(ns, name)
	require.NotNil(k.t, current)
	wait.For(k.t, 20*time.Second, "the JobManager deployment deleted", func() bool {
		jm := k.jobManager(ns, name)
		if jm == nil || jm.UID != current.UID {
			return true
		}
		if jm.DeletionTimestamp.IsZero() {
			return false
		}
		jm.Finalizers = nil
		_ = k.c.Update(context.Background(), jm)
		return false
	})
}

type recordedEvents struct {
	mu     sync.Mutex
	events []string
}

func (r *recordedEvents) record(rec *record.FakeRecorder) {
	go func() {
		for e := range rec.Events {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		}
	}()
}

// seen waits for an event containing substr: events are drained from the recorder
// asynchronously, so one emitted before the status a test waited for may not be here yet.
func (r *recordedEvents) seen(t *testing.T, substr string) {
	t.Helper()
	wait.For(t, 10*time.Second, fmt.Sprintf("an event with %q", substr), func() bool { return r.has(substr) })
}

func (r *recordedEvents) has(substr string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if strings.Contains(e, substr) {
			return true
		}
	}
	return false
}

func get(t *testing.T, c client.Client, ns, name string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, dep))
	return dep
}

// waitFor waits until the named object (a FlinkDeployment, a FlinkBlueGreenDeployment, its
// child...) exists and satisfies cond, and returns it; on timeout the test fails with its last
// status.
func waitFor[T any, PT interface {
	*T
	client.Object
}](t *testing.T, c client.Client, ns, name, what string, cond func(PT) bool) PT {
	t.Helper()
	return wait.Object(t, c, client.ObjectKey{Namespace: ns, Name: name}, 30*time.Second, what, cond)
}

func update(t *testing.T, c client.Client, ns, name string, change func(*flinkv1beta1.FlinkDeployment)) {
	t.Helper()
	wait.For(t, 10*time.Second, fmt.Sprintf("update %s/%s", ns, name), func() bool {
		d := get(t, c, ns, name)
		change(d)
		return c.Update(context.Background(), d) == nil
	})
}

func lifecycleIs(state flinkv1beta1.LifecycleState) func(*flinkv1beta1.FlinkDeployment) bool {
	return func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.LifecycleState == state }
}

func restorePath(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "flink-config-" + name}, cm))
	for _, line := range strings.Split(cm.Data["config.yaml"], "\n") {
		if strings.HasPrefix(line, "execution.savepoint.path:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "execution.savepoint.path:"))
		}
	}
	return ""
}

// runningDeployment creates the FlinkDeployment "orders" in a scenario of its own (see
// newScenario), lets its job run and waits until it is STABLE: where most lifecycle scenarios
// start.
func runningDeployment(t *testing.T, prefix string) (ns string, flink *fakeflink.Server, k *cluster, events *recordedEvents, d *flinkv1beta1.FlinkDeployment) {
	t.Helper()
	ns, flink, k, events = newScenario(t, prefix)
	d = stableDeployment(t, testEnv(t).Client, k, fixtures.NewDeployment(t, ns, "orders"))
	return ns, flink, k, events, d
}

// stableDeployment creates dep, lets its job run and waits until it is STABLE.
func stableDeployment(t *testing.T, c client.Client, k *cluster, dep *flinkv1beta1.FlinkDeployment) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	require.NoError(t, c.Create(context.Background(), dep))
	d := waitFor(t, c, dep.Namespace, dep.Name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && d.Status.JobStatus.JobID != ""
	})
	k.run(dep.Namespace, dep.Name, d.Status.JobStatus.JobID)
	return waitFor(t, c, dep.Namespace, dep.Name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
}

// haDeployment is newDeployment with last-state upgrades and Kubernetes HA, plus extra options.
func haDeployment(t *testing.T, ns, name string, extra map[string]string) *flinkv1beta1.FlinkDeployment {
	dep := fixtures.NewDeployment(t, ns, name)
	dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeLastState
	conf := map[string]string{"state.checkpoints.dir": "file:///cp", "state.savepoints.dir": "file:///sp", "taskmanager.numberOfTaskSlots": "2",
		"high-availability.type": "kubernetes", "high-availability.storageDir": "file:///ha"}
	for k, v := range extra {
		conf[k] = v
	}
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
	return dep
}

// sessionJobs is one scenario's session clusters (ready, on the fake Flink) and the session
// job operator, in a namespace of its own.
type sessionJobs struct {
	t      *testing.T
	c      client.Client
	flink  *fakeflink.Server
	events *recordedEvents
	ns     string
	jar    string
}

// newSessionJobs creates a namespace named after prefix, ready session clusters in it (HA
// ones when ha is set) and the session job operator watching it.
func newSessionJobs(t *testing.T, prefix string, ha bool, sessions ...string) *sessionJobs {
	t.Helper()
	ns := testEnv(t).NewNamespace(t, prefix)
	e := &sessionJobs{t: t, c: testEnv(t).Client, flink: fakeflink.New(t), ns: ns, jar: filepath.Join(t.TempDir(), "job.jar")}
	ctx := context.Background()
	require.NoError(t, os.WriteFile(e.jar, []byte("PK fake jar"), 0o644))
	for _, name := range sessions {
		session := fixtures.NewDeployment(t, ns, name)
		if ha {
			session = haDeployment(t, ns, name, nil)
		}
		session.Spec.Job = nil
		require.NoError(t, e.c.Create(ctx, session))
		e.setSession(name, flinkv1beta1.JobManagerReady)
	}
	e.events = startSessionJobOperator(t, e.flink, ns)
	return e
}

func (e *sessionJobs) setSession(name string, jm flinkv1beta1.JobManagerDeploymentStatus) {
	e.t.Helper()
	wait.For(e.t, 10*time.Second, fmt.Sprintf("session %s marked %s", name, jm), func() bool {
		s := get(e.t, e.c, e.ns, name)
		s.Status.JobManagerDeploymentStatus = jm
		return e.c.Status().Update(context.Background(), s) == nil
	})
}

// run creates a session job on session "session" and waits until it runs (the fake Flink runs
// what was submitted); it returns the job's key and Flink job id.
func (e *sessionJobs) run(name string, mode flinkv1beta1.UpgradeMode) (client.ObjectKey, string) {
	e.t.Helper()
	return e.runWith(name, mode, flinkv1beta1.FlinkConfiguration{})
}

// runWith is run with the session job's own flinkConfiguration.
func (e *sessionJobs) runWith(name string, mode flinkv1beta1.UpgradeMode, conf flinkv1beta1.FlinkConfiguration) (client.ObjectKey, string) {
	e.t.Helper()
	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", FlinkConfiguration: conf, Job: &flinkv1beta1.JobSpec{
			JarURI: "file://" + e.jar, Parallelism: 1, UpgradeMode: mode, State: flinkv1beta1.JobStateRunning}}}
	require.NoError(e.t, e.c.Create(context.Background(), job))
	key := client.ObjectKeyFromObject(job)
	wait.For(e.t, 20*time.Second, name+" running", func() bool {
		j := e.get(key)
		if id := j.Status.JobStatus.JobID; id != "" && e.flink.Job(id) == "" && e.submitted(id) > 0 {
			e.flink.SetJob(id, "RUNNING")
		}
		return j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	})
	return key, e.get(key).Status.JobStatus.JobID
}

func (e *sessionJobs) get(key client.ObjectKey) *flinkv1beta1.FlinkSessionJob {
	e.t.Helper()
	j := &flinkv1beta1.FlinkSessionJob{}
	if err := e.c.Get(context.Background(), key, j); err != nil {
		return nil
	}
	return j
}

func (e *sessionJobs) update(key client.ObjectKey, change func(*flinkv1beta1.FlinkSessionJob)) {
	e.t.Helper()
	wait.For(e.t, 10*time.Second, fmt.Sprintf("update of %s", key), func() bool {
		j := e.get(key)
		change(j)
		return e.c.Update(context.Background(), j) == nil
	})
}

// submitted counts the submissions of a Flink job id.
func (e *sessionJobs) submitted(id string) int {
	n := 0
	for _, r := range e.flink.Runs() {
		if r.JobID == id {
			n++
		}
	}
	return n
}

// lastSubmission waits for a submission of another job id than old, and returns it.
func (e *sessionJobs) lastSubmission(old string) fakeflink.RunRequest {
	e.t.Helper()
	wait.For(e.t, 20*time.Second, "a submission of another job id", func() bool {
		runs := e.flink.Runs()
		return runs[len(runs)-1].JobID != old
	})
	runs := e.flink.Runs()
	return runs[len(runs)-1]
}

// runLegacySessionJob creates a savepoint-mode session job in legacy snapshot mode, with extra
// options in its own flinkConfiguration, and waits until it runs.
func (e *sessionJobs) runLegacySessionJob(name string, extra map[string]string) (client.ObjectKey, string) {
	e.t.Helper()
	conf := map[string]string{"kubernetes.operator.snapshot.resource.enabled": "false", "state.savepoints.dir": "file:///sp"}
	for k, v := range extra {
		conf[k] = v
	}
	return e.runWith(name, flinkv1beta1.UpgradeModeSavepoint, flinkv1beta1.NewFlinkConfiguration(conf))
}

// waitSessionJob waits until cond holds for the session job and returns it.
func (e *sessionJobs) waitSessionJob(key client.ObjectKey, what string, cond func(*flinkv1beta1.FlinkSessionJob) bool) *flinkv1beta1.FlinkSessionJob {
	e.t.Helper()
	var last *flinkv1beta1.FlinkSessionJob
	wait.For(e.t, 20*time.Second, what, func() bool {
		last = e.get(key)
		return last != nil && cond(last)
	}, func() string {
		return fmt.Sprintf("status %+v; requests %v", last.Status.JobStatus, e.flink.Requests())
	})
	return last
}

func savepointNonce(n int64) func(*flinkv1beta1.FlinkSessionJob) {
	return func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.SavepointTriggerNonce = &n }
}

// lastSavepointNonce: the job's last savepoint is the manual one of nonce n.
func lastSavepointNonce(n int64) func(*flinkv1beta1.FlinkSessionJob) bool {
	return func(j *flinkv1beta1.FlinkSessionJob) bool {
		info := j.Status.JobStatus.SavepointInfo
		return info != nil && info.LastSavepoint != nil && info.LastSavepoint.TriggerNonce != nil && *info.LastSavepoint.TriggerNonce == n
	}
}
