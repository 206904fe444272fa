package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestFlinkDeploymentLifecycle walks one FlinkDeployment's life in scenarios that each start
// from a fresh deployment of their own, so one failing says nothing about the next and any of
// them runs alone (go test -run 'TestFlinkDeploymentLifecycle/suspend').
func TestFlinkDeploymentLifecycle(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	const name = "orders"

	t.Run("deploys and becomes stable", func(t *testing.T) {
		t.Parallel()
		ns, _, k, events := newScenario(t, "lifecycle-deploy")
		require.NoError(t, c.Create(ctx, fixtures.NewDeployment(t, ns, name)))
		d := waitFor(t, c, ns, name, "deployment", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && d.Status.JobStatus.JobID != ""
		})
		assert.Contains(t, d.Finalizers, flinkdeployment.DeploymentFinalizer)
		assert.Equal(t, flinkv1beta1.LifecycleDeployed, d.Status.LifecycleState)
		firstJob := d.Status.JobStatus.JobID
		assert.True(t, flinkIDLike(firstJob), firstJob)
		jm := k.jobManager(ns, name)
		require.NotNil(t, jm)
		assert.Equal(t, "1", jm.Annotations["flinkdeployment.flink.apache.org/generation"])

		k.run(ns, name, firstJob)
		d = waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
		assert.Equal(t, flinkv1beta1.JobManagerReady, d.Status.JobManagerDeploymentStatus)
		assert.Equal(t, flinkv1beta1.JobStatusRunning, d.Status.JobStatus.State)
		assert.Equal(t, d.Status.ReconciliationStatus.LastReconciledSpec, d.Status.ReconciliationStatus.LastStableSpec)
		assert.True(t, meta.IsStatusConditionTrue(d.Status.Conditions, "Ready"))
		assert.True(t, meta.IsStatusConditionTrue(d.Status.Conditions, "Running"))
		assert.Equal(t, int32(1), d.Status.TaskManager.Replicas, "parallelism 2 on 2 slots")
		events.seen(t, "Submit")
		events.seen(t, "JobStatusChanged")
		assert.True(t, meta.IsStatusConditionFalse(d.Status.Conditions, "Reconciling"))
		assert.True(t, meta.IsStatusConditionFalse(d.Status.Conditions, "Stalled"))
		for typ, reason := range map[string]lifecycle.Reason{lifecycle.ConditionProgressing: lifecycle.ReasonSettled, lifecycle.ConditionDegraded: lifecycle.ReasonHealthy} {
			if cond := meta.FindStatusCondition(d.Status.Conditions, typ); assert.NotNil(t, cond, typ) {
				assert.Equal(t, metav1.ConditionFalse, cond.Status, typ)
				assert.Equal(t, string(reason), cond.Reason, typ)
				assert.Equal(t, d.Generation, cond.ObservedGeneration, typ)
			}
		}
	})

	t.Run("job failures become Warning events, each once", func(t *testing.T) {
		t.Parallel()
		_, flink, _, events, d := runningDeployment(t, "lifecycle-exceptions")
		job := d.Status.JobStatus.JobID
		count := func() int {
			events.mu.Lock()
			defer events.mu.Unlock()
			n := 0
			for _, e := range events.events {
				if strings.Contains(e, "Warning JobException") {
					n++
				}
			}
			return n
		}
		flink.AddException(job, "java.lang.IllegalStateException", "bad record 1", "Window(TumblingEventTimeWindows)", 1000)
		flink.AddException(job, "java.io.IOException", "sink unavailable", "Sink: Print", 2000)
		wait.For(t, 10*time.Second, "count() == 2", func() bool { return count() == 2 })
		events.seen(t, "java.io.IOException: sink unavailable (task Sink: Print)")
		wait.Never(t, 1500*time.Millisecond, "more reconciles: nothing is reported twice", func() bool { return count() != 2 })
		flink.AddException(job, "java.lang.RuntimeException", "again", "Sink: Print", 3000)
		wait.For(t, 10*time.Second, "count() == 3", func() bool { return count() == 3 })
	})

	t.Run("savepoint upgrade restores from a fresh savepoint", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "lifecycle-upgrade")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		// The write-ahead log: Flink must never see a trigger id the status does not hold yet.
		// Set before the operator starts: the fake Flink calls it from its handlers.
		var mu sync.Mutex
		var stopsBeforeRecorded []string
		flink.OnStop = func(jobID, trigger string) {
			d := &flinkv1beta1.FlinkDeployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil ||
				d.Status.JobStatus.SavepointInfo == nil || d.Status.JobStatus.SavepointInfo.TriggerID != trigger {
				mu.Lock()
				stopsBeforeRecorded = append(stopsBeforeRecorded, trigger)
				mu.Unlock()
			}
		}
		events := startOperator(t, flink, ns)
		d := stableDeployment(t, c, k, fixtures.NewDeployment(t, ns, name))
		firstJob := d.Status.JobStatus.JobID

		d.Spec.Job.Parallelism = 4
		require.NoError(t, c.Update(ctx, d))
		d = waitFor(t, c, ns, name, "savepoint taken", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.JobStatus.UpgradeSavepointPath != ""
		})
		savepoint := d.Status.JobStatus.UpgradeSavepointPath
		assert.Equal(t, "FINISHED", flink.Job(firstJob), "stopped with a savepoint")
		k.collect(ns, name)
		d = waitFor(t, c, ns, name, "redeployed", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && d.Status.JobStatus.JobID != firstJob
		})
		assert.Equal(t, savepoint, restorePath(t, c, ns, name))
		k.run(ns, name, d.Status.JobStatus.JobID)
		d = waitFor(t, c, ns, name, "STABLE again", lifecycleIs(flinkv1beta1.LifecycleStable))
		assert.Equal(t, savepoint, d.Status.JobStatus.SavepointInfo.LastSavepoint.Location)
		events.seen(t, "SpecChanged")
		want := []string{"Deploy Succeeded ", "Upgrade Succeeded " + savepoint}
		d = waitFor(t, c, ns, name, "operations recorded", func(d *flinkv1beta1.FlinkDeployment) bool { return slices.Equal(operations(d.Status.Operations), want) })
		assert.Equal(t, d.Generation, d.Status.Operations[1].Generation, "the upgrade is the current generation's")
		mu.Lock()
		defer mu.Unlock()
		assert.Empty(t, stopsBeforeRecorded, "stop-with-savepoint sent before its trigger id was in the status")
	})

	t.Run("suspend and resume", func(t *testing.T) {
		t.Parallel()
		ns, _, k, events, running := runningDeployment(t, "lifecycle-suspend")
		before := running.Status.JobStatus.UpgradeSavepointPath
		running.Spec.Job.State = flinkv1beta1.JobStateSuspended
		require.NoError(t, c.Update(ctx, running))
		waitFor(t, c, ns, name, "savepoint for suspend", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.JobStatus.UpgradeSavepointPath != "" && d.Status.JobStatus.UpgradeSavepointPath != before
		})
		k.collect(ns, name)
		d := waitFor(t, c, ns, name, "SUSPENDED", lifecycleIs(flinkv1beta1.LifecycleSuspended))
		assert.Equal(t, flinkv1beta1.JobManagerMissing, d.Status.JobManagerDeploymentStatus)
		assert.Nil(t, k.jobManager(ns, name))
		suspendSavepoint := d.Status.JobStatus.UpgradeSavepointPath
		events.seen(t, "Suspended")

		d.Spec.Job.State = flinkv1beta1.JobStateRunning
		require.NoError(t, c.Update(ctx, d))
		d = waitFor(t, c, ns, name, "resumed", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && k.jobManager(ns, name) != nil
		})
		assert.Equal(t, suspendSavepoint, restorePath(t, c, ns, name))
		k.run(ns, name, d.Status.JobStatus.JobID)
		waitFor(t, c, ns, name, "STABLE after resume", lifecycleIs(flinkv1beta1.LifecycleStable))

		// The history says what was done, with the savepoint the suspend took and the resume restored.
		want := []string{"Deploy Succeeded ", "Suspend Succeeded " + suspendSavepoint, "Resume Succeeded " + suspendSavepoint}
		d = waitFor(t, c, ns, name, "operations recorded", func(d *flinkv1beta1.FlinkDeployment) bool { return slices.Equal(operations(d.Status.Operations), want) })
		assert.Equal(t, want, operations(d.Status.Operations))
	})

	t.Run("an invalid change is reported and the running cluster kept", func(t *testing.T) {
		t.Parallel()
		ns, flink, _, events, d := runningDeployment(t, "lifecycle-invalid")
		jobID := d.Status.JobStatus.JobID
		parallelism := d.Spec.Job.Parallelism
		d.Spec.ServiceAccount = ""
		d.Spec.Job.Parallelism = 8
		require.NoError(t, c.Update(ctx, d)) // no webhook here: the reconciler's own validation
		d = waitFor(t, c, ns, name, "validation error", func(d *flinkv1beta1.FlinkDeployment) bool {
			return strings.Contains(d.Status.Error, "spec.serviceAccount: Required value")
		})
		assert.Equal(t, jobID, d.Status.JobStatus.JobID)
		assert.Equal(t, "RUNNING", flink.Job(jobID), "the job was not touched")
		events.seen(t, "ValidationError")
		d.Spec.ServiceAccount = "flink"
		d.Spec.Job.Parallelism = parallelism
		require.NoError(t, c.Update(ctx, d))
		waitFor(t, c, ns, name, "error cleared", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.Error == "" })
	})

	t.Run("deletion removes the cluster, then the finalizer", func(t *testing.T) {
		t.Parallel()
		ns, _, k, events, d := runningDeployment(t, "lifecycle-delete")
		require.NoError(t, c.Delete(ctx, d))
		wait.For(t, 30*time.Second, "the FlinkDeployment to be deleted", func() bool {
			if jm := k.jobManager(ns, name); jm != nil && !jm.DeletionTimestamp.IsZero() {
				jm.Finalizers = nil // the garbage collector's part
				_ = c.Update(ctx, jm)
			}
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &flinkv1beta1.FlinkDeployment{})
			return apierrors.IsNotFound(err)
		})
		assert.Nil(t, k.jobManager(ns, name))
		events.seen(t, "Cleanup")
	})
}

