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
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// The Apache operator records in lastReconciledSpec and lastStableSpec the mode it restored the
// job with, not the one the user asked for: job.upgradeMode is stateless after every first
// deployment (the captures in testdata/upstream), and a change of upgradeMode alone is never
// recorded, by either operator. These tests take over such resources, and resources this
// operator created whose only change was upgradeMode, and check that nothing decides from that
// recorded mode: what reaches Flink (restore path, job id, submissions) and the HA ConfigMaps
// are asserted, never this operator's status alone.

// adoptStep takes over a capture with the adopting operator running, and waits until this
// operator has observed every adopted resource at its generation.
func adoptStep(t *testing.T, step string) (*adopted, *recordedEvents) {
	t.Helper()
	flink := fakeflink.New(t)
	c := testEnv(t).Client
	capture := loadCapture(t, step)
	localJars(t, capture)
	ns := adoptCapture(t, c, flink, capture)
	a := &adopted{c: c, ns: ns, flink: flink, k: &cluster{t: t, c: c, flink: flink}, capture: capture}
	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: adoptingControllers(flink)})
	for _, want := range capture.deployments {
		waitFor(t, c, ns, want.Name, "the adopted resource observed", func(d *flinkv1beta1.FlinkDeployment) bool {
			cond := meta.FindStatusCondition(d.Status.Conditions, "Reconciling")
			return cond != nil && cond.ObservedGeneration == d.Generation
		})
	}
	return a, events
}

// localJars points the capture's session jobs at a local jar, in their spec and in what the
// Apache operator recorded alike (so nothing differs at adoption): the jar server the capture
// was taken with is gone, and a job restarted in place must fetch its jar again.
func localJars(t *testing.T, capture *upstreamCapture) {
	t.Helper()
	jar := filepath.Join(t.TempDir(), "job.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK fake jar"), 0o644))
	for _, j := range capture.sessionJobs {
		old := j.Spec.Job.JarURI
		j.Spec.Job.JarURI = "file://" + jar
		rs := &j.Status.ReconciliationStatus
		rs.LastReconciledSpec = strings.ReplaceAll(rs.LastReconciledSpec, old, j.Spec.Job.JarURI)
		rs.LastStableSpec = strings.ReplaceAll(rs.LastStableSpec, old, j.Spec.Job.JarURI)
	}
}

// setOptions adds operator options to a FlinkDeployment's flinkConfiguration (a change that
// restarts nothing) and waits until it is observed.
func setOptions(t *testing.T, c client.Client, ns, name string, kv map[string]string) {
	t.Helper()
	update(t, c, ns, name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec = *withConfig(t, &d.Spec, kv) })
	waitObserved(t, c, ns, name)
}

func waitObserved(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	waitFor(t, c, ns, name, "the new generation observed", func(d *flinkv1beta1.FlinkDeployment) bool {
		cond := meta.FindStatusCondition(d.Status.Conditions, "Reconciling")
		return cond != nil && cond.ObservedGeneration == d.Generation
	})
}

// rollbackOptions make a change that does not become ready within 2 s roll back.
var rollbackOptions = map[string]string{
	"kubernetes.operator.deployment.rollback.enabled": "true", "kubernetes.operator.deployment.readiness.timeout": "2s"}

// assertRolledBackThroughHA: a failed change of a job with state rolled back through the HA
// metadata, as upstream's prepareCrForRollback does for any non-stateless mode: the HA
// ConfigMaps survived, the JobManager restores from them (the sentinel, not nothing) and the
// job keeps its id; nothing was cancelled.
func assertRolledBackThroughHA(t *testing.T, c client.Client, flink *fakeflink.Server, ns, name, jobID string, haBefore []string) {
	t.Helper()
	d := get(t, c, ns, name)
	assert.Equal(t, jobID, d.Status.JobStatus.JobID, "the rollback keeps the job id (its checkpoints are found by it)")
	assert.Equal(t, flinkv1beta1.LastStateSentinelPath, restorePath(t, c, ns, name), "the rolled-back JobManager restores from the HA metadata")
	assert.ElementsMatch(t, haBefore, haConfigMaps(t, c, ns, name), "the HA ConfigMaps are kept through the rollback")
	assert.Empty(t, cancels(flink), "nothing cancelled")
}

