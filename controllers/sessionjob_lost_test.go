package controllers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/fakeflink"
)

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
		session := newDeployment(t, ns, name)
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
	require.Eventually(e.t, func() bool {
		s := get(e.t, e.c, e.ns, name)
		s.Status.JobManagerDeploymentStatus = jm
		return e.c.Status().Update(context.Background(), s) == nil
	}, 10*time.Second, 50*time.Millisecond)
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
	require.Eventually(e.t, func() bool {
		j := e.get(key)
		if id := j.Status.JobStatus.JobID; id != "" && e.flink.Job(id) == "" && e.submitted(id) > 0 {
			e.flink.SetJob(id, "RUNNING")
		}
		return j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	}, 20*time.Second, 50*time.Millisecond, "%s never ran", name)
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
	require.Eventually(e.t, func() bool {
		j := e.get(key)
		change(j)
		return e.c.Update(context.Background(), j) == nil
	}, 10*time.Second, 50*time.Millisecond)
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
	require.Eventually(e.t, func() bool {
		runs := e.flink.Runs()
		return runs[len(runs)-1].JobID != old
	}, 20*time.Second, 50*time.Millisecond, "never submitted again")
	runs := e.flink.Runs()
	return runs[len(runs)-1]
}

// TestLostSessionJobs (review finding 1, session side): when its session no longer knows a
// running job, only a stateless job is submitted again. A savepoint or last-state job would
// start with no state: it is reported ("Job Not Found") and left for the user, as upstream;
// when the session recovers it (HA), it is observed running again.
func TestLostSessionJobs(t *testing.T) {
	e := newSessionJobs(t, "lost-jobs", false, "session")
	statefulKey, statefulID := e.run("stateful", flinkv1beta1.UpgradeModeSavepoint)
	_, statelessID := e.run("stateless", flinkv1beta1.UpgradeModeStateless)
	statefulRuns, statelessRuns := e.submitted(statefulID), e.submitted(statelessID)

	// The session restarted without its jobs.
	e.flink.SetJob(statefulID, "")
	e.flink.SetJob(statelessID, "")
	require.Eventually(t, func() bool { return e.submitted(statelessID) > statelessRuns }, 20*time.Second, 50*time.Millisecond,
		"the stateless job was not submitted again")
	require.Eventually(t, func() bool {
		return flinkv1beta1.ErrorReason(e.get(statefulKey).Status.Error) == flinkv1beta1.ErrorReasonJobNotFound
	}, 20*time.Second, 50*time.Millisecond, "the lost stateful job was not reported")
	assert.Never(t, func() bool { return e.submitted(statefulID) > statefulRuns }, time.Second, 50*time.Millisecond,
		"a savepoint-mode job is never submitted again with no state")
	assert.Contains(t, flinkv1beta1.ErrorMessage(e.get(statefulKey).Status.Error), "Job Not Found")
	e.events.seen(t, "Missing")

	// HA brings it back: it is observed running again and the report goes.
	e.flink.SetJob(statefulID, "RUNNING")
	require.Eventually(t, func() bool {
		st := e.get(statefulKey).Status
		return st.JobStatus.State == flinkv1beta1.JobStatusRunning && st.Error == ""
	}, 20*time.Second, 50*time.Millisecond, "the recovered job was not observed")
}

// TestSessionJobUpdateTimeIsTheLastChange (review finding 36): jobStatus.updateTime is when the
// job's state last changed, so an unchanged job is not written on every reconcile.
func TestSessionJobUpdateTimeIsTheLastChange(t *testing.T) {
	e := newSessionJobs(t, "update-time", false, "session")
	key, _ := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	seen := e.get(key)
	assert.Never(t, func() bool {
		now := e.get(key)
		return now.Status.JobStatus.UpdateTime != seen.Status.JobStatus.UpdateTime || now.ResourceVersion != seen.ResourceVersion
	}, 1500*time.Millisecond, 50*time.Millisecond, "an unchanged running job is not written again")
}

