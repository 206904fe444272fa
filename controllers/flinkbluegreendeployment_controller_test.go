package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkbluegreendeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// blueGreenOperator runs the three controllers a blue/green switch needs: FlinkDeployment
// (the children), FlinkStateSnapshot (the savepoint) and FlinkBlueGreenDeployment.
// failingCreate is a client whose creates go through create first.
type failingCreate struct {
	client.Client
	create func(obj client.Object) error
}

func (f failingCreate) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := f.create(obj); err != nil {
		return err
	}
	return f.Client.Create(ctx, obj, opts...)
}

// The blue/green reconciler's creates go through create first (when set).
func blueGreenOperator(flink *fakeflink.Server, create func(client.Object) error) func(ctrl.Manager, record.EventRecorder) error {
	return func(mgr ctrl.Manager, rec record.EventRecorder) error {
		if err := deploymentController(flink)(mgr, rec); err != nil {
			return err
		}
		if err := snapshotController(flink)(mgr, rec); err != nil {
			return err
		}
		c := mgr.GetClient()
		if create != nil {
			c = failingCreate{Client: c, create: create}
		}
		return (&flinkbluegreendeployment.FlinkBlueGreenDeploymentReconciler{Client: c, Scheme: mgr.GetScheme(), Recorder: rec}).SetupWithManager(mgr)
	}
}

func inState(s flinkv1beta1.FlinkBlueGreenDeploymentState) func(*flinkv1beta1.FlinkBlueGreenDeployment) bool {
	return func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool { return bg.Status.BlueGreenState == s }
}

// runChild waits for the child's job to be submitted and runs it in the fake Flink; it returns
// the job id.
func runChild(t *testing.T, c client.Client, k *cluster, ns, name string) string {
	t.Helper()
	d := waitFor(t, c, ns, name, name+" deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	k.run(ns, name, d.Status.JobStatus.JobID)
	return d.Status.JobStatus.JobID
}

func changeImage(t *testing.T, c client.Client, ns, name, image string) {
	t.Helper()
	updateBlueGreenSpec(t, c, ns, name, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) { bg.Spec.Template.Spec.Image = image })
}

// changeImageWithAbortGrace changes the image and, in the same update, the abort grace period
// the switch it starts runs under. A blue/green deployment created with a short grace period
// aborts its first child too when that child is slower to become ready, as it can be on a
// loaded machine; the short period is for the switch under test only.
func changeImageWithAbortGrace(t *testing.T, c client.Client, ns, name, image, abortGrace string) {
	t.Helper()
	updateBlueGreenSpec(t, c, ns, name, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) {
		bg.Spec.Template.Spec.Image = image
		bg.Spec.Configuration[options.BlueGreenAbortGracePeriod.Key] = abortGrace
	})
}

func updateBlueGreenSpec(t *testing.T, c client.Client, ns, name string, change func(*flinkv1beta1.FlinkBlueGreenDeployment)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		bg := fixtures.GetBlueGreen(t, c, ns, name)
		change(bg)
		return c.Update(context.Background(), bg)
	}))
}

func setBlueGreenJobState(t *testing.T, c client.Client, ns, name string, state flinkv1beta1.JobState) {
	t.Helper()
	updateBlueGreenSpec(t, c, ns, name, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) { bg.Spec.Template.Spec.Job.State = state })
}

// configWith is conf with key set.
func configWith(t *testing.T, conf flinkv1beta1.FlinkConfiguration, key, value string) flinkv1beta1.FlinkConfiguration {
	t.Helper()
	flat, err := conf.Flatten()
	require.NoError(t, err)
	flat[key] = value
	return flinkv1beta1.NewFlinkConfiguration(flat)
}