// TestCrashAfterWriteAheadResumes: the operator dies after recording a deployment and before
// applying it; the next one deploys exactly what was recorded, with the same job id.
func TestCrashAfterWriteAheadResumes(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	flink := fakeflink.New(t)
	ctx := context.Background()
	ns, name := env.NewNamespace(t, "crash"), "orders"
	require.NoError(t, env.Client.Create(ctx, fixtures.NewDeployment(t, ns, name)))

	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	crashing := interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, isDeployment := obj.(*appsv1.Deployment); isDeployment {
				return errCrash
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	newReconciler := func(c client.Client) *flinkdeployment.FlinkDeploymentReconciler {
		return &flinkdeployment.FlinkDeploymentReconciler{Client: c, Scheme: env.Scheme, Recorder: record.NewFakeRecorder(100),
			Flink: &clients.Factory{URLTemplate: flink.URL}, Validator: &validation.Validator{}, Intervals: fixtures.FastIntervals()}
	}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}

	_, err = newReconciler(crashing).Reconcile(ctx, req)
	require.ErrorIs(t, err, errCrash)
	recorded := get(t, base, ns, name)
	assert.Equal(t, flinkv1beta1.ReconciliationUpgrading, recorded.Status.ReconciliationStatus.State)
	require.NotEmpty(t, recorded.Status.JobStatus.JobID, "the job id is recorded before the cluster is created")
	assert.Equal(t, flinkv1beta1.LifecycleUpgrading, recorded.Status.LifecycleState)

	_, err = newReconciler(base).Reconcile(ctx, req)
	require.NoError(t, err)
	after := get(t, base, ns, name)
	assert.Equal(t, flinkv1beta1.ReconciliationDeployed, after.Status.ReconciliationStatus.State)
	assert.Equal(t, recorded.Status.JobStatus.JobID, after.Status.JobStatus.JobID, "the recorded job id is the one deployed")
	cm := &corev1.ConfigMap{}
	require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: "flink-config-" + name}, cm))
	assert.Contains(t, cm.Data["config.yaml"], "$internal.pipeline.job-id: "+after.Status.JobStatus.JobID)
}

