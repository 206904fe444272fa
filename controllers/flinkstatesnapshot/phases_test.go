package flinkstatesnapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/test/fakeflink"
)

// The phases of a FlinkStateSnapshot reconcile, each driven on a controller-runtime fake client
// with test/fakeflink as the job's JobManager: no manager, no API server, no polling. A test
// stores the snapshot and the job it references as a reconcile would find them, reconciles
// (or runs the phase list) once, and asserts what the JobManager was asked, the snapshot
// written, the events and the result.

const (
	ns = "fssphases"
	// sessionJobID is the job id of the session job the session-job snapshots are of.
	sessionJobID = "fedcba9876543210fedcba9876543210"
	// backoff is the first retry delay of the tests' reconciler.
	backoff = 10 * time.Second
)

// trigger is a savepoint or checkpoint trigger the JobManager received: its path and body, and
// the snapshot as stored when it arrived (what an operator restarted right then finds).
type trigger struct {
	path   string
	body   map[string]any
	stored *flinkv1beta1.FlinkStateSnapshot
}

// snapWorld is one test's fake API server, fake JobManager and reconciler.
type snapWorld struct {
	t        *testing.T
	c        client.Client
	flink    *fakeflink.Server
	r        *FlinkStateSnapshotReconciler
	events   *record.FakeRecorder
	key      client.ObjectKey
	triggers []trigger
	// conflicts, when positive, makes that many snapshot patches fail with a conflict.
	conflicts int
}

// runningDeployment is the application cluster "orders" whose job (fixtures.PhaseJobID) runs.
func runningDeployment(t *testing.T) *flinkv1beta1.FlinkDeployment {
	dep := fixtures.NewDeployment(t, ns, "orders")
	dep.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	dep.Status.JobStatus = flinkv1beta1.JobStatus{JobID: fixtures.PhaseJobID, State: flinkv1beta1.JobStatusRunning}
	return dep
}

// sessionWithJob are the session cluster "session" and its session job "sessjob", running.
func sessionWithJob(t *testing.T) (*flinkv1beta1.FlinkDeployment, *flinkv1beta1.FlinkSessionJob) {
	session := fixtures.NewDeployment(t, ns, "session")
	session.Spec.Job = nil
	session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sessjob"},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{JarURI: "file:///job.jar"}},
		Status: flinkv1beta1.FlinkSessionJobStatus{CommonStatus: flinkv1beta1.CommonStatus{
			JobStatus: flinkv1beta1.JobStatus{JobID: sessionJobID, State: flinkv1beta1.JobStatusRunning}}}}
	return session, job
}

// savepointOf is a manual savepoint resource of the FlinkDeployment name, with our finalizer.
func savepointOf(name string) *flinkv1beta1.FlinkStateSnapshot {
	return &flinkv1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap", Generation: 1, Finalizers: []string{SnapshotFinalizer}},
		Spec: flinkv1beta1.FlinkStateSnapshotSpec{
			JobReference: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: name},
			Savepoint:    &flinkv1beta1.SavepointSpec{Path: "file:///sp/manual"}},
	}
}

// checkpointOf is a manual checkpoint resource of the job resource kind/name.
func checkpointOf(kind flinkv1beta1.JobKind, name string) *flinkv1beta1.FlinkStateSnapshot {
	snap := savepointOf(name)
	snap.Spec.JobReference.Kind, snap.Spec.Savepoint, snap.Spec.Checkpoint = kind, nil, &flinkv1beta1.CheckpointSpec{}
	return snap
}

// newSnapWorld stores snap with the objects given in a fake API server, and a reconciler whose
// JobManager is a fake Flink running both the deployment's and the session's job.
func newSnapWorld(t *testing.T, snap *flinkv1beta1.FlinkStateSnapshot, objs ...client.Object) *snapWorld {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, flinkv1beta1.AddToScheme(scheme))
	w := &snapWorld{t: t, key: client.ObjectKeyFromObject(snap)}
	w.c = fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&flinkv1beta1.FlinkStateSnapshot{}, &flinkv1beta1.FlinkDeployment{}, &flinkv1beta1.FlinkSessionJob{}).
		WithObjects(append(objs, snap)...).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*flinkv1beta1.FlinkStateSnapshot); ok && w.conflicts > 0 {
				w.conflicts--
				return apierrors.NewConflict(schema.GroupResource{Group: "flink.apache.org", Resource: "flinkstatesnapshots"}, obj.GetName(), nil)
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	w.flink = fakeflink.New(t)
	w.flink.SetJob(fixtures.PhaseJobID, "RUNNING")
	w.flink.SetJob(sessionJobID, "RUNNING")
	// The JobManager as the operator sees it: the fake, with each trigger's body and the
	// snapshot's stored status when it arrived.
	jm := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && (strings.HasSuffix(req.URL.Path, "/savepoints") || strings.HasSuffix(req.URL.Path, "/checkpoints")) {
			raw, err := io.ReadAll(req.Body)
			require.NoError(t, err)
			var body map[string]any
			require.NoError(t, json.Unmarshal(raw, &body))
			w.triggers = append(w.triggers, trigger{path: req.URL.Path, body: body, stored: w.stored()})
			req.Body = io.NopCloser(bytes.NewReader(raw))
		}
		w.flink.Config.Handler.ServeHTTP(rw, req)
	}))
	t.Cleanup(jm.Close)
	w.events = record.NewFakeRecorder(100)
	w.r = &FlinkStateSnapshotReconciler{Client: w.c, Scheme: scheme, Recorder: w.events,
		Flink: &clients.Factory{URLTemplate: jm.URL, Timeout: 2 * time.Second}, Intervals: fixtures.FastIntervals(), BaseBackoff: backoff}
	return w
}