func cancels(flink *fakeflink.Server) []string {
	var out []string
	for _, r := range flink.Requests() {
		if strings.HasPrefix(r, "PATCH /jobs/") {
			out = append(out, r)
		}
	}
	return out
}

// TestRecordedUpgradeModeIsNotTheUsersIntent: each decision that once read the recorded
// upgradeMode (rollback, a session job its session lost, the checkpoint of an ended job) takes
// it from where upstream does, for a resource the Apache operator deployed and for one this
// operator deployed whose only change was upgradeMode.
func TestRecordedUpgradeModeIsNotTheUsersIntent(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client

	// Rollback: upstream rolls back in the mode of the spec that failed; the stable one says
	// stateless here, which would delete the HA metadata and start the job empty.
	t.Run("an adopted deployment rolls back through its HA metadata", func(t *testing.T) {
		t.Parallel()
		a, events := adoptStep(t, "s1-laststate/01-running-stable")
		d := a.deployment()
		require.Contains(t, d.Status.ReconciliationStatus.LastStableSpec, `"upgradeMode":"stateless"`, "the capture records the restore mode")
		rollsBackKeepingState(t, a, events)
	})
	t.Run("a deployment whose only change was upgradeMode rolls back through its HA metadata", func(t *testing.T) {
		t.Parallel()
		ns, flink, k, events := newScenario(t, "rollback-mode-only")
		dep := haDeployment(t, ns, "job", rollbackOptions)
		dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeStateless
		d := stableDeployment(t, c, k, dep)
		jobID := d.Status.JobStatus.JobID
		jm := k.jobManager(ns, "job")
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeLastState })
		waitObserved(t, c, ns, "job")
		require.Equal(t, jm.UID, k.jobManager(ns, "job").UID, "changing upgradeMode alone restarts nothing")
		require.Contains(t, get(t, c, ns, "job").Status.ReconciliationStatus.LastStableSpec, `"upgradeMode":"stateless"`)
		haBefore := haConfigMaps(t, c, ns, "job")
		require.NotEmpty(t, haBefore)

		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 4 })
		flink.SetJob(jobID, "") // the new spec never runs
		k.collect(ns, "job")
		waitFor(t, c, ns, "job", "ROLLING_BACK", lifecycleIs(flinkv1beta1.LifecycleRollingBack))
		k.collect(ns, "job")
		waitFor(t, c, ns, "job", "ROLLED_BACK", lifecycleIs(flinkv1beta1.LifecycleRolledBack))
		events.seen(t, "Rolled back")
		assertRolledBackThroughHA(t, c, flink, ns, "job", jobID, haBefore)
	})

	// A session job its session lost: upstream's onTargetJobNotFound resubmits only when the
	// current spec is stateless.
	t.Run("an adopted session job its session lost is not submitted again", func(t *testing.T) {
		t.Parallel()
		a, events := adoptStep(t, "s3-session/01-running")
		sessionForgetsTheJob(t, a, events)
	})
	t.Run("a session job whose only change was upgradeMode is not submitted again when lost", func(t *testing.T) {
		t.Parallel()
		e := newSessionJobs(t, "lost-mode-only", false, "session")
		key, id := e.run("job", flinkv1beta1.UpgradeModeStateless)
		e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeSavepoint })
		wait.For(t, 10*time.Second, "sessionJobObserved(e.get(key))", func() bool { return sessionJobObserved(e.get(key)) })
		require.Equal(t, 1, e.submitted(id), "changing upgradeMode alone submits nothing")
		e.flink.SetLatestCheckpoint(id, "file:/flink/checkpoints/"+id+"/chk-9")
		e.flink.SetJob(id, "")
		wait.For(t, 20*time.Second, "the lost job reported", func() bool {
			return flinkv1beta1.ErrorReason(e.get(key).Status.Error) == flinkv1beta1.ErrorReasonJobNotFound
		})
		wait.Never(t, time.Second, "a savepoint-mode job is never submitted again without its state", func() bool { return len(e.flink.Runs()) > 1 })
	})

	// The checkpoint of an ended job: upstream records it whatever the recorded mode, so a
	// restart (job.restart.failed) or an upgrade restores it instead of asking for a manual
	// restore.
	t.Run("an adopted job that fails restarts from its latest checkpoint", func(t *testing.T) {
		t.Parallel()
		a, events := adoptStep(t, "s1-laststate/01-running-stable")
		failsAndRestartsFromItsCheckpoint(t, a, events)
	})
	t.Run("a job whose only change was upgradeMode restarts from its latest checkpoint when it fails", func(t *testing.T) {
		t.Parallel()
		ns, flink, k, events := newScenario(t, "restart-mode-only")
		dep := fixtures.NewDeployment(t, ns, "job")
		dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeStateless
		dep.Spec = *withConfig(t, &dep.Spec, map[string]string{"kubernetes.operator.job.restart.failed": "true"})
		d := stableDeployment(t, c, k, dep)
		jobID := d.Status.JobStatus.JobID
		update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeLastState })
		waitObserved(t, c, ns, "job")
		checkpoint := "file:/flink/checkpoints/" + jobID + "/chk-42"
		flink.SetLatestCheckpoint(jobID, checkpoint)
		flink.SetJob(jobID, "FAILED")
		events.seen(t, jobs.ReasonRestartFailed)
		k.collect(ns, "job")
		redeployed(t, c, k, ns, "job", jobID)
		assert.Equal(t, checkpoint, restorePath(t, c, ns, "job"), "the failed job's latest checkpoint is restored")
	})
}