var errCrash = apierrors.NewServiceUnavailable("simulated operator crash")

func flinkIDLike(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// TestUpgradeModes runs one upgrade per mode and checks what the new deployment restores from.
func TestUpgradeModes(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()

	tests := []struct {
		name, mode   string
		config       map[string]string
		wantRestore  func(oldJob string) string
		wantSameJob  bool
		wantOldState string
	}{
		{name: "stateless", mode: "stateless", wantRestore: func(string) string { return "" }, wantOldState: "RUNNING"},
		{name: "last-state-no-ha", mode: "last-state", wantRestore: fakeflink.CheckpointPath, wantOldState: "CANCELED"},
		{name: "last-state-ha", mode: "last-state", config: map[string]string{"high-availability.type": "kubernetes", "high-availability.storageDir": "file:///ha"},
			wantRestore: func(string) string { return flinkv1beta1.LastStateSentinelPath }, wantSameJob: true, wantOldState: "RUNNING"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns, flink, k, _ := newScenario(t, "mode-"+tt.name)
			dep := fixtures.NewDeployment(t, ns, "job")
			dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeMode(tt.mode)
			if tt.config != nil {
				conf, err := dep.Spec.FlinkConfiguration.Flatten()
				require.NoError(t, err)
				for k, v := range tt.config {
					conf[k] = v
				}
				dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
			}
			require.NoError(t, c.Create(ctx, dep))
			d := waitFor(t, c, ns, "job", "deployed", func(d *flinkv1beta1.FlinkDeployment) bool {
				return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
			})
			oldJob := d.Status.JobStatus.JobID
			k.run(ns, "job", oldJob)
			d = waitFor(t, c, ns, "job", "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))

			d.Spec.Image = "flink:1.20.1"
			require.NoError(t, c.Update(ctx, d))
			k.collect(ns, "job")
			d = waitFor(t, c, ns, "job", "redeployed", func(d *flinkv1beta1.FlinkDeployment) bool {
				jm := k.jobManager(ns, "job")
				return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && jm != nil &&
					jm.Spec.Template.Spec.Containers[0].Image == "flink:1.20.1"
			})
			assert.Equal(t, tt.wantRestore(oldJob), restorePath(t, c, ns, "job"))
			assert.Equal(t, tt.wantSameJob, d.Status.JobStatus.JobID == oldJob, "job id kept")
			assert.Equal(t, tt.wantOldState, flink.Job(oldJob), "how the old job was stopped")
		})
	}

	t.Run("a failed savepoint keeps the job running and says why", func(t *testing.T) {
		t.Parallel()
		ns, flink, k, events := newScenario(t, "savepoint-fails")
		require.NoError(t, c.Create(ctx, fixtures.NewDeployment(t, ns, "job")))
		d := waitFor(t, c, ns, "job", "deployed", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
		})
		job := d.Status.JobStatus.JobID
		k.run(ns, "job", job)
		d = waitFor(t, c, ns, "job", "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))

		flink.SetAutoComplete(false)
		defer flink.SetAutoComplete(true)
		d.Spec.Job.Parallelism = 3
		require.NoError(t, c.Update(ctx, d))
		d = waitFor(t, c, ns, "job", "savepoint triggered", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.JobStatus.SavepointInfo != nil && d.Status.JobStatus.SavepointInfo.TriggerID != ""
		})
		assert.Equal(t, flinkv1beta1.LifecycleUpgrading, d.Status.LifecycleState)
		flink.CompleteSavepoint(job, d.Status.JobStatus.SavepointInfo.TriggerID, "disk full")
		waitFor(t, c, ns, "job", "error recorded", func(d *flinkv1beta1.FlinkDeployment) bool {
			return strings.Contains(d.Status.Error, "Savepoint for the upgrade failed: java.lang.Exception: disk full")
		})
		assert.Equal(t, "RUNNING", flink.Job(job))
		assert.NotNil(t, k.jobManager(ns, "job"), "the running cluster is kept")
		events.seen(t, "SavepointError")
	})

	t.Run("a JobManager deleted behind the operator's back is reported", func(t *testing.T) {
		t.Parallel()
		ns, _, k, events := newScenario(t, "missing")
		require.NoError(t, c.Create(ctx, fixtures.NewDeployment(t, ns, "job")))
		d := waitFor(t, c, ns, "job", "deployed", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
		})
		k.run(ns, "job", d.Status.JobStatus.JobID)
		waitFor(t, c, ns, "job", "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
		require.NoError(t, c.Delete(ctx, k.jobManager(ns, "job")))
		d = waitFor(t, c, ns, "job", "MISSING", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.JobManagerDeploymentStatus == flinkv1beta1.JobManagerMissing
		})
		assert.Equal(t, flinkv1beta1.JobStatusReconciling, d.Status.JobStatus.State)
		assert.Contains(t, d.Status.Error, "Missing JobManager deployment")
		assert.False(t, meta.IsStatusConditionTrue(d.Status.Conditions, "Running"))
		events.seen(t, "Missing")

		// Without HA metadata nothing can be recovered safely: a human restores, and says from where.
		d = waitFor(t, c, ns, "job", "Stalled: manual restore required", func(d *flinkv1beta1.FlinkDeployment) bool {
			cond := meta.FindStatusCondition(d.Status.Conditions, "Stalled")
			return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == "ManualRestoreRequired"
		})
		assert.Nil(t, k.jobManager(ns, "job"), "nothing deployed from nothing")
		d.Spec.Job.InitialSavepointPath = "file:///sp/kept-by-hand"
		d.Spec.Job.SavepointRedeployNonce = fixtures.Ptr(int64(1))
		require.NoError(t, c.Update(ctx, d))
		waitFor(t, c, ns, "job", "redeployed from the given savepoint", func(d *flinkv1beta1.FlinkDeployment) bool {
			return k.jobManager(ns, "job") != nil && d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
		})
		assert.Equal(t, "file:///sp/kept-by-hand", restorePath(t, c, ns, "job"))
	})
}

