package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestRecovery: JobManager deployment recovery, health-check restarts and the shutdown TTL of
// an ended job's JobManager.
func TestRecovery(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	// start creates dep in its scenario (of k) and waits until its job runs STABLE.
	start := func(t *testing.T, k *cluster, dep *flinkv1beta1.FlinkDeployment) string {
		t.Helper()
		require.NoError(t, c.Create(ctx, dep))
		d := waitFor(t, c, dep.Namespace, dep.Name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
		k.run(dep.Namespace, dep.Name, d.Status.JobStatus.JobID)
		waitFor(t, c, dep.Namespace, dep.Name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
		return d.Status.JobStatus.JobID
	}

	t.Run("a missing JobManager deployment is recovered from HA metadata", func(t *testing.T) {
		t.Parallel()
		ns, _, k, events := newScenario(t, "recover-jm")
		const name = "job"
		jobID := start(t, k, haDeployment(t, ns, name, nil))
		old := k.jobManager(ns, name)
		require.NoError(t, c.Delete(ctx, old))
		d := waitFor(t, c, ns, name, "a new JobManager deployment", func(d *flinkv1beta1.FlinkDeployment) bool {
			jm := k.jobManager(ns, name)
			return jm != nil && jm.UID != old.UID && d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
		})
		assert.Equal(t, jobID, d.Status.JobStatus.JobID, "the same job, resumed from HA")
		assert.Equal(t, flinkv1beta1.LastStateSentinelPath, restorePath(t, c, ns, name), "from HA, never empty")
		events.seen(t, "JobManager deployment is missing; deploying it again")
		k.run(ns, name, jobID)
		waitFor(t, c, ns, name, "STABLE again", lifecycleIs(flinkv1beta1.LifecycleStable))
	})

	t.Run("an unhealthy job is restarted from HA metadata", func(t *testing.T) {
		t.Parallel()
		ns, flink, k, events := newScenario(t, "health")
		const name = "job"
		jobID := start(t, k, haDeployment(t, ns, name, map[string]string{
			options.HealthCheck.Key: "true", options.HealthRestartsThreshold.Key: "5", options.HealthRestartsWindow.Key: "5 min", options.HealthCheckpointProgress.Key: "false"}))
		flink.SetJobMetric(jobID, "numRestarts", "1")
		flink.SetJobMetric(jobID, "numberOfCompletedCheckpoints", "3")
		waitFor(t, c, ns, name, "health baseline", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.ClusterInfo[flinkdeployment.ClusterInfoHealthKey] != ""
		})
		wait.Never(t, 300*time.Millisecond, "healthy: left alone", func() bool { return k.jobManager(ns, name).DeletionTimestamp != nil })

		flink.SetJobMetric(jobID, "numRestarts", "9") // 8 restarts within the window > 5
		waitFor(t, c, ns, name, "old cluster going", func(d *flinkv1beta1.FlinkDeployment) bool {
			jm := k.jobManager(ns, name)
			return jm != nil && !jm.DeletionTimestamp.IsZero()
		})
		events.seen(t, "Job is unhealthy (8 restarts within 5m0s); restarting it from its last state")
		k.collect(ns, name)
		d := waitFor(t, c, ns, name, "redeployed", func(d *flinkv1beta1.FlinkDeployment) bool {
			jm := k.jobManager(ns, name)
			return jm != nil && jm.DeletionTimestamp.IsZero() && d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
		})
		assert.Equal(t, jobID, d.Status.JobStatus.JobID, "resumed from HA")
		assert.Empty(t, flink.Stops(), "no savepoint attempted on an unhealthy job")
	})

	t.Run("the JobManager of an ended job goes after the shutdown TTL", func(t *testing.T) {
		t.Parallel()
		ns, flink, k, events := newScenario(t, "ttl")
		const name = "job"
		dep := fixtures.NewDeployment(t, ns, name)
		dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{
			"state.checkpoints.dir": "file:///cp", "state.savepoints.dir": "file:///sp", "taskmanager.numberOfTaskSlots": "2",
			options.JMShutdownTTL.Key: "2 s"})
		jobID := start(t, k, dep)
		flink.SetJob(jobID, "FINISHED")
		waitFor(t, c, ns, name, "FINISHED", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.JobStatus.State == flinkv1beta1.JobStatusFinished
		})
		wait.Never(t, time.Second, "kept until the TTL ends", func() bool { return k.jobManager(ns, name).DeletionTimestamp != nil })
		k.collect(ns, name)
		d := waitFor(t, c, ns, name, "JobManager removed", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.JobManagerDeploymentStatus == flinkv1beta1.JobManagerMissing
		})
		assert.Equal(t, flinkv1beta1.JobStatusFinished, d.Status.JobStatus.State)
		events.seen(t, "JobManager deployment removed")
		wait.Never(t, 500*time.Millisecond, "an ended job is not recovered", func() bool { return k.jobManager(ns, name) != nil })
	})
}
