package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

var withConfig = fixtures.WithConfig

// TestInPlaceScaling: a per-vertex parallelism change on the adaptive scheduler rescales the
// running job without a restart; removing an override falls back to an upgrade.
func TestInPlaceScaling(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns, flink, k, events := newScenario(t, "scaling")
	const name = "job"
	dep := fixtures.NewDeployment(t, ns, name)
	dep.Spec = *withConfig(t, &dep.Spec, map[string]string{"jobmanager.scheduler": "adaptive", jobs.KeyParallelismOverrides: "source:2,sink:2"})
	require.NoError(t, c.Create(ctx, dep))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	jobID := d.Status.JobStatus.JobID
	k.run(ns, name, jobID)
	flink.SetVertices(jobID, map[string]int{"source": 2, "sink": 2})
	waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
	jm := k.jobManager(ns, name)

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := get(t, c, ns, name)
		d.Spec = *withConfig(t, &d.Spec, map[string]string{jobs.KeyParallelismOverrides: "source:4,sink:1"})
		return c.Update(ctx, d)
	}))
	waitFor(t, c, ns, name, "scaled in place", func(d *flinkv1beta1.FlinkDeployment) bool {
		return flink.Vertices(jobID)["source"] == 4
	})
	assert.Equal(t, map[string]int{"source": 4, "sink": 1}, flink.Vertices(jobID))
	// The event follows Flink's answer: it is waited for, not raced.
	wait.For(t, 10*time.Second, "events.has(\"Scaled the running job in place: source:4,sink:1\")", func() bool { return events.has("Scaled the running job in place: source:4,sink:1") })
	d = waitFor(t, c, ns, name, "recorded as deployed", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && d.Status.ObservedGeneration == d.Generation
	})
	assert.Contains(t, d.Status.ReconciliationStatus.LastReconciledSpec, "source:4,sink:1")
	assert.Equal(t, jobID, d.Status.JobStatus.JobID, "same job")
	assert.Equal(t, jm.UID, k.jobManager(ns, name).UID, "same JobManager: no restart")
	assert.Nil(t, k.jobManager(ns, name).DeletionTimestamp)
	assert.Empty(t, flink.Stops(), "no savepoint")

	// Removing an override needs the job's own parallelism back: a full (savepoint) upgrade.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := get(t, c, ns, name)
		d.Spec = *withConfig(t, &d.Spec, map[string]string{jobs.KeyParallelismOverrides: "source:4"})
		return c.Update(ctx, d)
	}))
	waitFor(t, c, ns, name, "upgrading", func(d *flinkv1beta1.FlinkDeployment) bool {
		jm := k.jobManager(ns, name)
		return jm != nil && !jm.DeletionTimestamp.IsZero()
	})
	assert.NotEmpty(t, flink.Stops(), "stopped with a savepoint")
}

// TestReactiveScaling: a standalone reactive-mode cluster scales its TaskManager Deployment
// for a parallelism change, without touching the job.
func TestReactiveScaling(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns, flink, k, events := newScenario(t, "reactive")
	const name = "job"
	dep := fixtures.NewDeployment(t, ns, name)
	dep.Spec.Mode = flinkv1beta1.DeploymentModeStandalone
	dep.Spec = *withConfig(t, &dep.Spec, map[string]string{"scheduler-mode": "reactive"})
	require.NoError(t, c.Create(ctx, dep))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	jobID := d.Status.JobStatus.JobID
	k.run(ns, name, jobID)
	waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
	jm := k.jobManager(ns, name)

	setParallelism(t, c, ns, name, 6)
	wait.For(t, 20*time.Second, "TaskManagers scaled to ceil(6/2)", func() bool {
		tm := &appsv1.Deployment{}
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: native.TaskManagerDeploymentName(name)}, tm) == nil &&
			tm.Spec.Replicas != nil && *tm.Spec.Replicas == 3
	})
	d = waitFor(t, c, ns, name, "recorded", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ObservedGeneration == d.Generation && strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, `"parallelism":6`)
	})
	assert.Equal(t, jobID, d.Status.JobStatus.JobID)
	assert.Equal(t, jm.UID, k.jobManager(ns, name).UID, "no restart")
	assert.Nil(t, k.jobManager(ns, name).DeletionTimestamp)
	assert.Empty(t, flink.Stops())
	events.seen(t, "Scaled the TaskManagers to 3 (reactive mode); the job adapts without a restart")
}

