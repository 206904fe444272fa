package controllers

// Deletion always ends: one test per row of the table in docs/concepts/deletion.md (decided by
// pkg/lifecycle DecideDeletion). Each runs with a short kubernetes.operator.resource.cleanup.timeout
// and checks that the resource is gone within its bound, and that what was given up is said in a
// Warning event (and, for a final savepoint, in the status the resource had last).

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// deletionTimeout is the cleanup timeout of these tests: long enough for a loaded machine to
// take a few reconciles within it, short enough for a test.
const deletionTimeout = 3 * time.Second

// deletionSlack is what a bound may be overrun by: the reconcile at the bound, the status and
// finalizer writes, and the cache seeing them, on a loaded machine.
const deletionSlack = 10 * time.Second

// savepointOnDeletion is a running application deployment with savepoint on deletion and a
// short cleanup timeout; it returns the deployment and its job id.
func savepointOnDeletion(t *testing.T, c client.Client, k *cluster, ns, name string) (*flinkv1beta1.FlinkDeployment, string) {
	t.Helper()
	dep := fixtures.NewDeployment(t, ns, name)
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{
		"state.checkpoints.dir": "file:///cp", "state.savepoints.dir": "file:///sp", "taskmanager.numberOfTaskSlots": "2",
		"kubernetes.operator.job.savepoint-on-deletion": "true", "kubernetes.operator.resource.cleanup.timeout": deletionTimeout.String()})
	require.NoError(t, c.Create(context.Background(), dep))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	k.run(ns, name, d.Status.JobStatus.JobID)
	d = waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
	return d, d.Status.JobStatus.JobID
}

// deleteNow deletes obj and returns when its deletion started (its deletionTimestamp, read
// back while its finalizer holds it).
func deleteNow(t *testing.T, c client.Client, obj client.Object) time.Time {
	t.Helper()
	require.NoError(t, c.Delete(context.Background(), obj))
	var started time.Time
	wait.For(t, 10*time.Second, "the deletion started", func() bool {
		cur := obj.DeepCopyObject().(client.Object)
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil || cur.GetDeletionTimestamp() == nil {
			return false
		}
		started = cur.GetDeletionTimestamp().Time
		return true
	})
	return started
}

// goneWithin waits until the object is gone, and fails when that took longer than bound (and
// the slack of a loaded machine) after its deletion started.
func goneWithin(t *testing.T, c client.Client, obj client.Object, started time.Time, bound time.Duration) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	wait.For(t, bound+deletionSlack+20*time.Second, "the resource is gone", func() bool {
		return apierrors.IsNotFound(c.Get(context.Background(), key, obj.DeepCopyObject().(client.Object)))
	})
	// deletionTimestamp has a second's resolution.
	took := time.Since(started)
	assert.LessOrEqual(t, took, bound+deletionSlack+time.Second, "gone within the bound (%s) and its slack", bound)
	t.Logf("gone %s after its deletion started (bound %s)", took.Round(100*time.Millisecond), bound)
}

// noFinalSavepoint waits for the status that says the deployment goes without its final
// savepoint: written before the cluster is deleted, it is what the resource shows last.
func noFinalSavepoint(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	d := waitFor(t, c, ns, name, "status.error says there is no final savepoint", func(d *flinkv1beta1.FlinkDeployment) bool {
		return flinkv1beta1.ErrorReason(d.Status.Error) == flinkv1beta1.ErrorReasonNoFinalSavepoint
	})
	assert.Nil(t, d.Status.JobStatus.SavepointInfo.LastSavepoint, "no savepoint was recorded")
	assert.Empty(t, d.Status.JobStatus.SavepointInfo.TriggerID, "no savepoint left pending")
}

// TestDeletionGivesUpAFailingFinalSavepoint (row: savepoint on deletion failing): Flink fails
// every savepoint; the deletion tries until the cleanup timeout, then says there is no final
// savepoint (Warning NoFinalSavepoint, status.error) and deletes the cluster.
func TestDeletionGivesUpAFailingFinalSavepoint(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, flink, k, events := newScenario(t, "delete-sp-fails")
	d, jobID := savepointOnDeletion(t, c, k, ns, "orders")
	flink.SetSavepointFailure("the checkpoint storage is full")

	started := deleteNow(t, c, d)
	events.seen(t, "Savepoint for the upgrade failed")
	noFinalSavepoint(t, c, ns, "orders")
	events.seen(t, "Warning "+string(lifecycle.ReasonNoFinalSavepoint))
	events.seen(t, "the checkpoint storage is full")
	k.collect(ns, "orders")
	goneWithin(t, c, d, started, deletionTimeout)
	assert.NotEmpty(t, flink.StopsOf(jobID), "a savepoint was tried")
}