func (w *snapWorld) stored() *flinkv1beta1.FlinkStateSnapshot {
	w.t.Helper()
	got := &flinkv1beta1.FlinkStateSnapshot{}
	require.NoError(w.t, w.c.Get(context.Background(), w.key, got))
	return got
}

// gone: the snapshot resource no longer exists.
func (w *snapWorld) gone() bool {
	err := w.c.Get(context.Background(), w.key, &flinkv1beta1.FlinkStateSnapshot{})
	if apierrors.IsNotFound(err) {
		return true
	}
	require.NoError(w.t, err)
	return false
}

// setStatus stores the snapshot's status as a reconcile would find it.
func (w *snapWorld) setStatus(set func(*flinkv1beta1.FlinkStateSnapshotStatus)) {
	w.t.Helper()
	snap := w.stored()
	set(&snap.Status)
	require.NoError(w.t, w.c.Status().Update(context.Background(), snap))
}

// setJobState stores the state of the deployment "orders"'s job.
func (w *snapWorld) setJobState(state flinkv1beta1.JobStatusState) {
	w.t.Helper()
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(w.t, w.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "orders"}, dep))
	dep.Status.JobStatus.State = state
	require.NoError(w.t, w.c.Status().Update(context.Background(), dep))
}

// restartJobManager replaces the JobManager by one that runs the same jobs and knows of no
// savepoint or checkpoint triggered before.
func (w *snapWorld) restartJobManager() {
	w.flink = fakeflink.New(w.t)
	w.flink.SetAutoComplete(false)
	w.flink.SetJob(fixtures.PhaseJobID, "RUNNING")
	w.flink.SetJob(sessionJobID, "RUNNING")
}

// reconcile runs one reconcile of the snapshot.
func (w *snapWorld) reconcile() ctrl.Result {
	w.t.Helper()
	res, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: w.key})
	require.NoError(w.t, err)
	return res
}

// changes are the requests that change something the JobManager received (reads left out).
func (w *snapWorld) changes() []string { return fixtures.Changes(w.flink) }

// recorded are the events recorded so far, as "Type Reason Message".
func (w *snapWorld) recorded() []string { return fixtures.Recorded(w.events) }

// TestMetadataPhase: a new snapshot gets the finalizer and the labels snapshots are filtered by
// before anything else; a conflict is tried again soon, with nothing asked of Flink.
func TestMetadataPhase(t *testing.T) {
	tests := []struct {
		name      string
		snap      func() *flinkv1beta1.FlinkStateSnapshot
		conflicts int
		// want
		labels map[string]string
		result ctrl.Result
	}{
		{name: "savepoint of a deployment", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") },
			labels: map[string]string{jobs.LabelSnapshotType: "SAVEPOINT", jobs.LabelSnapshotTrigger: "MANUAL", jobs.LabelJobReferenceKind: "FlinkDeployment",
				jobs.LabelJobReferenceName: "orders", jobs.LabelSnapshotState: "IN_PROGRESS"},
			result: ctrl.Result{RequeueAfter: fixtures.FastIntervals().ProgressCheck}},
		{name: "periodic checkpoint of a session job: its trigger type kept", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			snap := checkpointOf(flinkv1beta1.JobKindFlinkSessionJob, "sessjob")
			snap.Labels = map[string]string{jobs.LabelSnapshotTrigger: "PERIODIC"}
			return snap
		}, labels: map[string]string{jobs.LabelSnapshotType: "CHECKPOINT", jobs.LabelSnapshotTrigger: "PERIODIC", jobs.LabelJobReferenceKind: "FlinkSessionJob",
			jobs.LabelJobReferenceName: "sessjob", jobs.LabelSnapshotState: "IN_PROGRESS"},
			result: ctrl.Result{RequeueAfter: fixtures.FastIntervals().ProgressCheck}},
		{name: "conflict: tried again soon, nothing triggered", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") },
			conflicts: 1, result: reconciler.RequeueSoon()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := tt.snap()
			snap.Finalizers = nil
			session, job := sessionWithJob(t)
			w := newSnapWorld(t, snap, runningDeployment(t), session, job)
			w.conflicts = tt.conflicts

			res := w.reconcile()
			assert.Equal(t, tt.result, res)
			got := w.stored()
			if tt.labels == nil {
				assert.Empty(t, w.changes(), "nothing is asked of Flink")
				assert.Empty(t, got.Finalizers)
				assert.Empty(t, got.Status.State, "nothing written")
				return
			}
			assert.Equal(t, []string{SnapshotFinalizer}, got.Finalizers)
			assert.Equal(t, tt.labels, got.Labels)
			require.Len(t, w.triggers, 1, "then triggered")
			assert.Equal(t, []string{SnapshotFinalizer}, w.triggers[0].stored.Finalizers, "the finalizer is there before Flink is asked")
		})
	}
}

