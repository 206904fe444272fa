package flinksessionjob

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/jarstage"
	"github.com/flink-operator/flink-operator/test/fakeflink"
)

// The phases of a FlinkSessionJob reconcile, each run alone on a controller-runtime fake client
// with test/fakeflink as the session's JobManager: no manager, no API server, no polling. A test
// sets up the status a reconcile would find, runs one phase (or the phase list) once per
// reconcile, and asserts the requests the JobManager received and the status written.

// jobPhaseWorld is one test's fake API server, fake session JobManager and reconciler.
type jobPhaseWorld struct {
	t      *testing.T
	c      client.Client
	flink  *fakeflink.Server
	r      *FlinkSessionJobReconciler
	events *record.FakeRecorder
	job    *flinkv1beta1.FlinkSessionJob
	// atRun is the stored status of the session job each time a jar was run: what an operator
	// restarted right then would find.
	atRun []flinkv1beta1.FlinkSessionJobStatus
}

// deployedSessionJob is a session job whose spec (with the upgrade mode and job configuration
// given) is deployed, its job RUNNING on a ready session, and the status says so.
func deployedSessionJob(t *testing.T, mode flinkv1beta1.UpgradeMode, conf map[string]string) *flinkv1beta1.FlinkSessionJob {
	t.Helper()
	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o600))
	job := &flinkv1beta1.FlinkSessionJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "sjphases", Name: "orders", UID: "7d1e2c40-5b4e-4f59-9f43-3a4c6e1f0002", Generation: 1,
			Finalizers: []string{SessionJobFinalizer}},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", FlinkConfiguration: flinkv1beta1.NewFlinkConfiguration(conf),
			Job: &flinkv1beta1.JobSpec{JarURI: "file://" + jar, Parallelism: 2, UpgradeMode: mode, State: flinkv1beta1.JobStateRunning}},
	}
	raw, err := flinkv1beta1.EncodeReconciledSpec(job.Spec, false)
	require.NoError(t, err)
	job.Status.JobStatus = flinkv1beta1.JobStatus{JobID: fixtures.PhaseJobID, State: flinkv1beta1.JobStatusRunning}
	job.Status.ReconciliationStatus = flinkv1beta1.ReconciliationStatus{LastReconciledSpec: raw, LastStableSpec: raw,
		State: flinkv1beta1.ReconciliationDeployed, ReconciliationTimestamp: time.Now().Add(-time.Hour).UnixMilli()}
	job.Status.ObservedGeneration = 1
	return job
}

// newJobPhaseWorld stores job and its ready session cluster in a fake API server, and a
// reconciler whose session JobManager is a fake Flink running the job in the state its status
// records ("" for none).
func newJobPhaseWorld(t *testing.T, job *flinkv1beta1.FlinkSessionJob, running string) *jobPhaseWorld {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, flinkv1beta1.AddToScheme(scheme))
	session := fixtures.NewDeployment(t, job.Namespace, job.Spec.DeploymentName)
	session.Spec.Job = nil
	session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&flinkv1beta1.FlinkSessionJob{}, &flinkv1beta1.FlinkDeployment{}, &flinkv1beta1.FlinkStateSnapshot{}).
		WithObjects(job, session).Build()
	w := &jobPhaseWorld{t: t, c: c, job: job}
	w.flink = fakeflink.New(t)
	if running != "" {
		w.flink.SetJob(fixtures.PhaseJobID, running)
	}
	// The JobManager as the operator sees it: the fake, with the stored status taken at each run.
	jm := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/run") {
			w.atRun = append(w.atRun, w.stored().Status)
		}
		w.flink.Config.Handler.ServeHTTP(rw, req)
	}))
	t.Cleanup(jm.Close)
	// The jar is staged within the reconcile that asks for it.
	stage := jarstage.New(jarstage.Options{Settle: 10 * time.Second})
	t.Cleanup(stage.Stop)
	w.events = record.NewFakeRecorder(100)
	w.r = &FlinkSessionJobReconciler{Client: c, Scheme: scheme, Recorder: w.events,
		Flink:     &clients.Factory{URLTemplate: jm.URL, Timeout: 2 * time.Second},
		Artifacts: &artifact.Fetcher{MaxSize: 1 << 20, LocalDir: "/"}, Intervals: fixtures.FastIntervals(), JarStage: stage}
	return w
}

