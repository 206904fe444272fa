package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinksessionjob"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestFlinkSessionJobLifecycle drives a session job through submission (with a failed first
// attempt), a savepoint upgrade and deletion against a scripted session cluster.
func TestFlinkSessionJobLifecycle(t *testing.T) {
	t.Parallel()
	flink := fakeflink.New(t)
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "sessionjobs")
	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))

	session := fixtures.NewDeployment(t, ns, "session")
	session.Spec.Job = nil
	require.NoError(t, c.Create(ctx, session))
	events := startSessionJobOperator(t, flink, ns)

	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{
			JarURI: "file://" + jar, Parallelism: 2, UpgradeMode: flinkv1beta1.UpgradeModeSavepoint,
			State: flinkv1beta1.JobStateRunning}}}
	key := client.ObjectKeyFromObject(job)
	flink.FailRun = "org.apache.flink.client.program.ProgramInvocationException: boom"
	require.NoError(t, c.Create(ctx, job))

	getJob := func() *flinkv1beta1.FlinkSessionJob {
		j := &flinkv1beta1.FlinkSessionJob{}
		require.NoError(t, c.Get(ctx, key, j))
		return j
	}
	waitJob := func(what string, cond func(*flinkv1beta1.FlinkSessionJob) bool) *flinkv1beta1.FlinkSessionJob {
		t.Helper()
		var last *flinkv1beta1.FlinkSessionJob
		wait.For(t, 20*time.Second, what, func() bool {
			last = getJob()
			return cond(last)
		}, func() string { return fmt.Sprintf("status %+v; runs %+v", last.Status, flink.Runs()) })
		return last
	}

	// Session not ready: the job waits (RECONCILING) and nothing is submitted.
	waitJob("RECONCILING while the session is not ready", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.JobStatus.State == flinkv1beta1.JobStatusReconciling
	})
	wait.Never(t, 500*time.Millisecond, "submitted while the session is not ready", func() bool { return len(flink.Runs()) > 0 })
	require.Empty(t, flink.Runs())

	session = get(t, c, ns, "session")
	session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, session))

	// The first run fails: the job id was recorded before it and the error is reported.
	failed := waitJob("submission error recorded", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.Error != "" && len(flink.Runs()) > 0
	})
	jobID := failed.Status.JobStatus.JobID
	require.Len(t, jobID, 32)
	require.Equal(t, jobID, flink.Runs()[0].JobID, "the job id is written to the status before Flink sees it")
	require.Contains(t, failed.Status.Error, "JobSubmissionException")
	assert.True(t, conditionTrue(failed.Status.Conditions, lifecycle.ConditionDegraded), "a failed submission is Degraded")
	wait.For(t, 5*time.Second, "events.has(\"Job submission failed\")", func() bool { return events.has("Job submission failed") })

	// The retry submits under the same id; the uploaded jar is deleted.
	flink.FailRun = ""
	running := waitJob("RUNNING and Ready", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning && conditionTrue(j.Status.Conditions, "Ready")
	})
	require.Equal(t, jobID, running.Status.JobStatus.JobID)
	runs := flink.Runs()
	require.Equal(t, jobID, runs[len(runs)-1].JobID)
	require.Equal(t, 2, runs[len(runs)-1].Parallelism)
	require.Zero(t, flink.Jars(), "uploaded jars are deleted after the run")
	require.Equal(t, flinkv1beta1.LifecycleStable, running.Status.LifecycleState)
	assert.True(t, meta.IsStatusConditionFalse(running.Status.Conditions, lifecycle.ConditionDegraded), "the retry cleared it")
	assert.True(t, meta.IsStatusConditionFalse(running.Status.Conditions, lifecycle.ConditionProgressing))

	// A savepoint upgrade: stop with a savepoint, run the new spec from it under a new id.
	patchSessionJob(t, c, key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 3 })
	upgraded := waitJob("upgraded", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.JobStatus.JobID != jobID && j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	})
	last := flink.Runs()[len(flink.Runs())-1]
	require.Equal(t, 3, last.Parallelism)
	reqs := flink.Requests()
	require.NotNil(t, upgraded.Status.JobStatus.SavepointInfo.LastSavepoint, "requests %v", reqs[max(0, len(reqs)-25):])
	require.Equal(t, upgraded.Status.JobStatus.SavepointInfo.LastSavepoint.Location, last.SavepointPath)
	require.Equal(t, "FINISHED", flink.Job(jobID), "the old job stopped with its savepoint")

	// Suspend stops with a savepoint; resume restores it.
	patchSessionJob(t, c, key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.State = flinkv1beta1.JobStateSuspended })
	suspended := waitJob("SUSPENDED", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.LifecycleState == flinkv1beta1.LifecycleSuspended
	})
	suspendSavepoint := suspended.Status.JobStatus.SavepointInfo.LastSavepoint.Location
	require.Equal(t, suspendSavepoint, suspended.Status.JobStatus.UpgradeSavepointPath)
	patchSessionJob(t, c, key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.State = flinkv1beta1.JobStateRunning })
	waitJob("resumed", func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.JobStatus.JobID != suspended.Status.JobStatus.JobID && j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	})
	require.Equal(t, suspendSavepoint, flink.Runs()[len(flink.Runs())-1].SavepointPath, "resumed from the suspend savepoint")

	// The history: the first submission (its failed try included), the upgrade with its
	// savepoint, the suspend with the savepoint it took and the resume that restored it.
	want := []string{"Deploy Succeeded ", "Upgrade Succeeded " + last.SavepointPath, "Suspend Succeeded " + suspendSavepoint, "Resume Succeeded " + suspendSavepoint}
	upgraded = waitJob("operations recorded "+strings.Join(want, ", "), func(j *flinkv1beta1.FlinkSessionJob) bool {
		return slices.Equal(operations(j.Status.Operations), want)
	})

	// Deletion cancels the job, then lets the resource go.
	require.NoError(t, c.Delete(ctx, upgraded))
	wait.For(t, 20*time.Second, "apierrors.IsNotFound(c.Get(ctx, key, &flinkv1beta1.FlinkSessionJob{}))", func() bool { return apierrors.IsNotFound(c.Get(ctx, key, &flinkv1beta1.FlinkSessionJob{})) })
	require.Equal(t, "CANCELED", flink.Job(upgraded.Status.JobStatus.JobID))
}