// TestDeletionGivesUpTheFinalSavepointOfAnUnreachableJobManager (row: JobManager unreachable):
// the JobManager answers nothing; the deletion is not retried with a growing back-off past its
// bound, and goes without the savepoint once the cleanup timeout is reached.
func TestDeletionGivesUpTheFinalSavepointOfAnUnreachableJobManager(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, flink, k, events := newScenario(t, "delete-jm-unreachable")
	d, _ := savepointOnDeletion(t, c, k, ns, "orders")
	flink.SetUnreachable("JobManager cut off")

	started := deleteNow(t, c, d)
	noFinalSavepoint(t, c, ns, "orders")
	events.seen(t, "Warning "+string(lifecycle.ReasonNoFinalSavepoint))
	k.collect(ns, "orders")
	goneWithin(t, c, d, started, deletionTimeout)
}

// TestDeletionOfAClusterWhosePodsNeverGo (row: JobManager pods stuck terminating): nothing
// finishes the JobManager Deployment's foreground deletion (no garbage collector in envtest, as
// a node lost with its pods); the wait is given up at the cleanup timeout (pkg/native
// DeleteOptions.WaitAtMost) and the resource goes.
func TestDeletionOfAClusterWhosePodsNeverGo(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, _, k, _ := newScenario(t, "delete-pods-stuck")
	dep := fixtures.NewDeployment(t, ns, "orders")
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{
		"state.checkpoints.dir": "file:///cp", "state.savepoints.dir": "file:///sp", "taskmanager.numberOfTaskSlots": "2",
		"kubernetes.operator.resource.cleanup.timeout": deletionTimeout.String()})
	require.NoError(t, c.Create(context.Background(), dep))
	d := waitFor(t, c, ns, "orders", "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	k.run(ns, "orders", d.Status.JobStatus.JobID)
	d = waitFor(t, c, ns, "orders", "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))

	started := deleteNow(t, c, d)
	// The job is cancelled, then the cluster deleted; its JobManager waited for at most T.
	goneWithin(t, c, d, started, 2*deletionTimeout)
}

// TestDeletionEndsAcrossAnOperatorRestart (row: operator restarted mid-deletion): the savepoint
// on deletion never completes; the operator is stopped while it waits, and a new one started
// once the bound has passed. The bound is counted from metadata.deletionTimestamp, not from when
// an operator first saw the deletion: the new operator gives the savepoint up at once.
func TestDeletionEndsAcrossAnOperatorRestart(t *testing.T) {
	t.Parallel()
	flink := fakeflink.New(t)
	c := testEnv(t).Client
	ns := testEnv(t).NewNamespace(t, "delete-restart")
	k := &cluster{t: t, c: c, flink: flink}
	_, stop := startStoppableOperator(t, flink, ns)
	d, jobID := savepointOnDeletion(t, c, k, ns, "orders")
	flink.SetAutoComplete(false)

	started := deleteNow(t, c, d)
	wait.For(t, 20*time.Second, "stop-with-savepoint sent", func() bool { return len(flink.StopsOf(jobID)) > 0 })
	stop()
	d = get(t, c, ns, "orders")
	time.Sleep(time.Until(d.DeletionTimestamp.Add(deletionTimeout + time.Second)))

	events, _ := startStoppableOperator(t, flink, ns)
	restarted := time.Now()
	noFinalSavepoint(t, c, ns, "orders")
	events.seen(t, "Warning "+string(lifecycle.ReasonNoFinalSavepoint))
	k.collect(ns, "orders")
	goneWithin(t, c, d, started, deletionTimeout+time.Second)
	assert.Less(t, time.Since(restarted), deletionSlack, "the new operator did not wait a bound of its own")
	assert.Len(t, flink.StopsOf(jobID), 1, "the savepoint was not triggered again")
}

// withCleanupTimeout sets the cleanup timeout (and extra options) on a FlinkDeployment's
// configuration, retried on conflicts with the operator's writes.
func withCleanupTimeout(t *testing.T, c client.Client, ns, name string, extra map[string]string) {
	t.Helper()
	wait.Until(t, context.Background(), 10*time.Second, "the cleanup timeout set on "+name, func() (bool, error) {
		d := get(t, c, ns, name)
		conf, err := d.Spec.FlinkConfiguration.Flatten()
		if err != nil {
			return false, err
		}
		if conf == nil {
			conf = map[string]string{}
		}
		conf["kubernetes.operator.resource.cleanup.timeout"] = deletionTimeout.String()
		for k, v := range extra {
			conf[k] = v
		}
		d.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
		err = c.Update(context.Background(), d)
		return err == nil, err // a conflict with the operator's write: again
	})
}

// TestSessionDeletionDeletesItsSessionJobsAtTheBound (row: session with FlinkSessionJobs): a
// session cluster waits for its FlinkSessionJobs as upstream, but not forever: at the cleanup
// timeout it deletes them itself (Warning SessionJobsDeleted naming them) and goes once they
// are gone.
func TestSessionDeletionDeletesItsSessionJobsAtTheBound(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns, fake, k, events := newScenario(t, "delete-session-jobs")
	const ended = "0123456789abcdef0123456789abcdef"
	readySession(t, c, k, ns, map[string]string{"kubernetes.operator.resource.cleanup.timeout": deletionTimeout.String()}, ended)
	fake.SetJob(ended, "FINISHED")
	job := &flinkv1beta1.FlinkSessionJob{}
	job.Namespace, job.Name = ns, "orders"
	job.Spec = flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{JarURI: "file:///job.jar", Parallelism: 1,
		UpgradeMode: flinkv1beta1.UpgradeModeStateless, State: flinkv1beta1.JobStateRunning}}
	require.NoError(t, c.Create(ctx, job))

	session := get(t, c, ns, "session")
	started := deleteNow(t, c, session)
	events.seen(t, "Waiting for the session jobs of this session cluster to be deleted: orders")
	wait.Never(t, time.Second, "the session job is deleted before the bound", func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(job), &flinkv1beta1.FlinkSessionJob{}))
	})
	events.seen(t, "Warning "+string(lifecycle.ReasonSessionJobsDeleted))
	wait.For(t, 20*time.Second, "the session job deleted by the session's deletion", func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(job), &flinkv1beta1.FlinkSessionJob{}))
	})
	k.collect(ns, "session")
	goneWithin(t, c, session, started, deletionTimeout)
}