// TestTriggerPhase: a pending snapshot of a running job gets a trigger id, written as
// IN_PROGRESS before Flink is asked under it (write-ahead), for the job the reference names and
// in the format the spec asks for; a trigger Flink refuses is a failed attempt.
func TestTriggerPhase(t *testing.T) {
	tests := []struct {
		name   string
		snap   func() *flinkv1beta1.FlinkStateSnapshot
		refuse bool // the JobManager does not run the job (404 on the trigger)
		// want
		path   string
		body   map[string]any // the trigger's body, trigger id left out
		state  flinkv1beta1.SnapshotState
		events []string
	}{
		{name: "savepoint of a deployment: canonical, into spec.savepoint.path", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") },
			path: "/jobs/" + fixtures.PhaseJobID + "/savepoints", body: map[string]any{"cancel-job": false, "target-directory": "file:///sp/manual", "formatType": "CANONICAL"},
			state: flinkv1beta1.SnapshotInProgress},
		{name: "native savepoint", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			snap := savepointOf("orders")
			snap.Spec.Savepoint.FormatType = flinkv1beta1.SavepointFormatNative
			return snap
		}, path: "/jobs/" + fixtures.PhaseJobID + "/savepoints", body: map[string]any{"cancel-job": false, "target-directory": "file:///sp/manual", "formatType": "NATIVE"},
			state: flinkv1beta1.SnapshotInProgress},
		{name: "checkpoint of a deployment: full", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			return checkpointOf(flinkv1beta1.JobKindFlinkDeployment, "orders")
		}, path: "/jobs/" + fixtures.PhaseJobID + "/checkpoints", body: map[string]any{"checkpointType": "FULL"}, state: flinkv1beta1.SnapshotInProgress},
		{name: "savepoint of a session job: its job on the session", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			snap := savepointOf("sessjob")
			snap.Spec.JobReference.Kind = flinkv1beta1.JobKindFlinkSessionJob
			return snap
		}, path: "/jobs/" + sessionJobID + "/savepoints", body: map[string]any{"cancel-job": false, "target-directory": "file:///sp/manual", "formatType": "CANONICAL"},
			state: flinkv1beta1.SnapshotInProgress},
		{name: "refused by Flink: a failed attempt, retried", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") }, refuse: true,
			path: "/jobs/" + fixtures.PhaseJobID + "/savepoints", body: map[string]any{"cancel-job": false, "target-directory": "file:///sp/manual", "formatType": "CANONICAL"},
			state: flinkv1beta1.SnapshotTriggerPending, events: []string{"Warning SnapshotError SAVEPOINT attempt 1 failed, retrying: trigger: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			session, job := sessionWithJob(t)
			w := newSnapWorld(t, tt.snap(), runningDeployment(t), session, job)
			if tt.refuse {
				w.flink.SetJob(fixtures.PhaseJobID, "")
			}

			res := w.reconcile()
			assert.Equal(t, ctrl.Result{RequeueAfter: fixtures.FastIntervals().ProgressCheck}, res, "looked at again at the progress-check interval")
			require.Len(t, w.triggers, 1, "one trigger")
			tr := w.triggers[0]
			assert.Equal(t, tt.path, tr.path, "the referenced job")
			triggerID := tr.body["triggerId"]
			delete(tr.body, "triggerId")
			assert.Equal(t, tt.body, tr.body)
			assert.Equal(t, flinkv1beta1.SnapshotInProgress, tr.stored.Status.State, "write-ahead: IN_PROGRESS before Flink was asked")
			assert.Equal(t, triggerID, tr.stored.Status.TriggerID, "write-ahead: the trigger id recorded before Flink was asked")
			assert.NotEmpty(t, tr.stored.Status.TriggerTimestamp)

			got := w.stored()
			st := got.Status
			assert.Equal(t, tt.state, st.State)
			assert.Equal(t, string(tt.state), got.Labels[jobs.LabelSnapshotState], "the state label follows")
			events := w.recorded()
			require.Len(t, events, len(tt.events))
			for i, e := range tt.events {
				assert.True(t, strings.HasPrefix(events[i], e), "event %q, want %q…", events[i], e)
			}
			if tt.refuse {
				assert.Equal(t, int32(1), st.Failures)
				assert.Empty(t, st.TriggerID, "the next attempt gets a new trigger id")
				assert.Contains(t, st.Error, "trigger: ")
				return
			}
			assert.Equal(t, triggerID, st.TriggerID)
			assert.Empty(t, st.Error)
			assert.Zero(t, st.Failures)
		})
	}
}