// TestSessionJobStaysOnItsSession (review finding 26): without the webhook, a changed
// deploymentName is refused by the controller itself, naming the field, and the job keeps
// running on its session; nothing is cancelled or submitted elsewhere.
func TestSessionJobStaysOnItsSession(t *testing.T) {
	e := newSessionJobs(t, "moved-job", false, "session", "other")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	runs := len(e.flink.Runs())
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.DeploymentName = "other" })
	require.Eventually(t, func() bool {
		return strings.Contains(e.get(key).Status.Error, "spec.deploymentName")
	}, 20*time.Second, 50*time.Millisecond, "the move is refused, naming the field")
	assert.Never(t, func() bool { return len(e.flink.Runs()) != runs || e.flink.Job(jobID) != "RUNNING" }, time.Second, 50*time.Millisecond,
		"the job keeps running where it is; nothing is submitted elsewhere")
}

// TestDeletedSessionJobNeverRunsUnmanaged (review finding 7): while its HA session cannot be
// asked, a deleted session job keeps its finalizer; once the session answers, the job is
// cancelled and only then does the resource go.
func TestDeletedSessionJobNeverRunsUnmanaged(t *testing.T) {
	e := newSessionJobs(t, "delete-session-job", true, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	e.setSession("session", flinkv1beta1.JobManagerDeploying) // its JobManager restarts
	require.NoError(t, e.c.Delete(context.Background(), e.get(key)))
	assert.Never(t, func() bool { return e.get(key) == nil }, time.Second, 50*time.Millisecond,
		"the finalizer stays while the job may still run")
	assert.Equal(t, "RUNNING", e.flink.Job(jobID))

	e.setSession("session", flinkv1beta1.JobManagerReady)
	require.Eventually(t, func() bool { return e.get(key) == nil }, 20*time.Second, 50*time.Millisecond, "deleted once the job is stopped")
	assert.Equal(t, "CANCELED", e.flink.Job(jobID), "the job was cancelled before its resource went")
}

// TestFailedSessionJobRestoresItsLastCheckpoint (review finding 4): a savepoint-mode session
// job that failed is submitted again (on a spec change) from its latest checkpoint, recorded
// while it was failed, never with no state.
func TestFailedSessionJobRestoresItsLastCheckpoint(t *testing.T) {
	e := newSessionJobs(t, "failed-session-job", false, "session")
	key, failedID := e.run("orders", flinkv1beta1.UpgradeModeSavepoint)
	e.flink.SetJob(failedID, "FAILED")
	require.Eventually(t, func() bool {
		return e.get(key).Status.JobStatus.UpgradeSavepointPath == fakeflink.CheckpointPath(failedID)
	}, 20*time.Second, 50*time.Millisecond, "the failed job's latest checkpoint is recorded")
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
	assert.Equal(t, fakeflink.CheckpointPath(failedID), e.lastSubmission(failedID).SavepointPath, "submitted from the failed job's last checkpoint")
}

// TestLastStateSessionJobRestoresTheLatestCheckpoint (review finding 16, session side): a
// checkpoint completing while a last-state session job is cancelled for an upgrade is the one
// restored, not the one read before the cancel (which it subsumed).
func TestLastStateSessionJobRestoresTheLatestCheckpoint(t *testing.T) {
	e := newSessionJobs(t, "session-cancel-race", false, "session")
	key, oldID := e.run("orders", flinkv1beta1.UpgradeModeLastState)
	newer := "file:/flink/checkpoints/" + oldID + "/chk-8"
	e.flink.OnCancel(func(jobID string) {
		if jobID == oldID {
			e.flink.SetLatestCheckpoint(jobID, newer)
		}
	})
	defer e.flink.OnCancel(nil)
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
	assert.Equal(t, newer, e.lastSubmission(oldID).SavepointPath, "restored from the checkpoint that completed during the cancel")
}