// TestSessionDeletionEndsWithUnmanagedJobsAtTheBound (row: session with running jobs no
// FlinkSessionJob manages): the session waits for them as upstream, then at the cleanup timeout
// is deleted with them, with a Warning UnmanagedJobsStopped naming them.
func TestSessionDeletionEndsWithUnmanagedJobsAtTheBound(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, fake, k, events := newScenario(t, "delete-unmanaged-bound")
	const cliJob = "0123456789abcdef0123456789abcdef"
	readySession(t, c, k, ns, map[string]string{"kubernetes.operator.resource.cleanup.timeout": deletionTimeout.String()}, cliJob)

	session := get(t, c, ns, "session")
	started := deleteNow(t, c, session)
	events.seen(t, "non terminated jobs ["+cliJob+"]")
	events.seen(t, "Warning "+string(lifecycle.ReasonUnmanagedJobsStopped))
	events.seen(t, cliJob+"]; they end with it")
	assert.Equal(t, "RUNNING", fake.Job(cliJob), "the operator does not cancel a job it does not manage")
	k.collect(ns, "session")
	goneWithin(t, c, session, started, deletionTimeout)
}

// TestDeletedSessionJobGoesAtItsBoundWhenItsSessionCannotBeAsked (row: JobManager unreachable,
// session job): the session answers nothing; the deletion waits as upstream (the job may run),
// but at twice the cleanup timeout the resource goes, with a Warning JobStopUnconfirmed that the
// job may still run there.
func TestDeletedSessionJobGoesAtItsBoundWhenItsSessionCannotBeAsked(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "delete-job-unreachable", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	withCleanupTimeout(t, e.c, e.ns, "session", nil)
	e.flink.SetUnreachable("JobManager cut off")

	job := e.get(key)
	started := deleteNow(t, e.c, job)
	wait.Never(t, time.Second, "the finalizer goes before the bound", func() bool { return e.get(key) == nil })
	goneWithin(t, e.c, job, started, 2*deletionTimeout)
	e.events.seen(t, "Warning "+string(lifecycle.ReasonJobStopUnconfirmed))
	e.events.seen(t, "Job "+jobID+" may still run on session session")
}