// TestProgressPhase: an in-flight snapshot is COMPLETED with the path Flink reports, looked at
// again while Flink is not done, asked again under the same trigger id when Flink forgot it, and
// a failed attempt otherwise: retried after its back-off, FAILED past backoffLimit.
func TestProgressPhase(t *testing.T) {
	failing := func(w *snapWorld, id string) { w.flink.CompleteSavepoint(fixtures.PhaseJobID, id, "disk full") }
	tests := []struct {
		name  string
		snap  func() *flinkv1beta1.FlinkStateSnapshot
		flink func(w *snapWorld, triggerID string) // what Flink does between the two reconciles
		// want of the second reconcile
		result    ctrl.Result
		state     flinkv1beta1.SnapshotState
		path      string // "": none; "location": where Flink put the savepoint; "checkpoint": the checkpoint's
		retrigger bool
		failures  int32
		event     string
		// conditions: Progressing and Degraded as status/reason
		conditions string
	}{
		{name: "completed: COMPLETED with its path", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") },
			flink: func(w *snapWorld, id string) { w.flink.CompleteSavepoint(fixtures.PhaseJobID, id, "") },
			state: flinkv1beta1.SnapshotCompleted, path: "location", event: "Normal SnapshotCompleted SAVEPOINT completed: file:/flink/savepoints/savepoint-",
			conditions: "Progressing=False/Done Degraded=False/Healthy"},
		{name: "checkpoint completed", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			return checkpointOf(flinkv1beta1.JobKindFlinkDeployment, "orders")
		},
			state: flinkv1beta1.SnapshotCompleted, path: "checkpoint", event: "Normal SnapshotCompleted CHECKPOINT completed: " + fakeflink.CheckpointPath(fixtures.PhaseJobID),
			conditions: "Progressing=False/Done Degraded=False/Healthy"},
		{name: "not done yet: looked at again", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") },
			result: ctrl.Result{RequeueAfter: fixtures.FastIntervals().ProgressCheck}, state: flinkv1beta1.SnapshotInProgress,
			conditions: "Progressing=True/Savepointing Degraded=False/Healthy"},
		{name: "Flink forgot the trigger: asked again under the same id", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") },
			flink:  func(w *snapWorld, _ string) { w.restartJobManager() },
			result: ctrl.Result{RequeueAfter: fixtures.FastIntervals().ProgressCheck}, state: flinkv1beta1.SnapshotInProgress, retrigger: true,
			conditions: "Progressing=True/Savepointing Degraded=False/Healthy"},
		{name: "failed, no backoffLimit: retried after the back-off", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") },
			flink: failing, result: ctrl.Result{RequeueAfter: backoff}, state: flinkv1beta1.SnapshotTriggerPending, failures: 1,
			event:      "Warning SnapshotError SAVEPOINT attempt 1 failed, retrying: SAVEPOINT failed: ",
			conditions: "Progressing=True/Savepointing Degraded=True/SnapshotRetrying"},
		{name: "failed, backoffLimit 1 not reached: retried", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			snap := savepointOf("orders")
			snap.Spec.BackoffLimit = fixtures.Ptr(int32(1))
			return snap
		}, flink: failing, result: ctrl.Result{RequeueAfter: backoff}, state: flinkv1beta1.SnapshotTriggerPending, failures: 1,
			event:      "Warning SnapshotError SAVEPOINT attempt 1 failed, retrying: ",
			conditions: "Progressing=True/Savepointing Degraded=True/SnapshotRetrying"},
		{name: "failed past backoffLimit 0: FAILED", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			snap := savepointOf("orders")
			snap.Spec.BackoffLimit = fixtures.Ptr(int32(0))
			return snap
		}, flink: failing, state: flinkv1beta1.SnapshotFailed, failures: 1, event: "Warning SnapshotError SAVEPOINT failed after 1 attempts: ",
			conditions: "Progressing=False/Done Degraded=True/SnapshotFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newSnapWorld(t, tt.snap(), runningDeployment(t))
			w.flink.SetAutoComplete(false)
			w.reconcile() // triggered
			require.Len(t, w.triggers, 1)
			triggerID := w.stored().Status.TriggerID
			require.NotEmpty(t, triggerID)
			w.recorded()
			if tt.flink != nil {
				tt.flink(w, triggerID)
			}

			res := w.reconcile()
			assert.Equal(t, tt.result, res)
			got := w.stored()
			st := got.Status
			assert.Equal(t, tt.state, st.State)
			assert.Equal(t, string(tt.state), got.Labels[jobs.LabelSnapshotState])
			assert.Equal(t, tt.failures, st.Failures)
			var conds []string
			for _, typ := range []string{"Progressing", "Degraded"} {
				if c := meta.FindStatusCondition(st.Conditions, typ); assert.NotNil(t, c, typ) {
					conds = append(conds, fmt.Sprintf("%s=%s/%s", typ, c.Status, c.Reason))
					assert.Equal(t, got.Generation, c.ObservedGeneration, typ)
				}
			}
			assert.Equal(t, tt.conditions, strings.Join(conds, " "))
			switch tt.path {
			case "":
				assert.Empty(t, st.Path)
			case "location":
				assert.Equal(t, w.flink.SavepointLocation(fixtures.PhaseJobID, triggerID), st.Path, "the path Flink reports")
			case "checkpoint":
				assert.Equal(t, fakeflink.CheckpointPath(fixtures.PhaseJobID), st.Path, "the checkpoint's path Flink reports")
			}
			if tt.retrigger {
				require.Len(t, w.triggers, 2, "asked again")
				assert.Equal(t, triggerID, w.triggers[1].body["triggerId"], "under the same trigger id")
				assert.Equal(t, w.triggers[0].path, w.triggers[1].path)
			} else {
				assert.Len(t, w.triggers, 1, "not triggered again")
			}
			events := w.recorded()
			if tt.event == "" {
				assert.Empty(t, events)
				return
			}
			require.Len(t, events, 1)
			assert.True(t, strings.HasPrefix(events[0], tt.event), "event %q, want %q…", events[0], tt.event)
			if st.State == flinkv1beta1.SnapshotCompleted {
				assert.Empty(t, st.Error)
				assert.NotEmpty(t, st.ResultTimestamp)
				ready := meta.FindStatusCondition(st.Conditions, "Ready")
				require.NotNil(t, ready)
				assert.Equal(t, metav1.ConditionTrue, ready.Status)
				return
			}
			assert.Empty(t, st.TriggerID, "the next attempt gets a new trigger id")
			assert.Contains(t, st.Error, "disk full")
		})
	}
}