// setSessionConf sets options in the session cluster's configuration (what a session job's
// deletion is configured by).
func (w *jobPhaseWorld) setSessionConf(conf map[string]string) {
	w.t.Helper()
	session := &flinkv1beta1.FlinkDeployment{}
	key := client.ObjectKey{Namespace: w.job.Namespace, Name: w.job.Spec.DeploymentName}
	require.NoError(w.t, w.c.Get(context.Background(), key, session))
	flat, err := session.Spec.FlinkConfiguration.Flatten()
	require.NoError(w.t, err)
	for k, v := range conf {
		flat[k] = v
	}
	session.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(flat)
	require.NoError(w.t, w.c.Update(context.Background(), session))
}

func (w *jobPhaseWorld) stored() *flinkv1beta1.FlinkSessionJob {
	w.t.Helper()
	got := &flinkv1beta1.FlinkSessionJob{}
	require.NoError(w.t, w.c.Get(context.Background(), client.ObjectKeyFromObject(w.job), got))
	return got
}

// pass is a reconcile's input up to the phases, read from the fake API server: the stored job,
// its session connected and the job observed on it, reconciled to its own spec unless desired
// is given.
func (w *jobPhaseWorld) pass(desired *flinkv1beta1.FlinkSessionJobSpec) *jobPass {
	w.t.Helper()
	s := NewJobScope(w.stored(), nil)
	w.t.Cleanup(func() { s.flink.Close() })
	require.NoError(w.t, w.r.connect(context.Background(), s))
	w.r.observeJob(context.Background(), s)
	if desired == nil {
		desired = s.job.Spec.DeepCopy()
	}
	return &jobPass{jobScope: s, desired: desired}
}

// reconcile runs one reconcile of the phase list on the stored job (its spec set to desired
// first when given) and writes the status.
func (w *jobPhaseWorld) reconcile(desired *flinkv1beta1.FlinkSessionJobSpec) ctrl.Result {
	w.t.Helper()
	if desired != nil {
		stored := w.stored()
		stored.Spec = *desired
		stored.Generation++
		require.NoError(w.t, w.c.Update(context.Background(), stored))
	}
	p := w.pass(nil)
	res, err := jobs.RunPhases(context.Background(), p, w.r.jobSpecPhases())
	require.NoError(w.t, err)
	require.NoError(w.t, w.r.finishJob(context.Background(), p.jobScope, nil))
	return res
}

// cancelShownLongEnough moves a recorded cancel back by jobs.CancellingVisible, as if that
// long had passed since CANCELLING was recorded: the next step looks at the job again.
func (w *jobPhaseWorld) cancelShownLongEnough() {
	w.t.Helper()
	stored := w.stored()
	js := &stored.Status.JobStatus
	if js.State != flinkv1beta1.JobStatusCancelling {
		return
	}
	since, err := strconv.ParseInt(js.UpdateTime, 10, 64)
	require.NoError(w.t, err)
	js.UpdateTime = fmt.Sprint(time.UnixMilli(since).Add(-jobs.CancellingVisible).UnixMilli())
	require.NoError(w.t, w.c.Status().Update(context.Background(), stored))
}

// changes are the requests that change something the JobManager received (reads left out).
func (w *jobPhaseWorld) changes() []string { return fixtures.Changes(w.flink) }

// recorded are the events recorded so far, as "Type Reason Message".
func (w *jobPhaseWorld) recorded() []string { return fixtures.Recorded(w.events) }

// runChanges are the change requests of one submission: the jar uploaded, run and deleted.
var runChanges = []string{"POST /jars/upload", "POST /jars/{jar}/run", "DELETE /jars/{jar}"}

// normalizedChanges are changes() with jar ids replaced by {jar}.
func (w *jobPhaseWorld) normalizedChanges() []string {
	var out []string
	for _, c := range w.changes() {
		if parts := strings.Split(c, "/"); len(parts) >= 3 && parts[1] == "jars" && parts[2] != "upload" {
			parts[2] = "{jar}"
			c = strings.Join(parts, "/")
		}
		out = append(out, c)
	}
	return out
}