// rollsBackKeepingState: an adopted running job with Kubernetes HA gets rollback enabled, then a
// change whose cluster never becomes ready; it rolls back through its HA metadata.
func rollsBackKeepingState(t *testing.T, a *adopted, events *recordedEvents) {
	t.Helper()
	d := a.deployment()
	name, jobID := d.Name, d.Status.JobStatus.JobID
	haBefore := haConfigMaps(t, a.c, a.ns, name)
	require.NotEmpty(t, haBefore, "the capture has HA ConfigMaps")
	setOptions(t, a.c, a.ns, name, rollbackOptions)
	stopsBefore := len(a.flink.Stops())

	update(t, a.c, a.ns, name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 3 })
	a.collect(name)
	if mode := d.Spec.Job.UpgradeMode; mode == flinkv1beta1.UpgradeModeSavepoint {
		// A savepoint upgrade stopped the job and started a new one from the savepoint, which
		// writes HA metadata of its own and then never runs.
		require.Len(t, a.flink.Stops(), stopsBefore+1, "one stop-with-savepoint")
		d = waitFor(t, a.c, a.ns, name, "the failing change deployed", a.redeployed(name))
		jobID = d.Status.JobStatus.JobID
		a.k.writeHAMetadata(a.ns, name, jobID)
		a.flink.SetJob(jobID, "RESTARTING")
		haBefore = haConfigMaps(t, a.c, a.ns, name)
	} else {
		a.flink.SetJob(jobID, "") // the JobManager of the new spec never comes up
	}
	waitFor(t, a.c, a.ns, name, "ROLLING_BACK", lifecycleIs(flinkv1beta1.LifecycleRollingBack))
	a.collect(name)
	waitFor(t, a.c, a.ns, name, "ROLLED_BACK", lifecycleIs(flinkv1beta1.LifecycleRolledBack))
	events.seen(t, "Rolled back")
	assertRolledBackThroughHA(t, a.c, a.flink, a.ns, name, jobID, haBefore)
}

