package controllers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinksessionjob"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// upstreamCapture is one step of what the Apache Flink Kubernetes Operator 1.15.0 wrote while
// managing real Flink 1.20.3 (testdata/upstream/<scenario>/<step>.yaml, trimmed from the
// reference capture), and the jobs its JobManagers reported (<step>.flink-rest.json).
type upstreamCapture struct {
	deployments []*flinkv1beta1.FlinkDeployment
	sessionJobs []*flinkv1beta1.FlinkSessionJob
	snapshots   []*flinkv1beta1.FlinkStateSnapshot
	jobManagers []*appsv1.Deployment
	configMaps  []*corev1.ConfigMap
	// jobs are the states of the jobs the JobManagers listed, by job id; checkpoints their
	// latest completed checkpoint.
	jobs, checkpoints map[string]string
}

func loadCapture(t *testing.T, step string) *upstreamCapture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "upstream", step+".yaml"))
	require.NoError(t, err)
	c := &upstreamCapture{jobs: map[string]string{}, checkpoints: map[string]string{}}
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		var kind struct{ Kind string }
		require.NoError(t, yaml.Unmarshal(doc, &kind))
		var obj any
		switch kind.Kind {
		case "FlinkDeployment":
			d := &flinkv1beta1.FlinkDeployment{}
			c.deployments, obj = append(c.deployments, d), d
		case "FlinkSessionJob":
			j := &flinkv1beta1.FlinkSessionJob{}
			c.sessionJobs, obj = append(c.sessionJobs, j), j
		case "FlinkStateSnapshot":
			s := &flinkv1beta1.FlinkStateSnapshot{}
			c.snapshots, obj = append(c.snapshots, s), s
		case "Deployment":
			d := &appsv1.Deployment{}
			c.jobManagers, obj = append(c.jobManagers, d), d
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			c.configMaps, obj = append(c.configMaps, cm), cm
		default:
			t.Fatalf("%s: unexpected kind %q", step, kind.Kind)
		}
		require.NoError(t, yaml.Unmarshal(doc, obj), "%s: %s", step, kind.Kind)
	}
	require.NotEmpty(t, c.deployments, step)

	raw, err = os.ReadFile(filepath.Join("testdata", "upstream", step+".flink-rest.json"))
	require.NoError(t, err)
	var rest map[string]struct {
		Overview struct {
			Jobs []struct{ JID, State string }
		} `json:"jobs_overview"`
		Checkpoints map[string]struct {
			Latest *struct {
				Path string `json:"external_path"`
			} `json:"latest_completed"`
		} `json:"checkpoints"`
	}
	require.NoError(t, json.Unmarshal(raw, &rest))
	for _, pod := range rest {
		for _, j := range pod.Overview.Jobs {
			c.jobs[j.JID] = j.State
		}
		for id, cp := range pod.Checkpoints {
			if cp.Latest != nil {
				c.checkpoints[id] = cp.Latest.Path
			}
		}
	}
	return c
}

// adoptCapture creates what the Apache operator left, status included, in a fresh namespace,
// as it is when that operator has stopped and before this one starts: the owner references
// point at the recreated owners, and the JobManager Deployments are available. The fake
// JobManager runs the jobs the capture's JobManagers listed.
func adoptCapture(t *testing.T, c client.Client, flink *fakeflink.Server, capture *upstreamCapture) string {
	t.Helper()
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "adopt")
	uids := map[string]types.UID{} // by kind/name
	create := func(obj client.Object, withStatus func()) {
		t.Helper()
		obj.SetNamespace(ns)
		obj.SetResourceVersion("")
		refs := obj.GetOwnerReferences()
		for i := range refs {
			uid, ok := uids[refs[i].Kind+"/"+refs[i].Name]
			require.True(t, ok, "%s: owner %s/%s not created before it", obj.GetName(), refs[i].Kind, refs[i].Name)
			refs[i].UID = uid
		}
		obj.SetOwnerReferences(refs)
		require.NoError(t, c.Create(ctx, obj), "create %s", obj.GetName())
		if withStatus != nil {
			withStatus()
			require.NoError(t, c.Status().Update(ctx, obj), "status of %s", obj.GetName())
		}
		kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1beta1.")
		kind = strings.TrimPrefix(strings.TrimPrefix(kind, "*v1."), "*")
		uids[kind+"/"+obj.GetName()] = obj.GetUID()
	}
	for _, d := range capture.deployments {
		status, generation := d.Status, d.Generation
		d.Generation = 0
		atGeneration(t, c, d, generation, &d.Spec.RestartNonce, func() { create(d, nil) })
		d.Status = status
		require.NoError(t, c.Status().Update(ctx, d), "status of %s", d.Name)
	}
	for _, jm := range capture.jobManagers {
		create(jm, func() {
			jm.Status = appsv1.DeploymentStatus{ObservedGeneration: jm.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		})
	}
	for _, cm := range capture.configMaps {
		create(cm, nil)
	}
	for _, j := range capture.sessionJobs {
		status, generation := j.Status, j.Generation
		j.Generation = 0
		atGeneration(t, c, j, generation, &j.Spec.RestartNonce, func() { create(j, nil) })
		j.Status = status
		require.NoError(t, c.Status().Update(ctx, j), "status of %s", j.Name)
	}
	for _, s := range capture.snapshots {
		status := s.Status
		create(s, func() { s.Status = status })
	}
	for id, state := range capture.jobs {
		flink.SetJob(id, state)
		if cp := capture.checkpoints[id]; cp != "" {
			flink.SetLatestCheckpoint(id, cp)
		}
	}
	return ns
}