// TestInPlaceScalingIsProgressingUntilFlinkReportsIt: from the moment Flink is asked to rescale
// the running job until its REST reports the new parallelism, Progressing is True with reason
// Scaling and says from which to which parallelism, status.rescale records it (an operator
// restarted meanwhile goes on following it) and status.operations has a Scale in progress; then
// the Scale succeeds. A rescale Flink does not carry out within the readiness timeout makes the
// resource Degraded (ScaleTimedOut) and the Scale Failed, until Flink reports it.
func TestInPlaceScalingIsProgressingUntilFlinkReportsIt(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, flink, k, events := newScenario(t, "scaling-progress")
	scaling := func(name string, timeout string) string { return startRescale(t, c, ns, flink, k, name, timeout) }

	t.Run("reached", func(t *testing.T) {
		const name = "reached"
		jobID := scaling(name, "")
		d := waitFor(t, c, ns, name, "Progressing Scaling", func(d *flinkv1beta1.FlinkDeployment) bool {
			return progressing(d).Reason == "Scaling" && d.Status.Rescale != nil && d.Status.Rescale.Reported != ""
		})
		p := progressing(d)
		assert.Equal(t, metav1.ConditionTrue, p.Status)
		assert.Equal(t, d.Generation, p.ObservedGeneration)
		assert.Contains(t, p.Message, "from sink:2,source:2 to sink:1,source:4 (vertex:parallelism); Flink reports sink:2,source:2 so far")
		assert.Equal(t, d.Generation, d.Status.Rescale.Generation)
		assert.Equal(t, "Scale InProgress ", operations(d.Status.Operations)[len(d.Status.Operations)-1])
		assert.Equal(t, metav1.ConditionTrue, meta.FindStatusCondition(d.Status.Conditions, "Ready").Status, "the job runs meanwhile")

		flink.ReleaseRescale(jobID)
		d = waitFor(t, c, ns, name, "rescale over", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.Rescale == nil && progressing(d).Status == metav1.ConditionFalse
		})
		assert.Equal(t, "Settled", progressing(d).Reason)
		assert.Equal(t, "Scale Succeeded ", operations(d.Status.Operations)[len(d.Status.Operations)-1])
		assert.Equal(t, "Healthy", meta.FindStatusCondition(d.Status.Conditions, "Degraded").Reason)
		events.seen(t, "Flink runs the job at the parallelism asked for: sink:1,source:4")
	})

	t.Run("timed out", func(t *testing.T) {
		const name = "timed-out"
		jobID := scaling(name, "2s")
		d := waitFor(t, c, ns, name, "Degraded ScaleTimedOut", func(d *flinkv1beta1.FlinkDeployment) bool {
			deg := meta.FindStatusCondition(d.Status.Conditions, "Degraded")
			return deg != nil && deg.Reason == "ScaleTimedOut"
		})
		deg := meta.FindStatusCondition(d.Status.Conditions, "Degraded")
		assert.Equal(t, metav1.ConditionTrue, deg.Status)
		assert.Contains(t, deg.Message, "asked for sink:1,source:4, Flink reports sink:2,source:2")
		assert.Equal(t, metav1.ConditionFalse, progressing(d).Status)
		last := d.Status.Operations[len(d.Status.Operations)-1]
		assert.Equal(t, flinkv1beta1.OperationScale, last.Type)
		assert.Equal(t, flinkv1beta1.OperationFailed, last.Outcome)
		assert.Contains(t, last.Message, "Flink reports sink:2,source:2")
		events.seen(t, "Flink did not reach the parallelism asked for within 2s")

		flink.ReleaseRescale(jobID) // slots came: the resource is healthy again
		waitFor(t, c, ns, name, "healthy", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.Rescale == nil && meta.FindStatusCondition(d.Status.Conditions, "Degraded").Reason == "Healthy"
		})
	})
}