// TestFirstSubmissionPhase: a new session job is submitted under a job id recorded first, from
// initialSavepointPath; created suspended, nothing runs.
func TestFirstSubmissionPhase(t *testing.T) {
	tests := []struct {
		name    string
		state   flinkv1beta1.JobState
		initial string
		// want
		submitted bool
		status    flinkv1beta1.JobStatusState
	}{
		{name: "new job: submitted", state: flinkv1beta1.JobStateRunning, submitted: true, status: flinkv1beta1.JobStatusReconciling},
		{name: "from initialSavepointPath", state: flinkv1beta1.JobStateRunning, initial: "file:///sp/savepoint-initial",
			submitted: true, status: flinkv1beta1.JobStatusReconciling},
		{name: "created suspended: recorded, nothing runs", state: flinkv1beta1.JobStateSuspended},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := deployedSessionJob(t, flinkv1beta1.UpgradeModeSavepoint, nil)
			job.Spec.Job.State, job.Spec.Job.InitialSavepointPath = tt.state, tt.initial
			job.Status = flinkv1beta1.FlinkSessionJobStatus{}
			w := newJobPhaseWorld(t, job, "")

			res := w.reconcile(nil)
			st := w.stored().Status
			assert.Equal(t, flinkv1beta1.ReconciliationDeployed, st.ReconciliationStatus.State)
			assert.NotEmpty(t, st.ReconciliationStatus.LastReconciledSpec, "the spec is recorded")
			if !tt.submitted {
				assert.Empty(t, w.changes(), "nothing is asked of the session")
				assert.Empty(t, st.JobStatus.JobID)
				assert.Zero(t, res.RequeueAfter)
				return
			}
			assert.Equal(t, runChanges, w.normalizedChanges(), "the jar is uploaded, run and deleted")
			runs := w.flink.Runs()
			require.Len(t, runs, 1)
			assert.Equal(t, st.JobStatus.JobID, runs[0].JobID, "run under the recorded job id")
			assert.Equal(t, tt.initial, runs[0].SavepointPath, "what it restores")
			assert.Equal(t, 2, runs[0].Parallelism)
			assert.Equal(t, tt.status, st.JobStatus.State)
			require.Len(t, w.atRun, 1)
			assert.Equal(t, runs[0].JobID, w.atRun[0].JobStatus.JobID, "write-ahead: the job id was recorded before the run")
			assert.Equal(t, tt.initial, w.atRun[0].JobStatus.UpgradeSavepointPath, "write-ahead: the restore path was recorded before the run")
			assert.Equal(t, flinkv1beta1.ReconciliationDeployed, w.atRun[0].ReconciliationStatus.State)
			assert.Equal(t, "RUNNING", w.flink.Job(runs[0].JobID))
			assert.True(t, fixtures.EventWithReason(w.recorded(), reconciler.ReasonSubmit))
		})
	}
}

// TestJobUpgradeStopPhases: a spec change stops the running job as its upgrade mode says and
// submits the new spec from what the stop kept, recorded before the run.
func TestJobUpgradeStopPhases(t *testing.T) {
	tests := []struct {
		name string
		mode flinkv1beta1.UpgradeMode
		// want: the change requests, by reconcile; whether the stop's savepoint is restored.
		requests [][]string
		restored bool
	}{
		{name: "savepoint: stop-with-savepoint, restored", mode: flinkv1beta1.UpgradeModeSavepoint,
			requests: [][]string{{"POST /jobs/" + fixtures.PhaseJobID + "/stop"}, runChanges}, restored: true},
		// The cancel is a step of its own (CANCELLING recorded, as upstream), the run the next.
		{name: "stateless: cancelled, nothing restored", mode: flinkv1beta1.UpgradeModeStateless,
			requests: [][]string{{"PATCH /jobs/" + fixtures.PhaseJobID}, runChanges}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := deployedSessionJob(t, tt.mode, map[string]string{"state.savepoints.dir": "file:///sp"})
			w := newJobPhaseWorld(t, job, "RUNNING")

			var seen int
			for i, want := range tt.requests {
				var desired *flinkv1beta1.FlinkSessionJobSpec
				if i == 0 {
					desired = w.stored().Spec.DeepCopy()
					desired.Job.Parallelism = 4
				} else {
					w.cancelShownLongEnough()
				}
				res := w.reconcile(desired)
				assert.Positive(t, res.RequeueAfter, "reconcile %d looks again", i)
				all := w.normalizedChanges()
				assert.Equal(t, want, append([]string(nil), all[seen:]...), "reconcile %d: requests to the JobManager", i)
				seen = len(all)
			}
			st := w.stored().Status
			assert.Equal(t, flinkv1beta1.ReconciliationDeployed, st.ReconciliationStatus.State)
			runs := w.flink.Runs()
			require.Len(t, runs, 1, "the new spec is submitted once")
			// As upstream's applyJobConfig: a cancelled job's checkpoints are kept for the run
			// that restores them, unless the job or its session says otherwise.
			assert.Equal(t, "RETAIN_ON_CANCELLATION", runs[0].FlinkConfiguration["execution.checkpointing.externalized-checkpoint-retention"])
			assert.Equal(t, job.Name, runs[0].FlinkConfiguration["pipeline.name"])
			assert.Equal(t, 4, runs[0].Parallelism, "the new spec")
			assert.NotEqual(t, fixtures.PhaseJobID, runs[0].JobID, "a new job id")
			assert.Equal(t, st.JobStatus.JobID, runs[0].JobID)
			require.Len(t, w.atRun, 1)
			assert.Equal(t, runs[0].JobID, w.atRun[0].JobStatus.JobID, "write-ahead: the job id was recorded before the run")
			assert.Equal(t, runs[0].SavepointPath, w.atRun[0].JobStatus.UpgradeSavepointPath, "write-ahead: the restore path was recorded before the run")
			if !tt.restored {
				assert.Empty(t, runs[0].SavepointPath, "a stateless job starts over")
				assert.Equal(t, "CANCELED", w.flink.Job(fixtures.PhaseJobID))
				return
			}
			stops := w.flink.Stops()
			require.Len(t, stops, 1)
			path := w.flink.SavepointLocation(fixtures.PhaseJobID, stops[0])
			assert.Equal(t, path, runs[0].SavepointPath, "the stop's savepoint is restored")
			assert.Equal(t, path, st.JobStatus.UpgradeSavepointPath)
			assert.Equal(t, "FINISHED", w.flink.Job(fixtures.PhaseJobID))
		})
	}
}