// atGeneration brings a resource to the generation the capture recorded (generations are the
// server's), so that the Apache operator's generation annotation on the JobManager and
// status.observedGeneration mean what they meant. create creates it; each spec change after that
// counts one: the resource is created with a restartNonce nobody acts on (no operator runs yet),
// changed to other such values, and the last change sets the captured one back.
func atGeneration(t *testing.T, c client.Client, obj client.Object, generation int64, nonce **int64, create func()) {
	t.Helper()
	captured := *nonce
	if generation > 1 {
		first := int64(-1)
		*nonce = &first
	}
	create()
	for i := int64(2); i <= generation; i++ {
		if i == generation {
			*nonce = captured
		} else {
			n := -i
			*nonce = &n
		}
		require.NoError(t, c.Update(context.Background(), obj), "bring %s to generation %d", obj.GetName(), i)
	}
	require.Equal(t, max(generation, 1), obj.GetGeneration(), obj.GetName())
}

// adoptingControllers runs the three reconcilers against flink, as the operator does, with
// the settings the capture's Apache operator had: its session job jar came over http from a
// loopback address (user.artifacts.allowed-schemes: https;http and
// user.artifacts.disallow-restricted-hosts: false; here --allowed-jar-schemes and
// --artifact-allowed-networks).
func adoptingControllers(flink *fakeflink.Server) func(ctrl.Manager, record.EventRecorder) error {
	sessionJobs := func(mgr ctrl.Manager, rec record.EventRecorder) error {
		return (&flinksessionjob.FlinkSessionJobReconciler{
			Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
			Flink:     &clients.Factory{URLTemplate: flink.URL, Timeout: 2 * time.Second},
			Artifacts: &artifact.Fetcher{MaxSize: 1 << 20, LocalDir: "/"},
			Validator: &validation.Validator{AllowedJarSchemes: []string{"file", "https", "http"},
				AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, Intervals: fixtures.FastIntervals(),
		}).SetupWithManager(mgr)
	}
	return func(mgr ctrl.Manager, rec record.EventRecorder) error {
		for _, setup := range []func(ctrl.Manager, record.EventRecorder) error{deploymentController(flink), sessionJobs, snapshotController(flink)} {
			if err := setup(mgr, rec); err != nil {
				return err
			}
		}
		return nil
	}
}

// jobRequests counts the requests reading the given jobs' states (GET /jobs/<id>/status for
// applications, GET /jobs/<id> for session jobs): each reconcile of an adopted job observes it
// once, so the count proves reconciles happened.
func jobRequests(flink *fakeflink.Server, jobs map[string]string) int {
	n := 0
	for _, r := range flink.Requests() {
		for id := range jobs {
			if r == "GET /jobs/"+id+"/status" || r == "GET /jobs/"+id {
				n++
			}
		}
	}
	return n
}

// jobActions are the requests that would cancel, stop, submit or snapshot a job.
func jobActions(flink *fakeflink.Server) []string {
	var out []string
	for _, r := range flink.Requests() {
		method, path, _ := strings.Cut(r, " ")
		switch {
		case method == "PATCH" && strings.HasPrefix(path, "/jobs/"),
			method == "POST" && strings.HasPrefix(path, "/jobs/"),
			method == "POST" && strings.HasPrefix(path, "/jars/"):
			out = append(out, r)
		}
	}
	return out
}

// TestAdoptsEveryCapturedUpstreamState: each state the Apache operator 1.15 left behind while
// managing real Flink (testdata/upstream) is taken over by this operator as it is: no job is
// cancelled, stopped, submitted or snapshotted, no JobManager is rolled out, the status keeps
// its job ids, savepoint paths and snapshot resources, and the recorded spec is accepted as
// deployed. A spec change afterwards upgrades from the state the capture's upgrade mode keeps.
func TestAdoptsEveryCapturedUpstreamState(t *testing.T) {
	t.Parallel()
	lastStateUpgrade := func(t *testing.T, a *adopted) {
		// Parallelism 2 → 3 (or 1 → 3): last-state with Kubernetes HA keeps the job id and
		// restores from the HA metadata; the job is neither stopped nor cancelled.
		d := a.deployment()
		job := d.Status.JobStatus.JobID
		update(t, a.c, a.ns, d.Name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 3 })
		a.collect(d.Name)
		d = waitFor(t, a.c, a.ns, d.Name, "upgraded", a.redeployed(d.Name))
		assert.Equal(t, job, d.Status.JobStatus.JobID, "last-state through HA keeps the job id")
		assert.Equal(t, flinkv1beta1.LastStateSentinelPath, restorePath(t, a.c, a.ns, d.Name), "restored from the HA metadata")
		assert.Empty(t, a.flink.Stops(), "no savepoint for a last-state upgrade")
		assert.Equal(t, "RUNNING", a.flink.Job(job), "the JobManager goes with its job; nothing is cancelled")
	}
	savepointUpgrade := func(t *testing.T, a *adopted) {
		d := a.deployment()
		job := d.Status.JobStatus.JobID
		update(t, a.c, a.ns, d.Name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 3 })
		a.collect(d.Name)
		d = waitFor(t, a.c, a.ns, d.Name, "upgraded", a.redeployed(d.Name))
		require.Len(t, a.flink.Stops(), 1, "one stop-with-savepoint")
		assert.Equal(t, "FINISHED", a.flink.Job(job))
		assert.Equal(t, a.flink.SavepointLocation(job, a.flink.Stops()[0]), restorePath(t, a.c, a.ns, d.Name), "restored from the upgrade savepoint")
	}
	resume := func(t *testing.T, a *adopted) {
		d := a.deployment()
		job := d.Status.JobStatus.JobID
		update(t, a.c, a.ns, d.Name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.State = flinkv1beta1.JobStateRunning })
		d = waitFor(t, a.c, a.ns, d.Name, "resumed", a.redeployed(d.Name))
		assert.Equal(t, job, d.Status.JobStatus.JobID, "resumed through HA: the same job id")
		assert.Equal(t, flinkv1beta1.LastStateSentinelPath, restorePath(t, a.c, a.ns, d.Name))
	}
	sessionJobUpgrade := func(t *testing.T, a *adopted) {
		j := a.sessionJob()
		job := j.Status.JobStatus.JobID
		jar := filepath.Join(t.TempDir(), "job.jar")
		require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))
		patchSessionJob(t, a.c, client.ObjectKeyFromObject(j), func(j *flinkv1beta1.FlinkSessionJob) {
			j.Spec.Job.Parallelism = 3
			j.Spec.Job.JarURI = "file://" + jar // the capture's jar server is gone
		})
		wait.For(t, 30*time.Second, "the session job upgraded", func() bool {
			j = a.sessionJob()
			return j.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && j.Status.JobStatus.JobID != job &&
				j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
		}, func() string { return fmt.Sprintf("status %+v", j.Status) })
		require.Len(t, a.flink.Stops(), 1, "one stop-with-savepoint")
		runs := a.flink.Runs()
		require.Len(t, runs, 1)
		assert.Equal(t, j.Status.JobStatus.JobID, runs[0].JobID)
		assert.Equal(t, 3, runs[0].Parallelism)
		assert.Equal(t, a.flink.SavepointLocation(job, a.flink.Stops()[0]), runs[0].SavepointPath, "restored from the upgrade savepoint")
	}

	tests := []struct {
		step string
		// lifecycle is the adopted resource's lifecycle state; snapshots the snapshot
		// resources kept.
		lifecycle flinkv1beta1.LifecycleState
		then      func(t *testing.T, a *adopted)
	}{
		{step: "s1-laststate/01-running-stable", lifecycle: flinkv1beta1.LifecycleStable, then: lastStateUpgrade},
		{step: "s1-laststate/02-after-manual-savepoint", lifecycle: flinkv1beta1.LifecycleStable, then: lastStateUpgrade},
		{step: "s1-laststate/03-after-parallelism-2-laststate-upgrade", lifecycle: flinkv1beta1.LifecycleStable, then: lastStateUpgrade},
		{step: "s1-laststate/04-after-suspend", lifecycle: flinkv1beta1.LifecycleSuspended, then: resume},
		{step: "s1-laststate/05-after-resume", lifecycle: flinkv1beta1.LifecycleStable, then: lastStateUpgrade},
		{step: "s2-savepoint/01-running-stable", lifecycle: flinkv1beta1.LifecycleStable, then: savepointUpgrade},
		{step: "s2-savepoint/02-after-parallelism-2-savepoint-upgrade", lifecycle: flinkv1beta1.LifecycleStable, then: savepointUpgrade},
		{step: "s3-session/01-running", lifecycle: flinkv1beta1.LifecycleStable, then: sessionJobUpgrade},
		{step: "s3-session/02-after-sessionjob-parallelism-2-savepoint-upgrade", lifecycle: flinkv1beta1.LifecycleStable, then: sessionJobUpgrade},
		{step: "s4-handmade-snapshot/01-completed", lifecycle: flinkv1beta1.LifecycleStable, then: lastStateUpgrade},
	}
	for _, tt := range tests {
		t.Run(tt.step, func(t *testing.T) {
			flink := fakeflink.New(t)
			c := testEnv(t).Client
			capture := loadCapture(t, tt.step)
			ns := adoptCapture(t, c, flink, capture)
			a := &adopted{c: c, ns: ns, flink: flink, k: &cluster{t: t, c: c, flink: flink}, capture: capture}
			templates := map[string]corev1.PodTemplateSpec{}
			for _, jm := range capture.jobManagers {
				templates[jm.Name] = *jm.Spec.Template.DeepCopy()
			}
			events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: adoptingControllers(flink)})

			// Adopted: this operator has written its status (its own condition) for the
			// generation it found, and observed running jobs several times.
			for _, want := range capture.deployments {
				waitFor(t, c, ns, want.Name, "the adopted status observed", func(d *flinkv1beta1.FlinkDeployment) bool {
					cond := meta.FindStatusCondition(d.Status.Conditions, "Reconciling")
					return cond != nil && cond.ObservedGeneration == d.Generation && d.Status.LifecycleState == tt.lifecycle
				})
			}
			if len(capture.jobs) > 0 {
				wait.For(t, 30*time.Second, "three observations of the adopted jobs", func() bool {
					return jobRequests(flink, capture.jobs) >= 3*len(capture.jobs)
				}, func() string { return fmt.Sprintf("requests %v", flink.Requests()) })
			}

			assert.Empty(t, jobActions(flink), "nothing cancelled, stopped, submitted or snapshotted")
			for id, state := range capture.jobs {
				assert.Equal(t, state, flink.Job(id), "job %s", id)
			}
			for name, before := range templates {
				jm := a.k.jobManager(ns, name)
				require.NotNil(t, jm, "JobManager %s kept", name)
				assert.True(t, equality.Semantic.DeepEqual(before, jm.Spec.Template), "JobManager %s pod template unchanged (no rollout): %s", name, diffJSON(before, jm.Spec.Template))
				assert.Equal(t, int64(1), jm.Generation, "JobManager %s never updated", name)
			}
			for _, want := range capture.deployments {
				d := get(t, c, ns, want.Name)
				assert.Equal(t, flinkv1beta1.ReconciliationDeployed, d.Status.ReconciliationStatus.State, "the recorded spec is accepted as deployed")
				assert.Equal(t, want.Status.JobManagerDeploymentStatus, d.Status.JobManagerDeploymentStatus)
				assert.Equal(t, want.Status.JobStatus.JobID, d.Status.JobStatus.JobID, "job id kept")
				assert.Equal(t, want.Status.JobStatus.State, d.Status.JobStatus.State, "job state")
				assertUpgradePath(t, want.Status.JobStatus.UpgradeSavepointPath, d.Status.JobStatus, capture.snapshots)
				assert.Empty(t, d.Status.Error)
				assert.False(t, events.has(reconciler.ReasonSpecChanged), "no spec change seen")
			}
			for _, want := range capture.sessionJobs {
				j := a.sessionJob()
				assert.Equal(t, flinkv1beta1.ReconciliationDeployed, j.Status.ReconciliationStatus.State)
				assert.Equal(t, want.Status.JobStatus.JobID, j.Status.JobStatus.JobID, "session job id kept")
				assert.Equal(t, flinkv1beta1.JobStatusRunning, j.Status.JobStatus.State)
				assert.Equal(t, flinkv1beta1.LifecycleStable, j.Status.LifecycleState)
				assert.Equal(t, want.Status.JobStatus.UpgradeSavepointPath, j.Status.JobStatus.UpgradeSavepointPath, "a session job's upgrade savepoint stays recorded")
				assert.Empty(t, j.Status.Error)
			}
			for _, want := range capture.snapshots {
				var s flinkv1beta1.FlinkStateSnapshot
				require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: want.Name}, &s))
				assert.Equal(t, flinkv1beta1.SnapshotCompleted, s.Status.State, "snapshot %s", want.Name)
				assert.Equal(t, want.Status.Path, s.Status.Path, "snapshot %s path kept", want.Name)
				assert.True(t, s.DeletionTimestamp.IsZero(), "snapshot %s kept", want.Name)
			}

			tt.then(t, a)
		})
	}
}