// activeBlue creates a blue/green deployment and runs its blue child until ACTIVE_BLUE.
func activeBlue(t *testing.T, c client.Client, k *cluster, ns, name, abortGrace string) (blueJob string) {
	t.Helper()
	require.NoError(t, c.Create(context.Background(), fixtures.NewBlueGreen(t, ns, name, abortGrace)))
	blue := waitFor(t, c, ns, name+"-blue", "blue child", func(*flinkv1beta1.FlinkDeployment) bool { return true })
	assert.Equal(t, "BLUE", blue.Labels[flinkv1beta1.BlueGreenDeploymentTypeLabel], "upstream's label")
	assert.Equal(t, "orders", blue.Labels["team"], "the template's labels")
	owner := metav1.GetControllerOf(blue)
	require.NotNil(t, owner, "deleting the FlinkBlueGreenDeployment deletes its children (garbage collector)")
	assert.Equal(t, name, owner.Name)
	assert.True(t, *owner.BlockOwnerDeletion)
	blueJob = runChild(t, c, k, ns, name+"-blue")
	bg := waitFor(t, c, ns, name, "ACTIVE_BLUE", inState(flinkv1beta1.BlueGreenActiveBlue))
	assert.True(t, meta.IsStatusConditionTrue(bg.Status.Conditions, flinkbluegreendeployment.ConditionBlueGreenReady))
	assert.Equal(t, bg.Generation, meta.FindStatusCondition(bg.Status.Conditions, flinkbluegreendeployment.ConditionBlueGreenReady).ObservedGeneration)
	if degraded := meta.FindStatusCondition(bg.Status.Conditions, lifecycle.ConditionDegraded); assert.NotNil(t, degraded) {
		assert.Equal(t, metav1.ConditionFalse, degraded.Status, degraded.Message)
		assert.Equal(t, bg.Generation, degraded.ObservedGeneration)
	}
	if progressing := meta.FindStatusCondition(bg.Status.Conditions, lifecycle.ConditionProgressing); assert.NotNil(t, progressing) {
		assert.Equal(t, string(lifecycle.ReasonSettled), progressing.Reason, progressing.Message)
		assert.Equal(t, bg.Generation, progressing.ObservedGeneration)
	}
	assert.Equal(t, []string{"Deploy Succeeded "}, operations(bg.Status.Operations), "the first child's deployment is recorded")
	wait.For(t, 10*time.Second, "ingress to blue", func() bool { return fixtures.IngressBackend(t, c, ns, name) == name+"-blue-rest" }, func() string { return "" })
	return blueJob
}

