package controllers

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// Upstream's semantics on the paths the first tests did not walk.
// Each scenario runs in a namespace of its own on one control plane.

func haConfigMaps(t *testing.T, c client.Client, ns, name string) []string {
	t.Helper()
	var list corev1.ConfigMapList
	require.NoError(t, c.List(context.Background(), &list, client.InNamespace(ns), native.HALabels(name)))
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	return names
}

// redeployedWith waits until a JobManager of a newer spec than the one seen is deployed.
func redeployed(t *testing.T, c client.Client, k *cluster, ns, name, oldJob string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	return waitFor(t, c, ns, name, "redeployed", func(d *flinkv1beta1.FlinkDeployment) bool {
		jm := k.jobManager(ns, name)
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && jm != nil && jm.DeletionTimestamp.IsZero() &&
			jm.Annotations[native.AnnotationGeneration] == itoa(d.Generation) && d.Status.JobStatus.JobID != oldJob
	})
}

// TestUpstreamSemantics: each scenario has a namespace, a fake Flink and an operator of its
// own (newScenario), so none depends on what another left behind.
func TestUpstreamSemantics(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client

	// savepointRedeployNonce on a running job restores initialSavepointPath, whatever
	// the upgrade mode: the job is cancelled without a savepoint and its HA metadata is dropped.
	for _, mode := range []flinkv1beta1.UpgradeMode{flinkv1beta1.UpgradeModeStateless, flinkv1beta1.UpgradeModeSavepoint, flinkv1beta1.UpgradeModeLastState} {
		t.Run("savepoint redeploy restores the chosen path/"+string(mode), func(t *testing.T) {
			t.Parallel()
			ns, flink, k, _ := newScenario(t, "redeploy-"+string(mode))
			dep := haDeployment(t, ns, "job", nil)
			dep.Spec.Job.UpgradeMode = mode
			d := stableDeployment(t, c, k, dep)
			oldJob := d.Status.JobStatus.JobID
			stopsBefore := len(flink.Stops())

			update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) {
				d.Spec.Job.InitialSavepointPath = "file:///sp/chosen-by-user"
				d.Spec.Job.SavepointRedeployNonce = fixtures.Ptr(int64(1))
			})
			k.collect(ns, "job")
			redeployed(t, c, k, ns, "job", oldJob)
			assert.Equal(t, "file:///sp/chosen-by-user", restorePath(t, c, ns, "job"), "the user's savepoint is restored")
			assert.Len(t, flink.Stops(), stopsBefore, "no savepoint is taken: the user chose the state")
			assert.NotContains(t, haConfigMaps(t, c, ns, "job"), "job-"+oldJob+"-config-map", "the old job's HA metadata is not recovered")
		})
	}

	// A stop that cannot succeed does not wedge the resource; switching upgradeMode
	// (upstream's escape hatch) gets the upgrade through.
	t.Run("switching to stateless gets an upgrade through when savepoints keep failing", func(t *testing.T) {
		t.Parallel()
		ns, flink, k, _ := newScenario(t, "stuck-savepoint")
		d := stableDeployment(t, c, k, fixtures.NewDeployment(t, ns, "job"))
		oldJob := d.Status.JobStatus.JobID
		flink.SetAutoComplete(false)
		defer flink.SetAutoComplete(true)
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 3 })
		waitFor(t, c, ns, "job", "savepoint triggered", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.JobStatus.SavepointInfo != nil && d.Status.JobStatus.SavepointInfo.TriggerID != ""
		})
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeStateless })
		// Every stop-with-savepoint fails, as with a savepoint directory that is not writable.
		failed := map[string]bool{}
		wait.For(t, 30*time.Second, "the stateless upgrade to go through", func() bool {
			for _, trigger := range flink.Stops() {
				if !failed[trigger] {
					flink.CompleteSavepoint(oldJob, trigger, "savepoint directory not writable")
					failed[trigger] = true
				}
			}
			jm := k.jobManager(ns, "job")
			if jm != nil && !jm.DeletionTimestamp.IsZero() {
				k.collect(ns, "job")
			}
			d := get(t, c, ns, "job")
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && jm != nil && jm.DeletionTimestamp.IsZero() &&
				jm.Annotations[native.AnnotationGeneration] == itoa(d.Generation)
		})
		d = get(t, c, ns, "job")
		assert.Contains(t, d.Status.ReconciliationStatus.LastReconciledSpec, `"parallelism":3`)
		assert.Contains(t, d.Status.ReconciliationStatus.LastReconciledSpec, `"upgradeMode":"stateless"`)
		assert.Equal(t, "", restorePath(t, c, ns, "job"), "stateless: nothing restored")
	})

	// A trigger nonce changed together with an upgrade is not lost: the snapshot is
	// taken once the upgraded job runs.
	t.Run("a savepoint nonce changed with an upgrade is taken after it", func(t *testing.T) {
		t.Parallel()
		ns, _, k, _ := newScenario(t, "nonce-with-upgrade")
		d := stableDeployment(t, c, k, fixtures.NewDeployment(t, ns, "job"))
		oldJob := d.Status.JobStatus.JobID
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) {
			d.Spec.Job.Parallelism = 3
			d.Spec.Job.SavepointTriggerNonce = fixtures.Ptr(int64(7))
		})
		k.collect(ns, "job")
		d = redeployed(t, c, k, ns, "job", oldJob)
		k.run(ns, "job", d.Status.JobStatus.JobID)
		wait.Until(t, context.Background(), 30*time.Second, "the manual savepoint asked for with the upgrade", func() (bool, error) {
			var snaps flinkv1beta1.FlinkStateSnapshotList
			err := c.List(context.Background(), &snaps, client.InNamespace(ns),
				client.MatchingLabels{jobs.LabelSnapshotTrigger: string(flinkv1beta1.SnapshotTriggerManual)})
			return err == nil && len(snaps.Items) == 1, err
		})
		// The snapshot resource is created before the status that records the nonce is written
		// (its name, derived from the request, keeps a repeated reconcile from asking twice).
		waitFor(t, c, ns, "job", "the nonce recorded in lastReconciledSpec", func(d *flinkv1beta1.FlinkDeployment) bool {
			return strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, `"savepointTriggerNonce":7`)
		})
	})

	// A job cancelled through Flink's REST API outside the operator is marked
	// suspended, then restored from its last checkpoint (upstream's markSuspended).
	t.Run("a job cancelled outside the operator is restored from its last checkpoint", func(t *testing.T) {
		t.Parallel()
		ns, flink, k, _ := newScenario(t, "cancelled-outside")
		d := stableDeployment(t, c, k, fixtures.NewDeployment(t, ns, "job"))
		oldJob := d.Status.JobStatus.JobID
		flink.SetJob(oldJob, "CANCELED")
		waitFor(t, c, ns, "job", "marked suspended", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.LifecycleState == flinkv1beta1.LifecycleSuspended || k.jobManager(ns, "job").DeletionTimestamp != nil
		})
		k.collect(ns, "job")
		redeployed(t, c, k, ns, "job", oldJob)
		assert.Equal(t, fakeflink.CheckpointPath(oldJob), restorePath(t, c, ns, "job"), "restored from the cancelled job's last checkpoint")
		assert.Equal(t, "CANCELED", flink.Job(oldJob))
	})

	// A FINISHED job (desired running) is stable, and is never rolled back (re-run).
	t.Run("a finished job is stable and not rolled back", func(t *testing.T) {
		// Not parallel: its grace period runs on the wall clock. 5 s, not less: on a loaded
		// machine a redeployed job can take longer than a second to be observed RUNNING, and
		// rolling that back would be right. The window below outlasts it once the job FINISHED.
		ns, _, k, events := newScenario(t, "finished")
		dep := haDeployment(t, ns, "job", map[string]string{
			"kubernetes.operator.deployment.rollback.enabled": "true", "kubernetes.operator.deployment.readiness.timeout": "5s"})
		d := stableDeployment(t, c, k, dep)
		oldJob := d.Status.JobStatus.JobID
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 1 })
		k.collect(ns, "job")
		d = redeployed(t, c, k, ns, "job", "")
		newJob := d.Status.JobStatus.JobID
		k.finish(ns, "job", newJob) // a bounded job may end between two observes
		d = waitFor(t, c, ns, "job", "FINISHED and STABLE", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.JobStatus.State == flinkv1beta1.JobStatusFinished && d.Status.LifecycleState == flinkv1beta1.LifecycleStable
		})
		assert.Contains(t, d.Status.ReconciliationStatus.LastStableSpec, `"parallelism":1`)
		assert.Equal(t, oldJob == newJob, true, "last-state through HA keeps the job id")
		// Past the readiness timeout, the finished job is still not rolled back.
		wait.Never(t, 6*time.Second, "the finished job rolled back", func() bool {
			d := get(t, c, ns, "job")
			return events.has("rolling back") || d.Status.JobStatus.State != flinkv1beta1.JobStatusFinished
		})
	})

	// Setting restartNonce to null (removing it) restarts nothing.
	t.Run("removing restartNonce restarts nothing", func(t *testing.T) {
		t.Parallel()
		ns, _, k, _ := newScenario(t, "null-nonce")
		dep := fixtures.NewDeployment(t, ns, "job")
		dep.Spec.RestartNonce = fixtures.Ptr(int64(3))
		stableDeployment(t, c, k, dep)
		jm := k.jobManager(ns, "job")
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.RestartNonce = nil })
		d := waitFor(t, c, ns, "job", "the new generation observed", func(got *flinkv1beta1.FlinkDeployment) bool {
			cond := meta.FindStatusCondition(got.Status.Conditions, "Ready")
			return cond != nil && cond.ObservedGeneration == got.Generation
		})
		assert.Equal(t, flinkv1beta1.LifecycleStable, d.Status.LifecycleState)
		assert.Equal(t, jm.UID, k.jobManager(ns, "job").UID, "the JobManager was not replaced")
	})

	// No rollback without HA metadata to roll back with, and a spec change (the fix)
	// is applied instead of being ignored.
	t.Run("a rollback needs HA metadata, and a fixed spec is applied", func(t *testing.T) {
		// Not parallel: its grace period runs on the wall clock, too short for a loaded machine.
		ns, _, k, events := newScenario(t, "rollback-no-ha")
		dep := haDeployment(t, ns, "job", map[string]string{
			"kubernetes.operator.deployment.rollback.enabled": "true", "kubernetes.operator.deployment.readiness.timeout": "1s"})
		dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeStateless
		d := stableDeployment(t, c, k, dep)
		oldJob := d.Status.JobStatus.JobID
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Image = "flink:does-not-exist" })
		k.collect(ns, "job")
		broken := redeployed(t, c, k, ns, "job", oldJob) // its JobManager never becomes available
		wait.For(t, 10*time.Second, "events.has(\"Rollback is not possible\")", func() bool { return events.has("Rollback is not possible") })
		assert.NotEqual(t, flinkv1beta1.LifecycleRollingBack, get(t, c, ns, "job").Status.LifecycleState)

		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Image = "flink:1.20" })
		k.collect(ns, "job")
		redeployed(t, c, k, ns, "job", broken.Status.JobStatus.JobID)
		assert.Equal(t, "flink:1.20", k.jobManager(ns, "job").Spec.Template.Spec.Containers[0].Image, "the fix is deployed")
	})

	// A last-state upgrade without HA cancels first and reads the latest checkpoint
	// once the job is CANCELED, so a checkpoint completing during the cancel is not lost.
	t.Run("the checkpoint restored is the latest one after the cancel", func(t *testing.T) {
		t.Parallel()
		ns, flink, k, _ := newScenario(t, "cancel-race")
		dep := fixtures.NewDeployment(t, ns, "job")
		dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeLastState
		d := stableDeployment(t, c, k, dep)
		oldJob := d.Status.JobStatus.JobID
		newer := "file:/flink/checkpoints/" + oldJob + "/chk-8"
		flink.OnCancel(func(jobID string) {
			if jobID == oldJob {
				flink.SetLatestCheckpoint(jobID, newer) // completed while cancelling, subsuming chk-7
			}
		})
		defer flink.OnCancel(nil)
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 3 })
		k.collect(ns, "job")
		redeployed(t, c, k, ns, "job", oldJob)
		assert.Equal(t, newer, restorePath(t, c, ns, "job"), "the checkpoint that completed during the cancel is restored")
		assert.Equal(t, "CANCELED", flink.Job(oldJob))
	})

	// After a rollback the stable spec is what runs: a lost JobManager comes back
	// with it (not with the failed spec), and setting the spec back to it restarts nothing.
	t.Run("a rolled-back cluster runs the stable spec", func(t *testing.T) {
		// Not parallel: its grace period runs on the wall clock, too short for a loaded machine.
		ns, flink, k, _ := newScenario(t, "rolled-back")
		d := stableDeployment(t, c, k, haDeployment(t, ns, "job", map[string]string{
			"kubernetes.operator.deployment.rollback.enabled": "true", "kubernetes.operator.deployment.readiness.timeout": "1s"}))
		jobID := d.Status.JobStatus.JobID
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 4 })
		flink.SetJob(jobID, "") // the new spec never runs
		k.collect(ns, "job")
		waitFor(t, c, ns, "job", "ROLLING_BACK", lifecycleIs(flinkv1beta1.LifecycleRollingBack))
		k.collect(ns, "job")
		waitFor(t, c, ns, "job", "ROLLED_BACK", lifecycleIs(flinkv1beta1.LifecycleRolledBack))
		k.run(ns, "job", jobID)

		require.NoError(t, c.Delete(context.Background(), k.jobManager(ns, "job"))) // gone at once: envtest runs no garbage collector
		wait.For(t, 30*time.Second, "the rolled-back cluster recovered", func() bool {
			jm := k.jobManager(ns, "job")
			return jm != nil && jm.DeletionTimestamp.IsZero() && get(t, c, ns, "job").Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationRolledBack
		})
		cm := &corev1.ConfigMap{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "flink-config-job"}, cm))
		assert.Contains(t, cm.Data["config.yaml"], `parallelism.default: "2"`, "recovered with the stable spec, not the failed one")
		k.run(ns, "job", jobID)

		jm := k.jobManager(ns, "job")
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 2 })
		waitFor(t, c, ns, "job", "STABLE on the spec that runs", lifecycleIs(flinkv1beta1.LifecycleStable))
		assert.Equal(t, jm.UID, k.jobManager(ns, "job").UID, "nothing restarted")
	})

	// kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age: a last-state upgrade
	// of a job whose latest checkpoint is too old takes a savepoint instead (the fake reports a
	// job started long ago and checkpoints without timestamps).
	t.Run("a last-state upgrade with a too old checkpoint takes a savepoint", func(t *testing.T) {
		t.Parallel()
		ns, flink, k, _ := newScenario(t, "checkpoint-too-old")
		d := stableDeployment(t, c, k, haDeployment(t, ns, "job", map[string]string{options.MaxCheckpointAge.Key: "1 min"}))
		oldJob := d.Status.JobStatus.JobID
		stopsBefore := len(flink.Stops())
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 3 })
		k.collect(ns, "job")
		redeployed(t, c, k, ns, "job", oldJob)
		assert.Len(t, flink.Stops(), stopsBefore+1, "stopped with a savepoint")
		assert.Contains(t, restorePath(t, c, ns, "job"), "file:/flink/savepoints/", "restored from that savepoint")
	})

	// A job id the user fixed in flinkConfiguration wins, and is what the status says.
	t.Run("a user-fixed job id wins", func(t *testing.T) {
		t.Parallel()
		ns, _, k, _ := newScenario(t, "fixed-job-id")
		const fixed = "0000000000000000000000000000cafe"
		dep := fixtures.NewDeployment(t, ns, "job")
		dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeStateless
		conf, err := dep.Spec.FlinkConfiguration.Flatten()
		require.NoError(t, err)
		conf["$internal.pipeline.job-id"] = fixed
		dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
		d := stableDeployment(t, c, k, dep)
		assert.Equal(t, fixed, d.Status.JobStatus.JobID)
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 3 })
		k.collect(ns, "job")
		d = waitFor(t, c, ns, "job", "redeployed", func(d *flinkv1beta1.FlinkDeployment) bool {
			jm := k.jobManager(ns, "job")
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && jm != nil && jm.DeletionTimestamp.IsZero() &&
				jm.Annotations[native.AnnotationGeneration] == itoa(d.Generation)
		})
		assert.Equal(t, fixed, d.Status.JobStatus.JobID, "still the user's job id after a stateless upgrade")
	})

	// A session cluster's spec change keeps the HA metadata of its session jobs, so
	// the new JobManager recovers them from their checkpoints.
	t.Run("a session cluster's spec change keeps its HA metadata", func(t *testing.T) {
		t.Parallel()
		ns, _, k, _ := newScenario(t, "session-ha")
		dep := haDeployment(t, ns, "session", nil)
		dep.Spec.Job = nil
		require.NoError(t, c.Create(context.Background(), dep))
		waitFor(t, c, ns, "session", "deployed", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
		})
		k.run(ns, "session", "0123456789abcdef0123456789abcdef")
		waitFor(t, c, ns, "session", "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
		update(t, c, ns, "session", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.TaskManager.Resource.Memory = "2g" })
		k.collect(ns, "session")
		waitFor(t, c, ns, "session", "redeployed", func(d *flinkv1beta1.FlinkDeployment) bool {
			jm := k.jobManager(ns, "session")
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && jm != nil && jm.DeletionTimestamp.IsZero() &&
				jm.Annotations[native.AnnotationGeneration] == itoa(d.Generation)
		})
		assert.Contains(t, haConfigMaps(t, c, ns, "session"), "session-0123456789abcdef0123456789abcdef-config-map",
			"the session jobs' HA metadata survives the session's upgrade")
		assert.NotEmpty(t, k.jobGraphs(ns, "session"), "a session's job graphs are kept: its JobManager recovers the jobs")
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// finish makes the JobManager available with its job already FINISHED, as when a bounded job
// ends between two observes.
func (k *cluster) finish(ns, name, jobID string) {
	k.t.Helper()
	k.flink.SetJob(jobID, "FINISHED")
	k.makeAvailable(ns, name)
}