// TestRestartFailedAndSavepointOnDeletion: with kubernetes.operator.job.restart.failed a
// FAILED job is redeployed; with kubernetes.operator.job.savepoint-on-deletion deleting the
// resource stops the job with a savepoint before the cluster goes.
func TestRestartFailedAndSavepointOnDeletion(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns, flink, k, events := newScenario(t, "restarts")
	const name = "orders"
	dep := fixtures.NewDeployment(t, ns, name)
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{
		"state.checkpoints.dir": "file:///cp", "state.savepoints.dir": "file:///sp", "taskmanager.numberOfTaskSlots": "2",
		"kubernetes.operator.job.restart.failed": "true", "kubernetes.operator.job.savepoint-on-deletion": "true"})
	require.NoError(t, c.Create(ctx, dep))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	first := d.Status.JobStatus.JobID
	k.run(ns, name, first)
	waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))

	flink.SetJob(first, "FAILED")
	waitFor(t, c, ns, name, "restarting", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationUpgrading
	})
	events.seen(t, jobs.ReasonRestartFailed)
	k.collect(ns, name)
	d = waitFor(t, c, ns, name, "redeployed", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && d.Status.JobStatus.JobID != ""
	})
	k.run(ns, name, d.Status.JobStatus.JobID)
	d = waitFor(t, c, ns, name, "running again", lifecycleIs(flinkv1beta1.LifecycleStable))

	require.NoError(t, c.Delete(ctx, d))
	waitFor(t, c, ns, name, "savepoint on deletion", func(d *flinkv1beta1.FlinkDeployment) bool {
		sp := d.Status.JobStatus.SavepointInfo
		return sp != nil && sp.LastSavepoint != nil && sp.TriggerID == "" && d.Status.JobStatus.UpgradeSavepointPath == sp.LastSavepoint.Location
	})
	assert.Equal(t, "FINISHED", flink.Job(d.Status.JobStatus.JobID), "stopped with a savepoint before the cluster went")
	k.collect(ns, name)
	wait.For(t, 20*time.Second, "apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &flinkv1beta1.FlinkDeployment{}))", func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &flinkv1beta1.FlinkDeployment{}))
	})
}