// TestAbandonAndJobGonePhases: a pending snapshot whose job does not run (its resource missing,
// or its job not RUNNING) is ABANDONED without asking Flink; one in flight whose job went away
// counts a failed attempt, retried after its back-off.
func TestAbandonAndJobGonePhases(t *testing.T) {
	tests := []struct {
		name     string
		snap     func() *flinkv1beta1.FlinkStateSnapshot
		jobState flinkv1beta1.JobStatusState // the deployment's job ("": RUNNING)
		inFlight bool                        // triggered first, while the job ran
		// want
		state  flinkv1beta1.SnapshotState
		err    string
		result ctrl.Result
		event  string
	}{
		{name: "deployment not found: ABANDONED", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("missing") },
			state: flinkv1beta1.SnapshotAbandoned, err: "FlinkDeployment missing not found", event: "Warning SnapshotAbandoned FlinkDeployment missing not found"},
		{name: "deployment's job not running: ABANDONED", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") },
			jobState: flinkv1beta1.JobStatusFailed, state: flinkv1beta1.SnapshotAbandoned, err: "the job of FlinkDeployment orders is not running",
			event: "Warning SnapshotAbandoned the job of FlinkDeployment orders is not running"},
		{name: "session job not found: ABANDONED", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			return checkpointOf(flinkv1beta1.JobKindFlinkSessionJob, "nojob")
		}, state: flinkv1beta1.SnapshotAbandoned, err: "FlinkSessionJob nojob not found", event: "Warning SnapshotAbandoned FlinkSessionJob nojob not found"},
		{name: "no jobReference: ABANDONED", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			snap := savepointOf("orders")
			snap.Spec.JobReference = nil
			return snap
		}, state: flinkv1beta1.SnapshotAbandoned, err: "spec.jobReference is required unless spec.savepoint.alreadyExists is true",
			event: "Warning SnapshotAbandoned spec.jobReference is required"},
		{name: "in flight, job stopped: a failed attempt", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") },
			inFlight: true, jobState: flinkv1beta1.JobStatusCanceled, state: flinkv1beta1.SnapshotTriggerPending, result: ctrl.Result{RequeueAfter: backoff},
			err:   "the job went away while the snapshot was in progress: the job of FlinkDeployment orders is not running",
			event: "Warning SnapshotError SAVEPOINT attempt 1 failed, retrying: the job went away while the snapshot was in progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newSnapWorld(t, tt.snap(), runningDeployment(t))
			w.flink.SetAutoComplete(false)
			if tt.inFlight {
				w.reconcile()
				require.Len(t, w.triggers, 1)
				w.recorded()
			}
			if tt.jobState != "" {
				w.setJobState(tt.jobState)
			}
			before := len(w.changes())

			res := w.reconcile()
			assert.Equal(t, tt.result, res)
			assert.Len(t, w.changes(), before, "nothing asked of Flink")
			got := w.stored()
			assert.Equal(t, tt.state, got.Status.State)
			assert.Equal(t, string(tt.state), got.Labels[jobs.LabelSnapshotState])
			assert.Equal(t, tt.err, got.Status.Error)
			events := w.recorded()
			require.Len(t, events, 1)
			assert.True(t, strings.HasPrefix(events[0], tt.event), "event %q, want %q…", events[0], tt.event)
			if tt.inFlight {
				assert.Equal(t, int32(1), got.Status.Failures)
				assert.Empty(t, got.Status.TriggerID)
			}
		})
	}
}