// adopted is one adopted capture under test.
type adopted struct {
	c       client.Client
	ns      string
	flink   *fakeflink.Server
	k       *cluster
	capture *upstreamCapture
}

// deployment is the capture's application FlinkDeployment as it is now.
func (a *adopted) deployment() *flinkv1beta1.FlinkDeployment {
	return get(a.k.t, a.c, a.ns, a.capture.deployments[0].Name)
}

// sessionJob is the capture's FlinkSessionJob as it is now.
func (a *adopted) sessionJob() *flinkv1beta1.FlinkSessionJob {
	j := &flinkv1beta1.FlinkSessionJob{}
	require.NoError(a.k.t, a.c.Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: a.capture.sessionJobs[0].Name}, j))
	return j
}

// redeployed is true once a JobManager of the current generation is deployed and its job
// runs in the fake JobManager (made available here, as the cluster would).
func (a *adopted) redeployed(name string) func(*flinkv1beta1.FlinkDeployment) bool {
	return func(d *flinkv1beta1.FlinkDeployment) bool {
		jm := a.k.jobManager(a.ns, name)
		// The old JobManager is gone (collected) or there was none (suspended): any one is new.
		if d.Status.ReconciliationStatus.State != flinkv1beta1.ReconciliationDeployed || d.Status.ObservedGeneration != d.Generation ||
			jm == nil || !jm.DeletionTimestamp.IsZero() {
			return false
		}
		if jm.Status.AvailableReplicas == 0 {
			jm.Status.Replicas, jm.Status.AvailableReplicas, jm.Status.ReadyReplicas = 1, 1, 1
			_ = a.c.Status().Update(context.Background(), jm)
		}
		return true
	}
}