// startRescale creates a FlinkDeployment on the adaptive scheduler (readiness timeout timeout,
// unless empty), runs it until STABLE with a job graph of two vertices at parallelism 2, makes
// Flink hold any rescale, and changes the overrides to source:4,sink:1. It returns the job id.
func startRescale(t *testing.T, c client.Client, ns string, flink *fakeflink.Server, k *cluster, name, timeout string) string {
	t.Helper()
	dep := fixtures.NewDeployment(t, ns, name)
	conf := map[string]string{"jobmanager.scheduler": "adaptive", jobs.KeyParallelismOverrides: "source:2,sink:2"}
	if timeout != "" {
		conf["kubernetes.operator.deployment.readiness.timeout"] = timeout
	}
	dep.Spec = *withConfig(t, &dep.Spec, conf)
	require.NoError(t, c.Create(context.Background(), dep))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	jobID := d.Status.JobStatus.JobID
	k.run(ns, name, jobID)
	flink.SetVertices(jobID, map[string]int{"source": 2, "sink": 2})
	flink.SetJobGraph(jobID, []fakeflink.GraphVertex{{ID: "source", Name: "Source", Parallelism: 2}, {ID: "sink", Name: "Sink", Parallelism: 2, Inputs: []string{"source"}}})
	waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
	flink.HoldRescale(jobID) // the adaptive scheduler has not got the slots yet
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := get(t, c, ns, name)
		d.Spec = *withConfig(t, &d.Spec, map[string]string{jobs.KeyParallelismOverrides: "source:4,sink:1"})
		return c.Update(context.Background(), d)
	}))
	return jobID
}

func progressing(d *flinkv1beta1.FlinkDeployment) metav1.Condition {
	if p := meta.FindStatusCondition(d.Status.Conditions, "Progressing"); p != nil {
		return *p
	}
	return metav1.Condition{}
}

// TestInPlaceScalingIsFollowedAcrossAnOperatorRestart: the rescale in flight is recorded in the
// status, not in the operator's memory: an operator started after the one that asked Flink
// follows it to its end without asking Flink again.
func TestInPlaceScalingIsFollowedAcrossAnOperatorRestart(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns := testEnv(t).NewNamespace(t, "scaling-restart")
	flink := fakeflink.New(t)
	k := &cluster{t: t, c: c, flink: flink}
	_, stop := startStoppableOperator(t, flink, ns)
	const name = "job"
	jobID := startRescale(t, c, ns, flink, k, name, "")
	waitFor(t, c, ns, name, "Progressing Scaling", func(d *flinkv1beta1.FlinkDeployment) bool {
		return progressing(d).Reason == "Scaling" && d.Status.Rescale != nil
	})
	stop()
	puts := func() int {
		n := 0
		for _, r := range flink.Requests() {
			if r == "PUT /jobs/"+jobID+"/resource-requirements" {
				n++
			}
		}
		return n
	}
	asked := puts()
	require.Positive(t, asked)

	flink.ReleaseRescale(jobID)
	events := startOperator(t, flink, ns)
	d := waitFor(t, c, ns, name, "rescale over", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.Rescale == nil && progressing(d).Status == metav1.ConditionFalse
	})
	assert.Equal(t, "Scale Succeeded ", operations(d.Status.Operations)[len(d.Status.Operations)-1])
	events.seen(t, "Flink runs the job at the parallelism asked for: sink:1,source:4")
	assert.Equal(t, asked, puts(), "Flink is not asked again")
}