// TestBackoffPhase: a retry waits until the back-off after its last failure (doubling with each
// failure) has passed, without asking Flink or looking at the job; then it is triggered.
func TestBackoffPhase(t *testing.T) {
	tests := []struct {
		name     string
		failures int32
		failedAt time.Duration // before now
		dep      string        // the snapshot's deployment
		// want
		wait      time.Duration // about; 0: triggered
		triggered bool
		noState   bool // the status records failures but no state
	}{
		{name: "1 failure, 1 s ago: waits 9 s", failures: 1, failedAt: time.Second, dep: "orders", wait: backoff - time.Second},
		{name: "2 failures, 1 s ago: waits 19 s", failures: 2, failedAt: time.Second, dep: "orders", wait: 2*backoff - time.Second},
		{name: "job gone while backing off: still waits", failures: 1, failedAt: time.Second, dep: "missing", wait: backoff - time.Second},
		{name: "1 failure, back-off passed: triggered", failures: 1, failedAt: backoff + time.Second, dep: "orders", triggered: true},
		{name: "no state recorded: waits as TRIGGER_PENDING", failures: 1, failedAt: time.Second, dep: "orders", wait: backoff - time.Second, noState: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newSnapWorld(t, savepointOf(tt.dep), runningDeployment(t))
			w.setStatus(func(st *flinkv1beta1.FlinkStateSnapshotStatus) {
				st.State, st.Failures, st.Error = flinkv1beta1.SnapshotTriggerPending, tt.failures, "disk full"
				if tt.noState {
					st.State = ""
				}
				st.ResultTimestamp = flinkv1beta1.FormatSnapshotTime(time.Now().Add(-tt.failedAt))
			})

			res := w.reconcile()
			got := w.stored().Status
			if tt.triggered {
				assert.Equal(t, ctrl.Result{RequeueAfter: fixtures.FastIntervals().ProgressCheck}, res)
				require.Len(t, w.triggers, 1)
				assert.Equal(t, flinkv1beta1.SnapshotInProgress, got.State)
				assert.Equal(t, tt.failures, got.Failures, "failures are kept across attempts")
				return
			}
			assert.InDelta(t, tt.wait, res.RequeueAfter, float64(500*time.Millisecond), "looked at again when the back-off ends")
			assert.Empty(t, w.flink.Requests(), "the JobManager is not asked")
			assert.Empty(t, w.recorded())
			assert.Equal(t, flinkv1beta1.SnapshotTriggerPending, got.State)
			assert.Equal(t, "disk full", got.Error, "the last failure stays")
		})
	}
}

// TestRecordExistingPhase: a record of an existing savepoint (alreadyExists) is COMPLETED with
// its path at once, needing no job and asking Flink nothing; its trigger time is when it was
// recorded unless given.
func TestRecordExistingPhase(t *testing.T) {
	tests := []struct {
		name     string
		ref      *flinkv1beta1.JobReference
		failures int32 // a pending retry
		// want
		result ctrl.Result
	}{
		{name: "of a running job", ref: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: "orders"}},
		{name: "without a jobReference"},
		{name: "of a missing job, backing off", ref: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: "missing"}, failures: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := savepointOf("orders")
			snap.Spec.JobReference = tt.ref
			snap.Spec.Savepoint = &flinkv1beta1.SavepointSpec{Path: "file:///sp/savepoint-elsewhere", AlreadyExists: fixtures.Ptr(true)}
			w := newSnapWorld(t, snap, runningDeployment(t))
			if tt.failures > 0 {
				w.setStatus(func(st *flinkv1beta1.FlinkStateSnapshotStatus) {
					st.Failures, st.ResultTimestamp = tt.failures, flinkv1beta1.FormatSnapshotTime(time.Now())
				})
			}

			res := w.reconcile()
			assert.Equal(t, tt.result, res)
			assert.Empty(t, w.flink.Requests(), "the JobManager is not asked")
			assert.Empty(t, w.recorded())
			got := w.stored()
			assert.Equal(t, flinkv1beta1.SnapshotCompleted, got.Status.State)
			assert.Equal(t, "COMPLETED", got.Labels[jobs.LabelSnapshotState])
			assert.Equal(t, "file:///sp/savepoint-elsewhere", got.Status.Path)
			assert.NotEmpty(t, got.Status.ResultTimestamp)
			assert.Equal(t, got.Status.ResultTimestamp, got.Status.TriggerTimestamp, "taken when recorded")
		})
	}
}