// TestRollback: with rollback enabled, a change that does not become healthy within the
// readiness timeout is rolled back to the last stable spec, keeping HA metadata; the failed
// spec is not tried again until the spec changes.
func TestRollback(t *testing.T) {
	t.Parallel()
	// Not parallel: its grace period runs on the wall clock, too short for a loaded machine.
	c := testEnv(t).Client
	ctx := context.Background()
	ns, flink, k, events := newScenario(t, "rollback")
	const name = "orders"
	require.NoError(t, c.Create(ctx, haDeployment(t, ns, name, map[string]string{
		"kubernetes.operator.deployment.rollback.enabled": "true", "kubernetes.operator.deployment.readiness.timeout": "2s"})))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	jobID := d.Status.JobStatus.JobID
	k.run(ns, name, jobID)
	waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))

	// A change whose cluster never becomes ready.
	d = get(t, c, ns, name)
	d.Spec.Job.Parallelism = 4
	require.NoError(t, c.Update(ctx, d))
	flink.SetJob(jobID, "")
	// What Flink says the job restored from its HA metadata once it runs again.
	const restored = "file:///flink/ha/orders/chk-7"
	flink.SetRestored(jobID, restored)
	k.collect(ns, name)
	waitFor(t, c, ns, name, "upgraded, not ready", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, `"parallelism":4`)
	})
	waitFor(t, c, ns, name, "ROLLING_BACK", lifecycleIs(flinkv1beta1.LifecycleRollingBack))
	wait.For(t, 5*time.Second, "events.has(\"rolling back to the last stable spec\")", func() bool { return events.has("rolling back to the last stable spec") })
	k.collect(ns, name)
	d = waitFor(t, c, ns, name, "ROLLED_BACK", lifecycleIs(flinkv1beta1.LifecycleRolledBack))
	k.run(ns, name, d.Status.JobStatus.JobID)
	assert.Equal(t, jobID, d.Status.JobStatus.JobID, "rolled back through HA: same job")
	assert.Contains(t, d.Status.ReconciliationStatus.LastReconciledSpec, `"parallelism":4`, "the failed spec stays recorded")
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "flink-config-" + name}, cm))
	assert.Contains(t, cm.Data["config.yaml"], `parallelism.default: "2"`, "the stable spec runs again")
	wait.Never(t, time.Second, "not retried until the spec changes", func() bool { return get(t, c, ns, name).Status.LifecycleState != flinkv1beta1.LifecycleRolledBack })

	// The history: the change failed (rolled back), the rollback succeeded, naming the
	// checkpoint Flink restored from the HA metadata.
	want := []string{"Deploy Succeeded ", "Upgrade Failed ", "Rollback Succeeded " + restored}
	wait.For(t, 10*time.Second, "operations "+strings.Join(want, ", "), func() bool {
		return slices.Equal(operations(get(t, c, ns, name).Status.Operations), want)
	}, func() string { return fmt.Sprint(operations(get(t, c, ns, name).Status.Operations)) })
	ops := get(t, c, ns, name).Status.Operations
	if assert.Len(t, ops, 3) {
		assert.Contains(t, ops[1].Message, "Rolling back", "the upgrade says why it failed")
	}
}