// TestBlueGreenDeployment walks the switches of a FlinkBlueGreenDeployment against the
// FlinkDeployment and FlinkStateSnapshot controllers and a fake JobManager.
func TestBlueGreenDeployment(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	const name = "orders"

	t.Run("a template change switches blue to green from a savepoint of blue", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-switch")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, nil)})
		blueJob := activeBlue(t, c, k, ns, name, "10 min")

		changeImage(t, c, ns, name, "flink:1.20.3")
		bg := waitFor(t, c, ns, name, "TRANSITIONING_TO_GREEN", inState(flinkv1beta1.BlueGreenTransitioningToGreen))
		require.NotEmpty(t, bg.Status.SavepointTriggerID, "the switch records its savepoint")
		progressing := meta.FindStatusCondition(bg.Status.Conditions, lifecycle.ConditionProgressing)
		require.NotNil(t, progressing)
		assert.Equal(t, metav1.ConditionTrue, progressing.Status)
		assert.Equal(t, string(lifecycle.ReasonSwitching), progressing.Reason)
		assert.Contains(t, progressing.Message, "to replace orders-blue")
		assert.Equal(t, bg.Generation, progressing.ObservedGeneration)
		// Its snapshot is set once green exists, which may already be the case here.
		assert.True(t, strings.HasPrefix(operations(bg.Status.Operations)[len(bg.Status.Operations)-1], "Upgrade InProgress"), operations(bg.Status.Operations))
		snap := &flinkv1beta1.FlinkStateSnapshot{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: bg.Status.SavepointTriggerID}, snap))
		assert.Equal(t, name+"-blue", snap.Spec.JobReference.Name)
		require.NotEmpty(t, snap.Status.Path)

		green := waitFor(t, c, ns, name+"-green", "green child", func(*flinkv1beta1.FlinkDeployment) bool { return true })
		assert.Equal(t, strings.TrimPrefix(snap.Status.Path, "file:"), green.Spec.Job.InitialSavepointPath, "green starts from blue's savepoint")
		assert.Equal(t, "flink:1.20.3", green.Spec.Image)
		runChild(t, c, k, ns, name+"-green")
		assert.Equal(t, strings.TrimPrefix(snap.Status.Path, "file:"), restorePath(t, c, ns, name+"-green"), "green's JobManager restores the savepoint (a local path without its scheme, as upstream)")
		assert.Equal(t, "RUNNING", flink.Job(blueJob), "blue runs until green is ready")

		bg = waitFor(t, c, ns, name, "ACTIVE_GREEN", inState(flinkv1beta1.BlueGreenActiveGreen))
		assert.Empty(t, bg.Status.SavepointTriggerID)
		assert.Empty(t, bg.Status.Error)
		assert.Equal(t, []string{"Deploy Succeeded ", "Upgrade Succeeded " + strings.TrimPrefix(snap.Status.Path, "file:")}, operations(bg.Status.Operations),
			"the switch is recorded with the savepoint green started from")
		wait.For(t, 10*time.Second, "ingress to green", func() bool { return fixtures.IngressBackend(t, c, ns, name) == name+"-green-rest" }, func() string { return "" })
		wait.For(t, 10*time.Second, "blue deleted", func() bool {
			blue := &flinkv1beta1.FlinkDeployment{}
			err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-blue"}, blue)
			return apierrors.IsNotFound(err) || !blue.DeletionTimestamp.IsZero()
		}, func() string { return "" })
		events.seen(t, flinkbluegreendeployment.ReasonBlueGreenSavepoint)
		events.seen(t, flinkbluegreendeployment.ReasonBlueGreenSwitched)
	})

	t.Run("a green that never becomes ready is aborted, blue keeps running", func(t *testing.T) {
		// Not parallel: its grace period runs on the wall clock, too short for a loaded machine.
		ns := testEnv(t).NewNamespace(t, "bg-abort")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, nil)})
		blueJob := activeBlue(t, c, k, ns, name, "10 min")

		// The grace period covers blue's savepoint and green's start: 10 s, for a loaded machine.
		changeImageWithAbortGrace(t, c, ns, name, "flink:does-not-exist", "10s")
		waitFor(t, c, ns, name+"-green", "green child", func(*flinkv1beta1.FlinkDeployment) bool { return true })
		// Green's JobManager never becomes available.
		bg := waitFor(t, c, ns, name, "aborted back to ACTIVE_BLUE", func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
			return bg.Status.BlueGreenState == flinkv1beta1.BlueGreenActiveBlue && bg.Status.Error != ""
		})
		assert.Contains(t, bg.Status.Error, "Aborting deployment 'orders-green', rolling B/G deployment back to ACTIVE_BLUE")
		assert.Equal(t, flinkv1beta1.JobStatusFailing, bg.Status.JobStatus.State)
		assert.True(t, meta.IsStatusConditionFalse(bg.Status.Conditions, flinkbluegreendeployment.ConditionBlueGreenReady))
		if degraded := meta.FindStatusCondition(bg.Status.Conditions, lifecycle.ConditionDegraded); assert.NotNil(t, degraded) {
			assert.Equal(t, metav1.ConditionTrue, degraded.Status)
			assert.Equal(t, string(lifecycle.ReasonSwitchFailed), degraded.Reason)
			assert.Contains(t, degraded.Message, "Aborting deployment 'orders-green'")
		}
		// The abort is recorded as a rollback is for a FlinkDeployment: the switch Failed, saying why.
		if assert.Len(t, bg.Status.Operations, 2) {
			last := bg.Status.Operations[1]
			assert.Equal(t, flinkv1beta1.OperationUpgrade, last.Type)
			assert.Equal(t, flinkv1beta1.OperationFailed, last.Outcome)
			assert.Equal(t, bg.Generation, last.Generation)
			assert.NotNil(t, last.EndedAt)
			assert.Contains(t, last.Message, "Aborting deployment 'orders-green'")
		}
		assert.Equal(t, string(lifecycle.ReasonWaitingForUser), meta.FindStatusCondition(bg.Status.Conditions, lifecycle.ConditionProgressing).Reason)
		green := waitFor(t, c, ns, name+"-green", "green suspended", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Spec.Job.State == flinkv1beta1.JobStateSuspended
		})
		// The aborted switch names the snapshot it used: the savepoint of blue green started from.
		if assert.Len(t, bg.Status.Operations, 2) {
			assert.NotEmpty(t, green.Spec.Job.InitialSavepointPath)
			assert.Equal(t, green.Spec.Job.InitialSavepointPath, bg.Status.Operations[1].Snapshot)
		}
		blue := get(t, c, ns, name+"-blue")
		assert.True(t, blue.DeletionTimestamp.IsZero())
		assert.Equal(t, "flink:1.20", blue.Spec.Image, "blue is untouched")
		assert.Equal(t, blueJob, blue.Status.JobStatus.JobID, "blue's job was never restarted")
		assert.Equal(t, "RUNNING", flink.Job(blueJob))
		assert.NotContains(t, flink.Stops(), blueJob)
		assert.Equal(t, name+"-blue-rest", fixtures.IngressBackend(t, c, ns, name))
		events.seen(t, flinkbluegreendeployment.ReasonBlueGreenAborted)
		wait.Never(t, time.Second, "the same spec is not retried", func() bool {
			return fixtures.GetBlueGreen(t, c, ns, name).Status.BlueGreenState != flinkv1beta1.BlueGreenActiveBlue
		})
	})

	t.Run("a savepoint that never completes keeps blue, and its snapshot stops", func(t *testing.T) {
		// Not parallel: its grace period runs on the wall clock, too short for a loaded machine.
		ns := testEnv(t).NewNamespace(t, "bg-savepoint-fails")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, nil)})
		blueJob := activeBlue(t, c, k, ns, name, "10 min")

		flink.SetAutoComplete(false)
		changeImageWithAbortGrace(t, c, ns, name, "flink:1.20.3", "3s")
		bg := waitFor(t, c, ns, name, "SAVEPOINTING_BLUE", inState(flinkv1beta1.BlueGreenSavepointingBlue))
		snapName := bg.Status.SavepointTriggerID
		wait.For(t, 10*time.Second, "the savepoint triggered", func() bool { return len(flink.Triggered()) > 0 }, func() string { return "" })
		flink.CompleteSavepoint(blueJob, flink.Triggered()[0], "disk full")

		bg = waitFor(t, c, ns, name, "back to ACTIVE_BLUE with the error", func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
			return bg.Status.BlueGreenState == flinkv1beta1.BlueGreenActiveBlue && bg.Status.Error != ""
		})
		assert.Contains(t, bg.Status.Error, "Savepoint of 'orders-blue' failed")
		assert.Empty(t, bg.Status.SavepointTriggerID)
		wait.For(t, 10*time.Second, "the snapshot deleted", func() bool {
			return apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: snapName}, &flinkv1beta1.FlinkStateSnapshot{}))
		}, func() string { return "" })
		assert.True(t, apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-green"}, &flinkv1beta1.FlinkDeployment{})))
		assert.Equal(t, "RUNNING", flink.Job(blueJob))
		events.seen(t, flinkbluegreendeployment.ReasonBlueGreenFailed)
	})

	t.Run("suspend and resume act on the active child in place", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-suspend")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, nil)})
		activeBlue(t, c, k, ns, name, "10 min")

		setJobState := func(state flinkv1beta1.JobState) {
			require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
				bg := fixtures.GetBlueGreen(t, c, ns, name)
				bg.Spec.Template.Spec.Job.State = state
				return c.Update(context.Background(), bg)
			}))
		}
		setJobState(flinkv1beta1.JobStateSuspended)
		waitFor(t, c, ns, name+"-blue", "blue suspended", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Spec.Job.State == flinkv1beta1.JobStateSuspended
		})
		k.collect(ns, name+"-blue") // the garbage collector's part in removing the JobManager
		waitFor(t, c, ns, name+"-blue", "blue SUSPENDED", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.LifecycleState == flinkv1beta1.LifecycleSuspended
		})
		// The child's suspend is the resource's: Progressing and the history follow it.
		progressingIs := func(reason lifecycle.Reason) func(*flinkv1beta1.FlinkBlueGreenDeployment) bool {
			return func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
				p := meta.FindStatusCondition(bg.Status.Conditions, lifecycle.ConditionProgressing)
				return p != nil && p.Reason == string(reason)
			}
		}
		bg := waitFor(t, c, ns, name, "Progressing Suspended", progressingIs(lifecycle.ReasonSuspended))
		assert.Equal(t, flinkv1beta1.BlueGreenActiveBlue, bg.Status.BlueGreenState, "no switch")
		assert.Equal(t, flinkv1beta1.JobStatusSuspended, bg.Status.JobStatus.State)
		assert.Equal(t, []string{"Deploy Succeeded ", "Suspend Succeeded "}, operations(bg.Status.Operations))

		setJobState(flinkv1beta1.JobStateRunning)
		waitFor(t, c, ns, name+"-blue", "blue resumed", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Spec.Job.State == flinkv1beta1.JobStateRunning
		})
		bg = waitFor(t, c, ns, name, "the resume recorded", func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
			return len(bg.Status.Operations) == 3
		})
		assert.Equal(t, "Resume InProgress ", operations(bg.Status.Operations)[2], "blue's JobManager is not ready yet")
		assert.Contains(t, meta.FindStatusCondition(bg.Status.Conditions, lifecycle.ConditionProgressing).Message, "The active FlinkDeployment orders-blue is")
		assert.True(t, apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-green"}, &flinkv1beta1.FlinkDeployment{})),
			"suspend and resume never start green")
		assert.Equal(t, flinkv1beta1.BlueGreenActiveBlue, fixtures.GetBlueGreen(t, c, ns, name).Status.BlueGreenState)
	})

	t.Run("a trigger nonce or an operator option patches the active child, no switch", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-patch")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, nil)})
		blueJob := activeBlue(t, c, k, ns, name, "10 min")

		updateBlueGreenSpec(t, c, ns, name, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) {
			nonce := int64(7)
			bg.Spec.Template.Spec.Job.SavepointTriggerNonce = &nonce
			bg.Spec.Template.Spec.FlinkConfiguration = configWith(t, bg.Spec.Template.Spec.FlinkConfiguration, "kubernetes.operator.savepoint.history.max.count", "3")
		})
		blue := waitFor(t, c, ns, name+"-blue", "blue patched", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Spec.Job.SavepointTriggerNonce != nil && *d.Spec.Job.SavepointTriggerNonce == 7
		})
		flat, err := blue.Spec.FlinkConfiguration.Flatten()
		require.NoError(t, err)
		assert.Equal(t, "3", flat["kubernetes.operator.savepoint.history.max.count"], "the option reaches blue")
		// Blue's own controller takes the manual savepoint the nonce asks for, on blue's job.
		wait.For(t, 10*time.Second, "blue's manual savepoint", func() bool {
			for _, r := range flink.Requests() {
				if r == "POST /jobs/"+blueJob+"/savepoints" {
					return true
				}
			}
			return false
		}, func() string { return fmt.Sprintf("requests %v", flink.Requests()) })
		wait.Never(t, 2*time.Second, "no green child", func() bool {
			return c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-green"}, &flinkv1beta1.FlinkDeployment{}) == nil
		})
		bg := fixtures.GetBlueGreen(t, c, ns, name)
		assert.Equal(t, flinkv1beta1.BlueGreenActiveBlue, bg.Status.BlueGreenState)
		assert.Empty(t, bg.Status.SavepointTriggerID, "no savepoint for a switch")
		var snaps flinkv1beta1.FlinkStateSnapshotList
		require.NoError(t, c.List(context.Background(), &snaps, client.InNamespace(ns)))
		for _, snap := range snaps.Items {
			if owner := metav1.GetControllerOf(&snap); owner != nil {
				assert.NotEqual(t, "FlinkBlueGreenDeployment", owner.Kind, "no savepoint for a switch: %s", snap.Name)
			}
		}
		assert.Equal(t, blueJob, get(t, c, ns, name+"-blue").Status.JobStatus.JobID, "blue's job runs on")
		assert.NotContains(t, flink.Stops(), blueJob)
		events.seen(t, flinkbluegreendeployment.ReasonBlueGreenPatched)
	})

	t.Run("a savepoint redeploy starts green from the user's savepoint, without a savepoint of blue", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-redeploy")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, nil)})
		blueJob := activeBlue(t, c, k, ns, name, "10 min")
		triggered := len(flink.Triggered())

		const chosen = "file:///sp/chosen-by-user"
		updateBlueGreenSpec(t, c, ns, name, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) {
			nonce := int64(1)
			bg.Spec.Template.Spec.Job.SavepointRedeployNonce = &nonce
			bg.Spec.Template.Spec.Job.InitialSavepointPath = chosen
		})
		green := waitFor(t, c, ns, name+"-green", "green child", func(*flinkv1beta1.FlinkDeployment) bool { return true })
		assert.Equal(t, chosen, green.Spec.Job.InitialSavepointPath, "green starts from the user's savepoint")
		bg := fixtures.GetBlueGreen(t, c, ns, name)
		assert.Equal(t, flinkv1beta1.BlueGreenTransitioningToGreen, bg.Status.BlueGreenState)
		assert.Empty(t, bg.Status.SavepointTriggerID, "no savepoint of blue")
		runChild(t, c, k, ns, name+"-green")
		assert.Equal(t, chosen, restorePath(t, c, ns, name+"-green"), "green's JobManager restores the user's savepoint")
		waitFor(t, c, ns, name, "ACTIVE_GREEN", inState(flinkv1beta1.BlueGreenActiveGreen))
		assert.Len(t, flink.Triggered(), triggered, "no savepoint was taken")
		for _, r := range flink.Requests() {
			assert.NotEqual(t, "POST /jobs/"+blueJob+"/savepoints", r, "no savepoint of blue")
		}
	})

	t.Run("a suspend during the switch waits for it, then suspends the new active child", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-suspend-switch")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, nil)})
		activeBlue(t, c, k, ns, name, "10 min")

		changeImage(t, c, ns, name, "flink:1.20.3")
		waitFor(t, c, ns, name, "TRANSITIONING_TO_GREEN", inState(flinkv1beta1.BlueGreenTransitioningToGreen))
		green := waitFor(t, c, ns, name+"-green", "green child", func(*flinkv1beta1.FlinkDeployment) bool { return true })
		setBlueGreenJobState(t, c, ns, name, flinkv1beta1.JobStateSuspended)
		wait.Never(t, 2*time.Second, "the new child never gets the suspend", func() bool {
			return get(t, c, ns, name+"-green").Spec.Job.State == flinkv1beta1.JobStateSuspended
		})
		assert.Equal(t, flinkv1beta1.BlueGreenTransitioningToGreen, fixtures.GetBlueGreen(t, c, ns, name).Status.BlueGreenState, "the switch goes on")
		assert.Equal(t, "flink:1.20.3", green.Spec.Image)

		runChild(t, c, k, ns, name+"-green")
		waitFor(t, c, ns, name+"-green", "green suspended after the switch", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Spec.Job.State == flinkv1beta1.JobStateSuspended
		})
		k.collect(ns, name+"-green")
		waitFor(t, c, ns, name+"-green", "green SUSPENDED", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.LifecycleState == flinkv1beta1.LifecycleSuspended
		})
		bg := waitFor(t, c, ns, name, "ACTIVE_GREEN, suspended", func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
			return bg.Status.BlueGreenState == flinkv1beta1.BlueGreenActiveGreen && bg.Status.JobStatus.State == flinkv1beta1.JobStatusSuspended
		})
		assert.Empty(t, bg.Status.Error)
		wait.For(t, 10*time.Second, "blue deleted", func() bool {
			blue := &flinkv1beta1.FlinkDeployment{}
			err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-blue"}, blue)
			return apierrors.IsNotFound(err) || !blue.DeletionTimestamp.IsZero()
		}, func() string { return "" })
	})

	t.Run("a suspend during the savepoint waits for it, then suspends blue in place", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-suspend-savepoint")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, nil)})
		blueJob := activeBlue(t, c, k, ns, name, "10 min")

		flink.SetAutoComplete(false)
		changeImage(t, c, ns, name, "flink:1.20.3")
		waitFor(t, c, ns, name, "SAVEPOINTING_BLUE", inState(flinkv1beta1.BlueGreenSavepointingBlue))
		wait.For(t, 10*time.Second, "the savepoint triggered", func() bool { return len(flink.Triggered()) > 0 }, func() string { return "" })
		setBlueGreenJobState(t, c, ns, name, flinkv1beta1.JobStateSuspended)
		wait.Never(t, time.Second, "waits for the savepoint", func() bool {
			return fixtures.GetBlueGreen(t, c, ns, name).Status.BlueGreenState != flinkv1beta1.BlueGreenSavepointingBlue
		})
		flink.SetAutoComplete(true)
		flink.CompleteSavepoint(blueJob, flink.Triggered()[0], "")

		waitFor(t, c, ns, name+"-blue", "blue suspended", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Spec.Job.State == flinkv1beta1.JobStateSuspended
		})
		k.collect(ns, name+"-blue")
		waitFor(t, c, ns, name+"-blue", "blue SUSPENDED", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.LifecycleState == flinkv1beta1.LifecycleSuspended
		})
		bg := waitFor(t, c, ns, name, "ACTIVE_BLUE, suspended", func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
			return bg.Status.BlueGreenState == flinkv1beta1.BlueGreenActiveBlue && bg.Status.JobStatus.State == flinkv1beta1.JobStatusSuspended
		})
		assert.Empty(t, bg.Status.SavepointTriggerID)
		assert.True(t, apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-green"}, &flinkv1beta1.FlinkDeployment{})),
			"no switch")
	})

	t.Run("a change while blue is not ready fails and touches nothing", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-not-ready")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, nil)})
		blueJob := activeBlue(t, c, k, ns, name, "10 min")

		flink.SetJob(blueJob, "RESTARTING")
		waitFor(t, c, ns, name+"-blue", "blue RESTARTING", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.JobStatus.State == flinkv1beta1.JobStatusRestarting
		})
		changeImage(t, c, ns, name, "flink:1.20.3")
		bg := waitFor(t, c, ns, name, "FAILING", func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool { return bg.Status.Error != "" })
		assert.Equal(t, "Transition to GREEN not possible, current Flink Deployment 'orders-blue' is not READY. FAILING 'orders'", bg.Status.Error)
		assert.Equal(t, flinkv1beta1.JobStatusFailing, bg.Status.JobStatus.State)
		assert.Equal(t, flinkv1beta1.BlueGreenActiveBlue, bg.Status.BlueGreenState)
		wait.Never(t, 2*time.Second, "blue untouched, no green", func() bool {
			return get(t, c, ns, name+"-blue").Spec.Image != "flink:1.20" ||
				c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-green"}, &flinkv1beta1.FlinkDeployment{}) == nil
		})
		assert.Empty(t, flink.Stops())
	})

	t.Run("an operator restarted mid-switch resumes it", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-restart")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		// The first operator "crashes" between recording TRANSITIONING_TO_GREEN and creating
		// green: its creates of the green child fail, and it is stopped there.
		var greenCreates atomic.Int32
		crash := func(obj client.Object) error {
			if obj.GetName() == name+"-green" {
				greenCreates.Add(1)
				return errors.New("operator stopped")
			}
			return nil
		}
		_, stop := startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, crash)})
		activeBlue(t, c, k, ns, name, "10 min")

		changeImage(t, c, ns, name, "flink:1.20.3")
		bg := waitFor(t, c, ns, name, "TRANSITIONING_TO_GREEN", inState(flinkv1beta1.BlueGreenTransitioningToGreen))
		wait.For(t, 10*time.Second, "a create of green", func() bool { return greenCreates.Load() > 0 }, func() string { return "" })
		stop()
		abortAt := fixtures.GetBlueGreen(t, c, ns, name).Status.AbortTimestamp
		assert.True(t, apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-green"}, &flinkv1beta1.FlinkDeployment{})))
		triggered := len(flink.Triggered())

		startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenOperator(flink, nil)})
		green := waitFor(t, c, ns, name+"-green", "green recreated", func(*flinkv1beta1.FlinkDeployment) bool { return true })
		snap := &flinkv1beta1.FlinkStateSnapshot{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: bg.Status.SavepointTriggerID}, snap))
		assert.Equal(t, strings.TrimPrefix(snap.Status.Path, "file:"), green.Spec.Job.InitialSavepointPath, "from the recorded savepoint, not a new one")
		assert.Equal(t, abortAt, fixtures.GetBlueGreen(t, c, ns, name).Status.AbortTimestamp, "the switch keeps its grace period")
		assert.Len(t, flink.Triggered(), triggered, "no second savepoint")
		runChild(t, c, k, ns, name+"-green")
		waitFor(t, c, ns, name, "ACTIVE_GREEN", inState(flinkv1beta1.BlueGreenActiveGreen))
	})
}