// failsAndRestartsFromItsCheckpoint: an adopted job with kubernetes.operator.job.restart.failed
// fails after a checkpoint completed; it is restarted from that checkpoint.
func failsAndRestartsFromItsCheckpoint(t *testing.T, a *adopted, events *recordedEvents) {
	t.Helper()
	d := a.deployment()
	name, jobID := d.Name, d.Status.JobStatus.JobID
	setOptions(t, a.c, a.ns, name, map[string]string{"kubernetes.operator.job.restart.failed": "true"})
	checkpoint := "file:/flink/checkpoints/" + jobID + "/chk-42"
	a.flink.SetLatestCheckpoint(jobID, checkpoint)
	a.flink.SetJob(jobID, "FAILED")
	wait.For(t, 20*time.Second, "a restart ("+jobs.ReasonRestartFailed+" event)", func() bool { return events.has(jobs.ReasonRestartFailed) },
		func() string { return fmt.Sprintf("status %+v", get(t, a.c, a.ns, name).Status) })
	a.collect(name)
	waitFor(t, a.c, a.ns, name, "restarted", a.redeployed(name))
	assert.Equal(t, checkpoint, restorePath(t, a.c, a.ns, name), "the failed job's latest checkpoint is restored")
	assert.Empty(t, get(t, a.c, a.ns, name).Status.Error)
}

// sessionForgetsTheJob: the session cluster of an adopted savepoint-mode session job no longer
// knows the job (a JobManager restarted without HA); it is reported, never submitted again
// with no state.
func sessionForgetsTheJob(t *testing.T, a *adopted, events *recordedEvents) {
	t.Helper()
	j := a.sessionJob()
	require.NotEqual(t, flinkv1beta1.UpgradeModeStateless, j.Spec.Job.UpgradeMode)
	a.flink.SetJob(j.Status.JobStatus.JobID, "")
	wait.For(t, 20*time.Second, "the lost job reported", func() bool {
		return flinkv1beta1.ErrorReason(a.sessionJob().Status.Error) == flinkv1beta1.ErrorReasonJobNotFound
	}, func() string { return fmt.Sprintf("status %+v", a.sessionJob().Status) })
	wait.Never(t, time.Second, "nothing uploaded or submitted", func() bool { return len(a.flink.Runs()) > 0 || a.flink.Jars() > 0 })
	assert.False(t, events.has("submitting it again"))
	assert.Equal(t, j.Status.JobStatus.UpgradeSavepointPath, a.sessionJob().Status.JobStatus.UpgradeSavepointPath, "the recorded savepoint is kept")
}

// TestLifeAfterAdoption: every state the Apache operator left (testdata/upstream) lives on
// under this operator: the job fails, a change fails and rolls back, the session forgets its
// job, a manual savepoint is asked for. (A plain spec change after adoption is
// TestAdoptsEveryCapturedUpstreamState.) Asserted on what reaches Flink and on the HA
// ConfigMaps.
func TestLifeAfterAdoption(t *testing.T) {
	t.Parallel()
	applications := []string{
		"s1-laststate/01-running-stable", "s1-laststate/02-after-manual-savepoint",
		"s1-laststate/03-after-parallelism-2-laststate-upgrade", "s1-laststate/05-after-resume",
		"s2-savepoint/01-running-stable", "s2-savepoint/02-after-parallelism-2-savepoint-upgrade",
		"s4-handmade-snapshot/01-completed",
	}
	type scenario struct {
		name string
		run  func(t *testing.T, a *adopted, events *recordedEvents)
	}
	appScenarios := []scenario{
		{"the job fails", failsAndRestartsFromItsCheckpoint},
		{"a change fails and rolls back", rollsBackKeepingState},
		{"a savepoint nonce", manualSavepointOfDeployment},
	}
	sessionScenarios := []scenario{
		{"the session forgets the job", sessionForgetsTheJob},
		{"a savepoint nonce", manualSavepointOfSessionJob},
		{"the job fails", sessionJobFailsAndRestarts},
		{"the job fails and a change restores its checkpoint", sessionJobFailsThenChanges},
	}
	run := func(step string, scenarios []scenario) {
		for _, sc := range scenarios {
			t.Run(step+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				a, events := adoptStep(t, step)
				sc.run(t, a, events)
			})
		}
	}
	for _, step := range applications {
		run(step, appScenarios)
	}
	run("s3-session/01-running", sessionScenarios)
	run("s3-session/02-after-sessionjob-parallelism-2-savepoint-upgrade", sessionScenarios)
	// Suspended by the Apache operator: resumed through HA, then the job fails.
	t.Run("s1-laststate/04-after-suspend/resumed, then the job fails", func(t *testing.T) {
		t.Parallel()
		a, events := adoptStep(t, "s1-laststate/04-after-suspend")
		d := a.deployment()
		update(t, a.c, a.ns, d.Name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.State = flinkv1beta1.JobStateRunning })
		d = waitFor(t, a.c, a.ns, d.Name, "resumed", a.redeployed(d.Name))
		assert.Equal(t, flinkv1beta1.LastStateSentinelPath, restorePath(t, a.c, a.ns, d.Name), "resumed from the HA metadata")
		a.flink.SetJob(d.Status.JobStatus.JobID, "RUNNING")
		waitFor(t, a.c, a.ns, d.Name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
		failsAndRestartsFromItsCheckpoint(t, a, events)
	})
}