// operations are a status.operations as "Type Outcome snapshot", oldest first.
func operations(ops []flinkv1beta1.Operation) []string {
	var out []string
	for _, op := range ops {
		out = append(out, fmt.Sprintf("%s %s %s", op.Type, op.Outcome, op.Snapshot))
	}
	return out
}

// TestPartlyAppliedClusterIsAppliedAgain: an apply that fails after the
// JobManager Deployment (here every Service is refused, as by a quota) leaves the attempt
// incomplete; it is never taken for deployed, and is applied again once it can be.
func TestPartlyAppliedClusterIsAppliedAgain(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	flink := fakeflink.New(t)
	ctx := context.Background()
	ns, name := env.NewNamespace(t, "partly-applied"), "orders"
	require.NoError(t, env.Client.Create(ctx, fixtures.NewDeployment(t, ns, name)))

	base, refuseServices, r, req := quotaReconciler(t, env, flink, ns, name)
	var err error
	for i := 0; i < 3; i++ {
		_, err = r.Reconcile(ctx, req)
		require.Error(t, err, "the quota refuses the Services")
	}
	jm := &appsv1.Deployment{}
	require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, jm), "the JobManager Deployment was applied")
	assert.Equal(t, flinkv1beta1.ReconciliationUpgrading, get(t, base, ns, name).Status.ReconciliationStatus.State, "not taken for deployed")
	assert.Contains(t, get(t, base, ns, name).Status.Error, "exceeded quota", "the failed apply is recorded")
	appliedOnce := jm.ResourceVersion

	refuseServices.Store(false)
	_, err = r.Reconcile(ctx, req)
	require.NoError(t, err)
	d := get(t, base, ns, name)
	assert.Equal(t, flinkv1beta1.ReconciliationDeployed, d.Status.ReconciliationStatus.State)
	// As upstream's updateStatusForDeployedSpec: the attempt is carried out, so its failure on
	// the way is no longer the resource's error (before, it stayed until the JobManager was
	// observed ready, which it never is here).
	assert.Empty(t, d.Status.Error, "deployed: the earlier failure is cleared")
	require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: flinkconf.RESTServiceName(name)}, &corev1.Service{}), "the REST Service exists now")
	require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, jm))
	assert.Equal(t, appliedOnce, jm.ResourceVersion, "applying the JobManager again changed nothing: completion is the status's, not a second write")

	// Completion is recorded once: a later reconcile applies nothing again.
	_, err = r.Reconcile(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, flinkv1beta1.ReconciliationDeployed, get(t, base, ns, name).Status.ReconciliationStatus.State)
}