// TestPendingJobStopIsFollowedCloselyPhase: a pending stop-with-savepoint is looked at again
// within a second (jobs.Recheck), not after the progress-check interval.
func TestPendingJobStopIsFollowedCloselyPhase(t *testing.T) {
	job := deployedSessionJob(t, flinkv1beta1.UpgradeModeSavepoint, map[string]string{"state.savepoints.dir": "file:///sp"})
	w := newJobPhaseWorld(t, job, "RUNNING")
	w.r.Intervals.ProgressCheck = 10 * time.Second
	w.flink.SetAutoComplete(false)
	desired := w.stored().Spec.DeepCopy()
	desired.Job.Parallelism = 4
	for i := range 2 { // the reconcile that triggers the stop, then one that finds it pending
		res := w.reconcile(desired)
		desired = nil
		require.Len(t, w.flink.StopsOf(fixtures.PhaseJobID), 1, "reconcile %d: one stop-with-savepoint", i)
		assert.Positive(t, res.RequeueAfter, "reconcile %d", i)
		assert.LessOrEqual(t, res.RequeueAfter, time.Second, "reconcile %d looks again within a second, not after the progress check", i)
	}
}

// TestJobRestartFailedPhase: a FAILED job is submitted again with
// kubernetes.operator.job.restart.failed, from its latest checkpoint unless stateless, and left
// FAILED without it.
func TestJobRestartFailedPhase(t *testing.T) {
	const checkpoint = "file:///cp/" + fixtures.PhaseJobID + "/chk-7"
	tests := []struct {
		name    string
		mode    flinkv1beta1.UpgradeMode
		restart string
		// want
		acted   bool
		restore string
	}{
		{name: "savepoint mode: restarted from the latest checkpoint", mode: flinkv1beta1.UpgradeModeSavepoint, restart: "true",
			acted: true, restore: checkpoint},
		{name: "stateless: restarted from nothing", mode: flinkv1beta1.UpgradeModeStateless, restart: "true", acted: true},
		{name: "restart.failed off: left FAILED", mode: flinkv1beta1.UpgradeModeSavepoint, restart: "false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := deployedSessionJob(t, tt.mode, map[string]string{"kubernetes.operator.job.restart.failed": tt.restart})
			job.Status.JobStatus.State = flinkv1beta1.JobStatusFailed
			w := newJobPhaseWorld(t, job, "FAILED")
			w.flink.SetLatestCheckpoint(fixtures.PhaseJobID, checkpoint)

			p := w.pass(nil)
			out, err := w.r.restartFailedJob(context.Background(), p)
			require.NoError(t, err)
			require.NoError(t, w.r.finishJob(context.Background(), p.jobScope, nil))
			assert.Equal(t, tt.acted, out.Done)
			st := w.stored().Status
			if !tt.acted {
				assert.Empty(t, w.changes(), "nothing is asked of the session")
				assert.Equal(t, flinkv1beta1.JobStatusFailed, st.JobStatus.State)
				assert.Equal(t, fixtures.PhaseJobID, st.JobStatus.JobID)
				return
			}
			assert.Equal(t, runChanges, w.normalizedChanges(), "submitted again, nothing to stop")
			runs := w.flink.Runs()
			require.Len(t, runs, 1)
			assert.Equal(t, tt.restore, runs[0].SavepointPath)
			assert.NotEqual(t, fixtures.PhaseJobID, runs[0].JobID, "a new job id")
			assert.Equal(t, flinkv1beta1.ReconciliationDeployed, st.ReconciliationStatus.State)
			require.Len(t, w.atRun, 1)
			assert.Equal(t, runs[0].JobID, w.atRun[0].JobStatus.JobID, "write-ahead: the job id was recorded before the run")
			assert.True(t, fixtures.EventWithReason(w.recorded(), jobs.ReasonRestartFailed))
		})
	}
}