// manualSavepointOfDeployment: a new savepointTriggerNonce on an adopted deployment takes one
// savepoint of the running job (a MANUAL FlinkStateSnapshot), and stops or restarts nothing.
func manualSavepointOfDeployment(t *testing.T, a *adopted, _ *recordedEvents) {
	t.Helper()
	d := a.deployment()
	jm := a.k.jobManager(a.ns, d.Name)
	nonce := int64(4242)
	before := snapshotNames(t, a)
	update(t, a.c, a.ns, d.Name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.SavepointTriggerNonce = &nonce })
	savepointTaken(t, a, d.Status.JobStatus.JobID, before)
	assert.Equal(t, jm.UID, a.k.jobManager(a.ns, d.Name).UID, "the JobManager was not replaced")
	assert.Equal(t, int64(1), a.k.jobManager(a.ns, d.Name).Generation, "the JobManager was not rolled out")
}

func manualSavepointOfSessionJob(t *testing.T, a *adopted, _ *recordedEvents) {
	t.Helper()
	j := a.sessionJob()
	nonce := int64(4242)
	before := snapshotNames(t, a)
	patchSessionJob(t, a.c, client.ObjectKeyFromObject(j), func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.SavepointTriggerNonce = &nonce })
	savepointTaken(t, a, j.Status.JobStatus.JobID, before)
	assert.Empty(t, a.flink.Runs(), "nothing submitted")
}

// savepointTaken waits for a new MANUAL savepoint of job to complete in its FlinkStateSnapshot,
// taken by Flink as a plain savepoint; the job still runs, nothing was stopped or cancelled.
func savepointTaken(t *testing.T, a *adopted, jobID string, before map[string]bool) {
	t.Helper()
	var manual *flinkv1beta1.FlinkStateSnapshot
	wait.Until(t, context.Background(), 30*time.Second, "a completed manual savepoint", func() (bool, error) {
		var list flinkv1beta1.FlinkStateSnapshotList
		if err := a.c.List(context.Background(), &list, client.InNamespace(a.ns)); err != nil {
			return false, err
		}
		for i := range list.Items {
			s := &list.Items[i]
			if !before[s.Name] && s.Labels[jobs.LabelSnapshotTrigger] == string(flinkv1beta1.SnapshotTriggerManual) && s.Status.State == flinkv1beta1.SnapshotCompleted {
				manual = s
				return true, nil
			}
		}
		return false, nil
	}, func() string { return fmt.Sprintf("requests %v", a.flink.Requests()) })
	assert.True(t, slices.Contains(a.flink.Requests(), "POST /jobs/"+jobID+"/savepoints"), "the savepoint was taken of the adopted job")
	assert.NotEmpty(t, manual.Status.Path)
	for _, r := range a.flink.Requests() {
		assert.NotContains(t, r, "/stop", "nothing stopped")
	}
	assert.Empty(t, cancels(a.flink), "nothing cancelled")
	assert.Equal(t, "RUNNING", a.flink.Job(jobID))
}