// TestDeletedSessionJobGivesUpAFailingFinalSavepoint (row: savepoint on deletion failing,
// session job): every savepoint fails; at the cleanup timeout the job is cancelled instead, with
// a Warning NoFinalSavepoint, and the resource goes once the cancel is confirmed.
func TestDeletedSessionJobGivesUpAFailingFinalSavepoint(t *testing.T) {
	t.Parallel()
	e := newSessionJobs(t, "delete-job-sp-fails", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeSavepoint)
	withCleanupTimeout(t, e.c, e.ns, "session", map[string]string{"kubernetes.operator.job.savepoint-on-deletion": "true"})
	e.flink.SetSavepointFailure("the checkpoint storage is full")

	job := e.get(key)
	started := deleteNow(t, e.c, job)
	e.events.seen(t, "Warning "+string(lifecycle.ReasonNoFinalSavepoint))
	e.events.seen(t, "the checkpoint storage is full")
	goneWithin(t, e.c, job, started, 2*deletionTimeout)
	assert.NotEmpty(t, e.flink.StopsOf(jobID), "a savepoint was tried")
	assert.Equal(t, "CANCELED", e.flink.Job(jobID), "cancelled without the savepoint")
}

// snapshotOf creates a savepoint resource of the deployment's job with disposeOnDelete.
func snapshotOf(t *testing.T, c client.Client, ns, name, dep string, existing string) *flinkv1beta1.FlinkStateSnapshot {
	t.Helper()
	yes := true
	s := &flinkv1beta1.FlinkStateSnapshot{}
	s.Namespace, s.Name = ns, name
	s.Spec = flinkv1beta1.FlinkStateSnapshotSpec{JobReference: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: dep},
		Savepoint: &flinkv1beta1.SavepointSpec{DisposeOnDelete: &yes}}
	if existing != "" {
		s.Spec.Savepoint.Path, s.Spec.Savepoint.AlreadyExists = existing, &yes
	}
	require.NoError(t, c.Create(context.Background(), s))
	return s
}

// snapshotWorld is a deployment (not reconciled: only its status, as written here) whose job
// runs on fl, a cleanup timeout on it, and the snapshot operator.
func snapshotWorld(t *testing.T, prefix string, jobState flinkv1beta1.JobStatusState) (string, *fakeflink.Server, *recordedEvents) {
	t.Helper()
	fl := fakeflink.New(t)
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, prefix)
	dep := fixtures.NewDeployment(t, ns, "orders")
	conf, err := dep.Spec.FlinkConfiguration.Flatten()
	require.NoError(t, err)
	conf["kubernetes.operator.resource.cleanup.timeout"] = deletionTimeout.String()
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
	require.NoError(t, c.Create(ctx, dep))
	const jobID = "0000000000000000000000000000abcd"
	dep.Status.JobStatus.JobID, dep.Status.JobStatus.State = jobID, jobState
	dep.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, dep))
	fl.SetJob(jobID, string(jobState))
	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: snapshotController(fl)})
	return ns, fl, events
}

// TestDeletingASavepointInProgressEndsAtTheBound (row: snapshot in progress): Flink never
// completes the savepoint; the resource waits for it as upstream, then goes at the cleanup
// timeout with a Warning SnapshotAbandonedOnDeletion.
func TestDeletingASavepointInProgressEndsAtTheBound(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, fl, events := snapshotWorld(t, "delete-snapshot-bound", flinkv1beta1.JobStatusRunning)
	fl.SetAutoComplete(false)
	s := snapshotOf(t, c, ns, "writing", "orders", "")
	wait.For(t, 20*time.Second, "IN_PROGRESS with its finalizer", func() bool {
		return c.Get(context.Background(), client.ObjectKeyFromObject(s), s) == nil && s.Status.State == flinkv1beta1.SnapshotInProgress && len(s.Finalizers) > 0
	})

	started := deleteNow(t, c, s)
	events.seen(t, "still in progress")
	goneWithin(t, c, s, started, deletionTimeout)
	events.seen(t, "Warning "+string(lifecycle.ReasonSnapshotAbandonedOnDeletion))
	assert.Empty(t, fl.Disposed(), "nothing disposed of")
}