// TestJobLostPhases: a job its session no longer knows is submitted again from nothing when
// stateless, under the id it was recorded with; a stateful one is reported "Job Not Found" and
// waits for the user, also through a spec change.
func TestJobLostPhases(t *testing.T) {
	tests := []struct {
		name string
		mode flinkv1beta1.UpgradeMode
		// want
		resubmitted bool
	}{
		{name: "stateless: submitted again under its id", mode: flinkv1beta1.UpgradeModeStateless, resubmitted: true},
		{name: "savepoint: Job Not Found, waits", mode: flinkv1beta1.UpgradeModeSavepoint},
		{name: "last-state: Job Not Found, waits", mode: flinkv1beta1.UpgradeModeLastState},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := deployedSessionJob(t, tt.mode, nil)
			job.Status.JobStatus.UpgradeSavepointPath = "file:///sp/savepoint-stale"
			w := newJobPhaseWorld(t, job, "") // the session restarted without the job

			w.reconcile(nil)
			st := w.stored().Status
			assert.True(t, fixtures.EventWithReason(w.recorded(), reconciler.ReasonMissing))
			if tt.resubmitted {
				assert.Equal(t, runChanges, w.normalizedChanges())
				runs := w.flink.Runs()
				require.Len(t, runs, 1)
				assert.Equal(t, fixtures.PhaseJobID, runs[0].JobID, "the recorded job id")
				assert.Empty(t, runs[0].SavepointPath, "a stateless job starts over, not from a stale path")
				assert.Empty(t, st.Error)
				assert.Equal(t, "RUNNING", w.flink.Job(fixtures.PhaseJobID))
				return
			}
			assert.Empty(t, w.changes(), "nothing is submitted without its state")
			assert.Equal(t, flinkv1beta1.ErrorReasonJobNotFound, flinkv1beta1.ErrorReason(st.Error), "status.error: %s", st.Error)
			assert.Equal(t, flinkv1beta1.JobStatusReconciling, st.JobStatus.State)

			// A spec change that is not the user's answer does not submit it either.
			desired := w.stored().Spec.DeepCopy()
			desired.Job.Parallelism = 4
			w.reconcile(desired)
			st = w.stored().Status
			assert.Empty(t, w.changes(), "a spec change does not submit a lost stateful job")
			assert.Equal(t, flinkv1beta1.ReconciliationDeployed, st.ReconciliationStatus.State, "nothing recorded")
			assert.Equal(t, flinkv1beta1.ErrorReasonJobNotFound, flinkv1beta1.ErrorReason(st.Error))
		})
	}
}