// TestSpecChangedOverAPartlyAppliedClusterIsNotRecordedAsDeployed: the operator stopped after
// it applied the JobManager of an attempt and before it recorded the attempt deployed, and the
// user changed the configuration meanwhile. The JobManager running already read the recorded
// attempt's configuration; the new one reaches Flink only through a new JobManager. Applying
// the new spec's objects over the running one (its ConfigMap changes, its pod does not) and
// recording the new spec as deployed would leave the job on the old configuration, with a
// status saying otherwise. The attempt is finished as recorded, and the new spec is an upgrade
// of it.
func TestSpecChangedOverAPartlyAppliedClusterIsNotRecordedAsDeployed(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	flink := fakeflink.New(t)
	ctx := context.Background()
	ns, name := env.NewNamespace(t, "partly-applied-changed"), "orders"
	require.NoError(t, env.Client.Create(ctx, fixtures.NewDeployment(t, ns, name)))

	base, refuseServices, r, req := quotaReconciler(t, env, flink, ns, name)
	var err error
	_, err = r.Reconcile(ctx, req)
	require.Error(t, err, "the quota refuses the Services")
	partial := &appsv1.Deployment{}
	require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, partial), "the JobManager Deployment was applied")
	require.Equal(t, flinkv1beta1.ReconciliationUpgrading, get(t, base, ns, name).Status.ReconciliationStatus.State)

	d := get(t, base, ns, name)
	conf, err := d.Spec.FlinkConfiguration.Flatten()
	require.NoError(t, err)
	conf["execution.checkpointing.interval"] = "5s"
	d.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
	require.NoError(t, base.Update(ctx, d))
	refuseServices.Store(false)

	for i := 0; i < 2; i++ {
		_, err = r.Reconcile(ctx, req)
		require.NoError(t, err)
		d = get(t, base, ns, name)
		if d.Status.ReconciliationStatus.State != flinkv1beta1.ReconciliationDeployed ||
			!strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, `"execution.checkpointing.interval":"5s"`) {
			continue
		}
		jm := &appsv1.Deployment{}
		require.NoError(t, base.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, jm))
		require.NotEqual(t, partial.UID, jm.UID,
			"reconcile %d recorded the new configuration as deployed, but the JobManager running is the one started with the old configuration", i+1)
	}
	assert.Equal(t, flinkv1beta1.ReconciliationUpgrading, d.Status.ReconciliationStatus.State, "the new configuration is an upgrade of the finished attempt")
	assert.Contains(t, d.Status.ReconciliationStatus.LastReconciledSpec, `"execution.checkpointing.interval":"5s"`)
}