// TestFinalPhase: COMPLETED, FAILED and ABANDONED snapshots are left as they are: Flink is not
// asked, nothing is retried.
func TestFinalPhase(t *testing.T) {
	for _, state := range []flinkv1beta1.SnapshotState{flinkv1beta1.SnapshotCompleted, flinkv1beta1.SnapshotFailed, flinkv1beta1.SnapshotAbandoned} {
		t.Run(string(state), func(t *testing.T) {
			w := newSnapWorld(t, savepointOf("orders"), runningDeployment(t))
			w.setStatus(func(st *flinkv1beta1.FlinkStateSnapshotStatus) {
				st.State, st.Path, st.Failures, st.TriggerID = state, "file:///sp/savepoint-1", 1, "0123456789abcdef0123456789abcdef"
			})

			res := w.reconcile()
			assert.Equal(t, ctrl.Result{}, res)
			assert.Empty(t, w.flink.Requests(), "the JobManager is not asked")
			assert.Empty(t, w.recorded())
			got := w.stored()
			assert.Equal(t, state, got.Status.State)
			assert.Equal(t, string(state), got.Labels[jobs.LabelSnapshotState])
			assert.Equal(t, int32(1), got.Status.Failures)
			assert.Equal(t, "file:///sp/savepoint-1", got.Status.Path)
		})
	}
}

// TestDeletionPhases: a deleted savepoint with disposeOnDelete (the default) is disposed of
// through its job's cluster before the finalizer goes; one still being written is followed to
// its end first; without a running job the deletion waits while the job's resource exists.
// Snapshots not to dispose of go at once; one without our finalizer is left alone.
func TestDeletionPhases(t *testing.T) {
	const path = "file:///sp/savepoint-1"
	completed := func(st *flinkv1beta1.FlinkStateSnapshotStatus) {
		st.State, st.Path = flinkv1beta1.SnapshotCompleted, path
	}
	tests := []struct {
		name       string
		snap       func() *flinkv1beta1.FlinkStateSnapshot
		status     func(*flinkv1beta1.FlinkStateSnapshotStatus)
		jobState   flinkv1beta1.JobStatusState // the deployment's job ("": RUNNING)
		inProgress bool                        // triggered before the deletion, completed after the first reconcile
		// want
		disposed []string
		results  []ctrl.Result // of the reconciles while the resource stays
		gone     bool
		events   []string // reasons
	}{
		{name: "completed savepoint: disposed, then gone", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") }, status: completed,
			disposed: []string{path}, results: nil, gone: true, events: []string{"SnapshotDisposed"}},
		{name: "disposeOnDelete false: gone, kept", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			snap := savepointOf("orders")
			snap.Spec.Savepoint.DisposeOnDelete = fixtures.Ptr(false)
			return snap
		}, status: completed, gone: true},
		{name: "checkpoint: gone, nothing disposed", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			return checkpointOf(flinkv1beta1.JobKindFlinkDeployment, "orders")
		}, status: completed, gone: true},
		{name: "failed savepoint: gone, nothing to dispose", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") },
			status: func(st *flinkv1beta1.FlinkStateSnapshotStatus) { st.State = flinkv1beta1.SnapshotFailed }, gone: true},
		{name: "job not running: waits to dispose", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") }, status: completed,
			jobState: flinkv1beta1.JobStatusSuspended, results: []ctrl.Result{{RequeueAfter: fixtures.FastIntervals().Reconcile}}, events: []string{ReasonSnapshotError}},
		{name: "job's resource gone: gone, nothing to dispose with", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("missing") },
			status: completed, gone: true},
		{name: "in progress: waits, then disposed of once completed", snap: func() *flinkv1beta1.FlinkStateSnapshot { return savepointOf("orders") },
			inProgress: true, results: []ctrl.Result{{RequeueAfter: fixtures.FastIntervals().ProgressCheck}}, gone: true,
			events: []string{ReasonSnapshotDeletionWaits, ReasonSnapshotCompleted, "SnapshotDisposed"}},
		{name: "not our finalizer: left alone", snap: func() *flinkv1beta1.FlinkStateSnapshot {
			snap := savepointOf("orders")
			snap.Finalizers = []string{"example.com/keep"}
			return snap
		}, status: completed, results: []ctrl.Result{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newSnapWorld(t, tt.snap(), runningDeployment(t))
			w.flink.SetAutoComplete(false)
			if tt.inProgress {
				w.reconcile()
				require.Len(t, w.triggers, 1)
				w.recorded()
			}
			if tt.status != nil {
				w.setStatus(tt.status)
			}
			if tt.jobState != "" {
				w.setJobState(tt.jobState)
			}
			before := w.stored()
			require.NoError(t, w.c.Delete(context.Background(), before))

			var results []ctrl.Result
			for i := 0; i < 3 && !w.gone(); i++ {
				if i == 1 && tt.inProgress {
					w.flink.CompleteSavepoint(fixtures.PhaseJobID, before.Status.TriggerID, "")
				}
				res := w.reconcile()
				if !w.gone() {
					results = append(results, res)
				}
				if i == 0 && !tt.inProgress {
					break
				}
			}
			assert.Equal(t, tt.gone, w.gone())
			assert.Equal(t, tt.results, results)
			wantDisposed := tt.disposed
			if tt.inProgress {
				wantDisposed = []string{w.flink.SavepointLocation(fixtures.PhaseJobID, before.Status.TriggerID)}
			}
			assert.Equal(t, wantDisposed, w.flink.Disposed(), "savepoints disposed of")
			var reasons []string
			for _, e := range w.recorded() {
				reasons = append(reasons, strings.Fields(e)[1])
			}
			assert.Equal(t, tt.events, reasons)
			if !tt.gone {
				got := w.stored()
				assert.Equal(t, before.Finalizers, got.Finalizers, "the finalizers stay")
				assert.Equal(t, before.Status.State, got.Status.State)
			}
		})
	}
}