// TestJobDeletionPhases: a deleted session job is stopped on its session before its finalizer
// goes: with a savepoint when savepoint-on-deletion is set, else cancelled; a job the session
// does not run lets it go at once.
func TestJobDeletionPhases(t *testing.T) {
	tests := []struct {
		name    string
		conf    map[string]string
		running string
		// want
		requests   []string
		reconciles int // until the resource is gone
	}{
		{name: "savepoint on deletion: stop-with-savepoint, then gone", conf: map[string]string{"kubernetes.operator.job.savepoint-on-deletion": "true"},
			running: "RUNNING", requests: []string{"POST /jobs/" + fixtures.PhaseJobID + "/stop"}, reconciles: 2},
		{name: "no savepoint asked: cancelled, then gone", running: "RUNNING", requests: []string{"PATCH /jobs/" + fixtures.PhaseJobID}, reconciles: 2},
		{name: "not on the session: gone at once", reconciles: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := deployedSessionJob(t, flinkv1beta1.UpgradeModeSavepoint, nil)
			now := metav1.Now()
			job.DeletionTimestamp = &now
			w := newJobPhaseWorld(t, job, tt.running)
			w.setSessionConf(tt.conf)

			gone := 0
			for i := 1; i <= 5; i++ {
				got := &flinkv1beta1.FlinkSessionJob{}
				err := w.c.Get(context.Background(), client.ObjectKeyFromObject(job), got)
				if apierrors.IsNotFound(err) {
					gone = i - 1
					break
				}
				require.NoError(t, err)
				s := NewJobScope(got, nil)
				require.NoError(t, w.r.connect(context.Background(), s))
				_, err = w.r.cleanupJob(context.Background(), s)
				s.flink.Close()
				require.NoError(t, err, "reconcile %d", i)
			}
			assert.Equal(t, tt.reconciles, gone, "reconciles until the resource is gone")
			assert.Equal(t, tt.requests, w.changes(), "requests to the JobManager")
			if tt.running == "" {
				return
			}
			if len(w.flink.Stops()) > 0 {
				// The next reconcile finds the job ended by its savepoint: the finalizer goes.
				assert.Equal(t, "FINISHED", w.flink.Job(fixtures.PhaseJobID), "stopped with its savepoint")
				return
			}
			assert.Equal(t, "CANCELED", w.flink.Job(fixtures.PhaseJobID))
			assert.True(t, fixtures.EventWithReason(w.recorded(), reconciler.ReasonCleanup), "the job was stopped")
		})
	}
}

// TestJobSpecPhasesOrder: which phase of jobSpecPhases acts, by what the status recorded and
// observe found (what the state switch of the reconcile decided before it was a phase list).
func TestJobSpecPhasesOrder(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(*flinkv1beta1.FlinkSessionJob)
		running string
		session flinkv1beta1.JobManagerDeploymentStatus
		change  bool
		// want: the phase that acted ("" none), how soon it looks again (within slack: a
		// time counted down from a recorded one)
		acted string
		after time.Duration
		slack time.Duration
	}{
		{name: "session not ready: waits", running: "RUNNING", session: flinkv1beta1.JobManagerDeploying, acted: "awaitSession", after: fixtures.FastIntervals().ProgressCheck},
		{name: "running, unchanged: looked at again at the reconcile interval", running: "RUNNING", acted: "unchanged", after: fixtures.FastIntervals().Reconcile},
		{name: "reconciling, unchanged: resubmitted", running: "", acted: "unchanged", after: fixtures.FastIntervals().ProgressCheck,
			setup: func(j *flinkv1beta1.FlinkSessionJob) { j.Status.JobStatus.State = flinkv1beta1.JobStatusReconciling }},
		// The stateless upgrade's cancel is recorded and shown for jobs.CancellingVisible.
		{name: "spec changed: recorded, then the upgrade goes on", running: "RUNNING", change: true, acted: "upgrade", after: jobs.CancellingVisible, slack: time.Second},
		{name: "nothing reconciled: first submission", running: "", acted: "firstSubmission", after: fixtures.FastIntervals().ProgressCheck,
			setup: func(j *flinkv1beta1.FlinkSessionJob) { j.Status = flinkv1beta1.FlinkSessionJobStatus{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := deployedSessionJob(t, flinkv1beta1.UpgradeModeStateless, nil)
			if tt.setup != nil {
				tt.setup(job)
			}
			w := newJobPhaseWorld(t, job, tt.running)
			if tt.session != "" {
				session := &flinkv1beta1.FlinkDeployment{}
				require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: job.Namespace, Name: "session"}, session))
				session.Status.JobManagerDeploymentStatus = tt.session
				require.NoError(t, w.c.Status().Update(context.Background(), session))
			}
			var desired *flinkv1beta1.FlinkSessionJobSpec
			if tt.change {
				desired = job.Spec.DeepCopy()
				desired.Job.Parallelism = 4
			}
			p := w.pass(desired)
			var acted string
			var res ctrl.Result
			for _, ph := range w.r.jobSpecPhases() {
				out, err := ph.Run(context.Background(), p)
				require.NoError(t, err, ph.Name)
				if out.Done {
					acted, res = ph.Name, out.Result
					break
				}
			}
			assert.Equal(t, tt.acted, acted)
			assert.InDelta(t, tt.after, res.RequeueAfter, float64(tt.slack))
		})
	}
}