// TestFlinkSessionJobErrors: bad jars give clear errors, and a job whose session is gone is
// deleted without waiting.
func TestFlinkSessionJobErrors(t *testing.T) {
	t.Parallel()
	flink := fakeflink.New(t)
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "sessionjob-errors")
	session := fixtures.NewDeployment(t, ns, "session")
	session.Spec.Job = nil
	require.NoError(t, c.Create(ctx, session))
	session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, session))
	events := startSessionJobOperator(t, flink, ns)

	mk := func(name, jarURI, deployment string) client.ObjectKey {
		j := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: deployment, Job: &flinkv1beta1.JobSpec{JarURI: jarURI,
				UpgradeMode: flinkv1beta1.UpgradeModeStateless, State: flinkv1beta1.JobStateRunning}}}
		require.NoError(t, c.Create(ctx, j))
		return client.ObjectKeyFromObject(j)
	}
	errorOf := func(key client.ObjectKey, substr string) {
		t.Helper()
		j := &flinkv1beta1.FlinkSessionJob{}
		wait.For(t, 20*time.Second, fmt.Sprintf("an error with %q", substr), func() bool {
			return c.Get(ctx, key, j) == nil && strings.Contains(j.Status.Error, substr)
		}, func() string { return fmt.Sprintf("status.error is %q", j.Status.Error) })
	}
	errorOf(mk("scheme", "s3://bucket/job.jar", "session"), `spec.job.jarURI: Unsupported value: \"s3://bucket/job.jar\": supported values: \"file://...\", \"https://...\"`)
	errorOf(mk("missing", "file:///does/not/exist.jar", "session"), "no such file or directory")
	wait.For(t, 5*time.Second, "events.has(\"ValidationError\")", func() bool { return events.has("ValidationError") })

	orphan := mk("orphan", "file:///does/not/exist.jar", "no-such-session")
	require.NoError(t, c.Delete(ctx, &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: orphan.Name}}))
	wait.For(t, 20*time.Second, "a job without a session is deleted at once", func() bool { return apierrors.IsNotFound(c.Get(ctx, orphan, &flinkv1beta1.FlinkSessionJob{})) })
}