// TestStatePhasesOrder: which of statePhases acts, by the state recorded and the job found (what
// the state switch of the reconcile decided before it was a phase list).
func TestStatePhasesOrder(t *testing.T) {
	failedJustNow := func(st *flinkv1beta1.FlinkStateSnapshotStatus) {
		st.State, st.Failures, st.ResultTimestamp = flinkv1beta1.SnapshotTriggerPending, 1, flinkv1beta1.FormatSnapshotTime(time.Now())
	}
	inFlight := func(st *flinkv1beta1.FlinkStateSnapshotStatus) {
		st.State, st.TriggerID = flinkv1beta1.SnapshotInProgress, "0123456789abcdef0123456789abcdef"
	}
	tests := []struct {
		name   string
		dep    string // the deployment the snapshot references
		exists bool   // spec.savepoint.alreadyExists
		status func(*flinkv1beta1.FlinkStateSnapshotStatus)
		// want: the phase that acted
		acted string
	}{
		{name: "completed, job gone: final", dep: "missing", acted: "final",
			status: func(st *flinkv1beta1.FlinkStateSnapshotStatus) { st.State = flinkv1beta1.SnapshotCompleted }},
		{name: "failed, job running: final", dep: "orders", acted: "final",
			status: func(st *flinkv1beta1.FlinkStateSnapshotStatus) { st.State = flinkv1beta1.SnapshotFailed }},
		{name: "new record of an existing savepoint, job gone: recordExisting", dep: "missing", exists: true, acted: "recordExisting"},
		{name: "record of an existing savepoint backing off: recordExisting", dep: "orders", exists: true, status: failedJustNow, acted: "recordExisting"},
		{name: "backing off, job gone: backoff", dep: "missing", status: failedJustNow, acted: "backoff"},
		{name: "new, job gone: abandon", dep: "missing", acted: "abandon"},
		{name: "new, job running: trigger", dep: "orders", acted: "trigger"},
		{name: "in flight, job gone: jobGone", dep: "missing", status: inFlight, acted: "jobGone"},
		{name: "in flight, job running: progress", dep: "orders", status: inFlight, acted: "progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := savepointOf(tt.dep)
			snap.Spec.Savepoint.AlreadyExists = fixtures.Ptr(tt.exists)
			w := newSnapWorld(t, snap, runningDeployment(t))
			if tt.status != nil {
				w.setStatus(tt.status)
			}
			s := newSnapshotScope(w.stored(), time.Now())
			defer s.close()
			require.NoError(t, w.r.ensureMetadata(context.Background(), s.snap), "what the metadata phase does first")
			s.original = s.snap.DeepCopy()
			var acted string
			for _, ph := range w.r.statePhases() {
				out, err := ph.Run(context.Background(), s)
				require.NoError(t, err, ph.Name)
				if out.Done {
					acted = ph.Name
					break
				}
			}
			assert.Equal(t, tt.acted, acted)
		})
	}
}
