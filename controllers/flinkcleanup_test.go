package controllers

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestUpgradeLeavesTheClusterToFlinksCleanup: Flink reports a job stopped with a savepoint
// FINISHED before it has cleaned up after it, and deletes the job's HA ConfigMap last. A
// JobManager deleted in between hung 5 s on SIGTERM, until Flink's shutdown safeguard halted it.
// The JobManager Deployment stays while the job's ConfigMap does (at most
// jobs.FlinkCleanupWaitAtMost after the job ended), and the upgrade goes on once Flink deleted it.
func TestUpgradeLeavesTheClusterToFlinksCleanup(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns, flink, k, _ := newScenario(t, "flink-cleanup")
	dep := fixtures.NewDeployment(t, ns, "job")
	dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeSavepoint
	conf, err := dep.Spec.FlinkConfiguration.Flatten()
	require.NoError(t, err)
	conf["high-availability.type"], conf["high-availability.storageDir"] = "kubernetes", "file:///ha"
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
	require.NoError(t, c.Create(ctx, dep))
	d := waitFor(t, c, ns, "job", "deployed", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
	})
	job := d.Status.JobStatus.JobID
	k.run(ns, "job", job) // writes the job's HA ConfigMap, as Flink's HA services do
	d = waitFor(t, c, ns, "job", "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
	jobConfigMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: native.JobHAConfigMapName("job", job)}}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(jobConfigMap), jobConfigMap))

	d.Spec.Image = "flink:1.20.1"
	require.NoError(t, c.Update(ctx, d))
	d = waitFor(t, c, ns, "job", "the job stopped with a savepoint", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.State == flinkv1beta1.JobStatusFinished && d.Status.JobStatus.UpgradeSavepointPath != ""
	})
	require.Equal(t, "FINISHED", flink.Job(job))
	endedMillis, err := strconv.ParseInt(d.Status.JobStatus.UpdateTime, 10, 64)
	require.NoError(t, err)
	ended := time.UnixMilli(endedMillis)

	// Flink is still cleaning up: the JobManager stays, unless the wait's bound is past.
	for hold := time.Now().Add(time.Second); time.Now().Before(hold); time.Sleep(20 * time.Millisecond) {
		if jm := k.jobManager(ns, "job"); jm == nil || !jm.DeletionTimestamp.IsZero() {
			require.GreaterOrEqual(t, time.Since(ended), jobs.FlinkCleanupWaitAtMost,
				"the JobManager was deleted while Flink was still cleaning up after the stopped job")
			break
		}
	}

	// Flink's cleanup ends with the job's ConfigMap: the upgrade goes on.
	require.NoError(t, c.Delete(ctx, jobConfigMap))
	k.collect(ns, "job")
	wait.For(t, 30*time.Second, "the new JobManager", func() bool {
		jm := k.jobManager(ns, "job")
		return jm != nil && jm.DeletionTimestamp.IsZero() && jm.Spec.Template.Spec.Containers[0].Image == "flink:1.20.1"
	})
}