// TestDeletingASavepointWhoseJobDoesNotRunEndsAtTheBound (row: savepoint disposal impossible):
// a completed savepoint with disposeOnDelete whose job does not run cannot be disposed of; the
// resource waits as upstream, then goes at twice the cleanup timeout with a Warning
// SavepointNotDisposed naming the path left in the storage.
func TestDeletingASavepointWhoseJobDoesNotRunEndsAtTheBound(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, fl, events := snapshotWorld(t, "delete-dispose-bound", flinkv1beta1.JobStatusFinished)
	const path = "file:///sp/savepoint-kept"
	s := snapshotOf(t, c, ns, "done", "orders", path)
	wait.For(t, 20*time.Second, "COMPLETED with its finalizer", func() bool {
		return c.Get(context.Background(), client.ObjectKeyFromObject(s), s) == nil && s.Status.State == flinkv1beta1.SnapshotCompleted && len(s.Finalizers) > 0
	})

	started := deleteNow(t, c, s)
	events.seen(t, "Waiting to dispose "+path)
	goneWithin(t, c, s, started, 2*deletionTimeout)
	events.seen(t, "Warning "+string(lifecycle.ReasonSavepointNotDisposed))
	events.seen(t, path)
	assert.Empty(t, fl.Disposed(), "nothing disposed of")
}

// TestBlueGreenDeletionEndsAtOnce (row: FlinkBlueGreenDeployment, any state): it has no
// finalizer of its own, so it goes at once, in the middle of a switch too; its children are
// owned by it and deleted by the garbage collector (played here, envtest has none), each then
// going as a FlinkDeployment does.
func TestBlueGreenDeletionEndsAtOnce(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "delete-bluegreen")
	flink := fakeflink.New(t)
	k := &cluster{t: t, c: c, flink: flink}
	startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, nil)})
	activeBlue(t, c, k, ns, "orders", "10 min")
	flink.SetAutoComplete(false) // the switch's savepoint stays in flight
	changeImage(t, c, ns, "orders", "flink:1.20.3")
	bg := waitFor(t, c, ns, "orders", "SAVEPOINTING_BLUE", inState(flinkv1beta1.BlueGreenSavepointingBlue))
	assert.Empty(t, bg.Finalizers, "no finalizer keeps a FlinkBlueGreenDeployment")

	require.NoError(t, c.Delete(ctx, bg, client.PropagationPolicy("Background")))
	wait.For(t, 10*time.Second, "the FlinkBlueGreenDeployment gone at once", func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(bg), &flinkv1beta1.FlinkBlueGreenDeployment{}))
	})
	// The garbage collector's part: the owned child deleted.
	blue := get(t, c, ns, "orders-blue")
	started := deleteNow(t, c, blue)
	k.collect(ns, "orders-blue")
	goneWithin(t, c, blue, started, deletionTimeout)
}

// TestDeletionWithoutAJobManagerSaysThereIsNoFinalSavepoint (row: JobManager gone): the
// JobManager Deployment vanished (recovery off, so it stays gone) while the job ran; deleting
// the resource with savepoint on deletion cannot take one, and says so at once (Warning
// NoFinalSavepoint, status.error) instead of deleting without a word.
func TestDeletionWithoutAJobManagerSaysThereIsNoFinalSavepoint(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns, _, k, events := newScenario(t, "delete-jm-gone")
	savepointOnDeletion(t, c, k, ns, "orders")
	update(t, c, ns, "orders", func(d *flinkv1beta1.FlinkDeployment) {
		d.Spec.FlinkConfiguration = configWith(t, d.Spec.FlinkConfiguration, "kubernetes.operator.jm-deployment-recovery.enabled", "false")
	})
	require.NoError(t, c.Delete(ctx, k.jobManager(ns, "orders"), client.PropagationPolicy("Background")))
	d := waitFor(t, c, ns, "orders", "JobManager MISSING", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.JobManagerDeploymentStatus == flinkv1beta1.JobManagerMissing
	})

	started := deleteNow(t, c, d)
	events.seen(t, "Warning "+string(lifecycle.ReasonNoFinalSavepoint))
	events.seen(t, "its JobManager is MISSING")
	goneWithin(t, c, d, started, 0)
}