// snapshotNames are the FlinkStateSnapshots that exist now.
func snapshotNames(t *testing.T, a *adopted) map[string]bool {
	t.Helper()
	var list flinkv1beta1.FlinkStateSnapshotList
	require.NoError(t, a.c.List(context.Background(), &list, client.InNamespace(a.ns)))
	names := map[string]bool{}
	for _, s := range list.Items {
		names[s.Name] = true
	}
	return names
}

// sessionJobFailsThenChanges: an adopted session job fails after a checkpoint completed; the
// next change submits it from that checkpoint.
func sessionJobFailsThenChanges(t *testing.T, a *adopted, _ *recordedEvents) {
	t.Helper()
	j := a.sessionJob()
	jobID := j.Status.JobStatus.JobID
	checkpoint := "file:/flink/checkpoints/" + jobID + "/chk-42"
	a.flink.SetLatestCheckpoint(jobID, checkpoint)
	a.flink.SetJob(jobID, "FAILED")
	wait.For(t, 20*time.Second, "the failure observed", func() bool {
		return a.sessionJob().Status.JobStatus.State == flinkv1beta1.JobStatusFailed
	}, func() string { return fmt.Sprintf("status %+v", a.sessionJob().Status) })
	patchSessionJob(t, a.c, client.ObjectKeyFromObject(j), func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 3 })
	wait.For(t, 30*time.Second, "submitted again", func() bool { return len(a.flink.Runs()) > 0 },
		func() string { return fmt.Sprintf("status %+v", a.sessionJob().Status) })
	runs := a.flink.Runs()
	require.Len(t, runs, 1)
	assert.Equal(t, checkpoint, runs[0].SavepointPath, "restored from the failed job's latest checkpoint")
	assert.Equal(t, 3, runs[0].Parallelism)
}

// sessionJobFailsAndRestarts: an adopted session job with kubernetes.operator.job.restart.failed
// fails after a checkpoint completed; it is submitted again from that checkpoint, with the spec
// it ran.
func sessionJobFailsAndRestarts(t *testing.T, a *adopted, events *recordedEvents) {
	t.Helper()
	j := a.sessionJob()
	jobID := j.Status.JobStatus.JobID
	patchSessionJob(t, a.c, client.ObjectKeyFromObject(j), func(j *flinkv1beta1.FlinkSessionJob) {
		flat, err := j.Spec.FlinkConfiguration.Flatten()
		require.NoError(t, err)
		flat["kubernetes.operator.job.restart.failed"] = "true"
		j.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(flat)
	})
	wait.For(t, 20*time.Second, "the option observed", func() bool { return sessionJobObserved(a.sessionJob()) }, func() string { return fmt.Sprintf("status %+v", a.sessionJob().Status) })
	require.Empty(t, a.flink.Runs(), "an operator option restarts nothing")
	checkpoint := "file:/flink/checkpoints/" + jobID + "/chk-42"
	a.flink.SetLatestCheckpoint(jobID, checkpoint)
	a.flink.SetJob(jobID, "FAILED")
	wait.For(t, 30*time.Second, "submitted again", func() bool { return len(a.flink.Runs()) > 0 },
		func() string { return fmt.Sprintf("status %+v", a.sessionJob().Status) })
	events.seen(t, jobs.ReasonRestartFailed)
	runs := a.flink.Runs()
	require.Len(t, runs, 1)
	assert.Equal(t, checkpoint, runs[0].SavepointPath, "restored from the failed job's latest checkpoint")
	assert.Equal(t, j.Spec.Job.Parallelism, int32(runs[0].Parallelism), "the spec it ran")
	assert.NotEqual(t, jobID, runs[0].JobID)
}

// sessionJobObserved: the session job's current generation has been reconciled (a change that
// restarts nothing is not recorded as a new spec, so status.observedGeneration stays).
func sessionJobObserved(j *flinkv1beta1.FlinkSessionJob) bool {
	cond := meta.FindStatusCondition(j.Status.Conditions, "Reconciling")
	return cond != nil && cond.ObservedGeneration == j.Generation
}