func patchSessionJob(t *testing.T, c client.Client, key client.ObjectKey, change func(*flinkv1beta1.FlinkSessionJob)) {
	t.Helper()
	wait.For(t, 5*time.Second, fmt.Sprintf("update of %s", key), func() bool {
		j := &flinkv1beta1.FlinkSessionJob{}
		if c.Get(context.Background(), key, j) != nil {
			return false
		}
		change(j)
		return c.Update(context.Background(), j) == nil
	})
}

func conditionTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// TestSessionJobLostIsNeverUpgradedEmpty: a savepoint-mode job
// its session lost is reported with upstream's "Job Not Found" and waits for the user: a spec
// change does not submit it with no state; a savepoint redeploy (the user saying where its
// state is) does.
func TestSessionJobLostIsNeverUpgradedEmpty(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "lost-then-changed", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeSavepoint)
	e.flink.SetJob(jobID, "") // the session restarted without HA
	wait.For(t, 20*time.Second, "upstream's error", func() bool {
		return flinkv1beta1.ErrorMessage(e.get(key).Status.Error) == "Job Not Found"
	})
	runs := len(e.flink.Runs())

	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
	wait.Never(t, 1500*time.Millisecond, "a lost stateful job is not submitted with no state on a spec change", func() bool { return len(e.flink.Runs()) != runs })
	assert.Equal(t, "Job Not Found", flinkv1beta1.ErrorMessage(e.get(key).Status.Error))

	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) {
		j.Spec.Job.InitialSavepointPath = "file:/backup/savepoint-1"
		j.Spec.Job.SavepointRedeployNonce = fixtures.Ptr[int64](1)
	})
	run := e.lastSubmission(jobID)
	assert.Equal(t, "file:/backup/savepoint-1", run.SavepointPath, "restored from where the user said")
	assert.Equal(t, 2, run.Parallelism)
}

// TestSessionJobEndedWithoutCheckpointNeedsManualRestore: a savepoint-mode
// job that failed with no checkpoint or savepoint known is not submitted with no state on a spec
// change: upstream's "Manual restore required" failure.
func TestSessionJobEndedWithoutCheckpointNeedsManualRestore(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "ended-no-checkpoint", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeSavepoint)
	e.flink.SetLatestCheckpoint(jobID, "") // it never completed a checkpoint
	e.flink.SetJob(jobID, "FAILED")
	wait.For(t, 20*time.Second, "e.get(key).Status.JobStatus.State == flinkv1beta1.JobStatusFailed", func() bool { return e.get(key).Status.JobStatus.State == flinkv1beta1.JobStatusFailed })
	runs := len(e.flink.Runs())

	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
	wait.For(t, 20*time.Second, "upstream's manual restore failure", func() bool {
		st := e.get(key).Status
		return flinkv1beta1.ErrorReason(st.Error) == flinkv1beta1.ErrorReasonManualRestoreRequired &&
			strings.Contains(flinkv1beta1.ErrorMessage(st.Error), "Manual restore required")
	})
	wait.Never(t, time.Second, "never submitted with no state", func() bool { return len(e.flink.Runs()) != runs })
}

// TestSessionJobFailingMidUpgradeRestoresItsLastCheckpoint: a job that fails
// while its upgrade savepoint is being taken (the savepoint fails with it) restores the latest
// checkpoint observed while it is failed, not nothing.
func TestSessionJobFailingMidUpgradeRestoresItsLastCheckpoint(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "failed-mid-upgrade", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeSavepoint)
	e.flink.SetAutoComplete(false)
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
	wait.For(t, 20*time.Second, "stop-with-savepoint sent", func() bool { return len(e.flink.Stops()) > 0 })
	e.flink.SetJob(jobID, "FAILED")
	e.flink.CompleteSavepoint(jobID, e.flink.Stops()[0], "the job failed")
	assert.Equal(t, fakeflink.CheckpointPath(jobID), e.lastSubmission(jobID).SavepointPath, "restored from its latest checkpoint")
}