// collect finishes the foreground deletion of the JobManager Deployment as the garbage
// collector does, dependents first: Flink's client made the Deployment the controller of its
// flink-config and pod-template ConfigMaps (blockOwnerDeletion), so they go before it does.
func (a *adopted) collect(name string) {
	a.k.t.Helper()
	jm := a.k.jobManager(a.ns, name)
	require.NotNil(a.k.t, jm)
	wait.For(a.k.t, 30*time.Second, "the JobManager Deployment deleted", func() bool {
		jm = a.k.jobManager(a.ns, name)
		return jm != nil && !jm.DeletionTimestamp.IsZero()
	}, func() string {
		return fmt.Sprintf("status %+v; requests %v", get(a.k.t, a.c, a.ns, name).Status, a.flink.Requests())
	})
	var cms corev1.ConfigMapList
	require.NoError(a.k.t, a.c.List(context.Background(), &cms, client.InNamespace(a.ns)))
	for i := range cms.Items {
		if metav1.IsControlledBy(&cms.Items[i], jm) {
			require.NoError(a.k.t, client.IgnoreNotFound(a.c.Delete(context.Background(), &cms.Items[i])))
		}
	}
	a.k.collect(a.ns, name)
}

// assertUpgradePath checks what became of a FlinkDeployment's captured
// status.jobStatus.upgradeSavepointPath: a suspended job keeps it (it is what the job resumes from); a running job has moved past
// what it restored, so this operator drops it as stale (markStable), and a savepoint path stays
// recorded in its FlinkStateSnapshot.
func assertUpgradePath(t *testing.T, captured string, now flinkv1beta1.JobStatus, snapshots []*flinkv1beta1.FlinkStateSnapshot) {
	t.Helper()
	if now.State != flinkv1beta1.JobStatusRunning {
		assert.Equal(t, captured, now.UpgradeSavepointPath, "the path a suspended job resumes from is kept")
		return
	}
	assert.Empty(t, now.UpgradeSavepointPath, "a running job's restore path is stale")
	if captured == "" || captured == flinkv1beta1.LastStateSentinelPath {
		return
	}
	var paths []string
	for _, s := range snapshots {
		paths = append(paths, s.Status.Path)
	}
	assert.Contains(t, paths, captured, "the upgrade savepoint stays recorded in its FlinkStateSnapshot")
}

func diffJSON(a, b any) string {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return fmt.Sprintf("\nbefore %s\nafter  %s", ja, jb)
}