// TestStableJobObserveAsksFlinkOnce: once a JobManager answered, observing its running job is
// one REST call for the job's state (with the job's exceptions, reported as events): the
// version recorded in the status stands in for GET /config, which was asked every observe.
func TestStableJobObserveAsksFlinkOnce(t *testing.T) {
	t.Parallel()
	_, flink, _, _, _ := runningDeployment(t, "observe-cost")
	since := len(flink.Requests())
	var calls []string
	wait.For(t, 20*time.Second, "three observes of the stable job", func() bool {
		calls = flink.Requests()[since:]
		n := 0
		for _, c := range calls {
			if strings.HasSuffix(c, "/status") {
				n++
			}
		}
		return n >= 3
	})
	for _, c := range calls {
		ok := strings.HasPrefix(c, "GET /jobs/") && (strings.HasSuffix(c, "/status") || strings.HasSuffix(c, "/exceptions"))
		assert.True(t, ok, "observe of a stable job asked %q; all calls: %v", c, calls)
	}
}

// quotaReconciler is a FlinkDeployment reconciler, driven directly, whose Service applies are
// refused (as by a quota) while refuseServices is set, which it is at first: an apply fails
// after the JobManager Deployment. base reads and writes past the refusal.
func quotaReconciler(t *testing.T, env *kubeenv.Env, flink *fakeflink.Server, ns, name string) (base client.WithWatch, refuseServices *atomic.Bool, r *flinkdeployment.FlinkDeploymentReconciler, req ctrl.Request) {
	t.Helper()
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	refuseServices = &atomic.Bool{}
	refuseServices.Store(true)
	quota := interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, isService := obj.(*corev1.Service); isService && refuseServices.Load() {
				return apierrors.NewForbidden(corev1.Resource("services"), obj.GetName(), errors.New("exceeded quota: services=0"))
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	r = &flinkdeployment.FlinkDeploymentReconciler{Client: quota, Scheme: env.Scheme, Recorder: record.NewFakeRecorder(100),
		Flink: &clients.Factory{URLTemplate: flink.URL}, Validator: &validation.Validator{}, Intervals: fixtures.FastIntervals()}
	return base, refuseServices, r, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}
}