// TestDeletedSessionJobWaitsForItsCancel: while cancelling a deleted session
// job fails, its finalizer stays and a Warning says why; it goes once the job is cancelled.
func TestDeletedSessionJobWaitsForItsCancel(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "delete-cancel-fails", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	e.flink.FailCancel("JobManager overloaded")
	require.NoError(t, e.c.Delete(context.Background(), e.get(key)))
	wait.For(t, 20*time.Second, "a failed cancel is reported", func() bool { return e.events.has("Warning CleanupFailed") })
	assert.NotNil(t, e.get(key), "the finalizer stays while the job runs")
	assert.Equal(t, "RUNNING", e.flink.Job(jobID))

	e.flink.FailCancel("")
	wait.For(t, 20*time.Second, "deleted once cancelled", func() bool { return e.get(key) == nil })
	assert.Equal(t, "CANCELED", e.flink.Job(jobID))
}

// TestDeletedSessionJobWaitsForAnUnreachableSession: a session reported ready
// whose REST endpoint cannot be addressed is not taken for a session without the job, even
// without HA: deletion waits.
func TestDeletedSessionJobWaitsForAnUnreachableSession(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "delete-unreachable", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	wait.Until(t, context.Background(), 10*time.Second, "the session's rest.port broken", func() (bool, error) {
		s := get(t, e.c, e.ns, "session")
		conf, err := s.Spec.FlinkConfiguration.Flatten()
		if err != nil {
			return false, err
		}
		if conf == nil {
			conf = map[string]string{}
		}
		conf["rest.port"] = "not-a-port"
		s.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
		err = e.c.Update(context.Background(), s) // a conflict with the operator's write: again
		return err == nil, err
	})
	require.NoError(t, e.c.Delete(context.Background(), e.get(key)))
	wait.Never(t, 1500*time.Millisecond, "the finalizer stays while the session cannot be asked", func() bool { return e.get(key) == nil })
	assert.Equal(t, "RUNNING", e.flink.Job(jobID))
}

// TestLastStateSessionJobRecordsItsCheckpointAfterTheCancel:
// a last-state upgrade records the latest checkpoint before the job is cancelled (write-ahead,
// as for deployments), and reads it again once the job is CANCELED: a checkpoint completing
// during the cancel subsumes the recorded one, and is what the new job restores.
func TestLastStateSessionJobRecordsItsCheckpointAfterTheCancel(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "cancel-then-read", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeLastState)
	e.flink.FailCancel("busy")
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
	var recorded string
	wait.For(t, 20*time.Second, "the latest checkpoint is recorded before the cancel", func() bool {
		st := e.get(key).Status
		recorded = st.JobStatus.UpgradeSavepointPath
		return st.ReconciliationStatus.State == flinkv1beta1.ReconciliationUpgrading && recorded != ""
	})
	assert.Equal(t, "RUNNING", e.flink.Job(jobID), "the cancel has not gone through yet")

	newer := "file:/flink/checkpoints/" + jobID + "/chk-8"
	e.flink.SetLatestCheckpoint(jobID, newer)
	e.flink.FailCancel("")
	assert.NotEqual(t, newer, recorded)
	assert.Equal(t, newer, e.lastSubmission(jobID).SavepointPath, "restored from the checkpoint read once it was cancelled")
}

// TestSessionJobLostMidUpgradeTakesTheUsersAnswer: a job lost
// while its upgrade savepoint is being taken is neither submitted empty nor left waiting for a
// savepoint that cannot complete: the upgrade waits for the user, whose savepoint redeploy
// replaces its target.
func TestSessionJobLostMidUpgradeTakesTheUsersAnswer(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "lost-mid-upgrade", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeSavepoint)
	e.flink.SetAutoComplete(false)
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
	wait.For(t, 20*time.Second, "stop-with-savepoint sent", func() bool { return len(e.flink.Stops()) > 0 })
	e.flink.SetJob(jobID, "") // the session restarted without HA, savepoint and all
	wait.For(t, 20*time.Second, "reported lost", func() bool { return flinksessionjob.JobLost(e.get(key).Status.Error) })
	runs := len(e.flink.Runs())
	wait.Never(t, time.Second, "not submitted with no state", func() bool { return len(e.flink.Runs()) != runs })

	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) {
		j.Spec.Job.InitialSavepointPath = "file:/backup/savepoint-2"
		j.Spec.Job.SavepointRedeployNonce = fixtures.Ptr[int64](1)
	})
	run := e.lastSubmission(jobID)
	assert.Equal(t, "file:/backup/savepoint-2", run.SavepointPath, "restored from where the user said")
	assert.Equal(t, 2, run.Parallelism)
}
