//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
)

// TestSessionJobRollback: a savepoint-mode session job on a real session cluster, with
// kubernetes.operator.deployment.rollback.enabled and a short readiness timeout, is upgraded to
// a spec Flink cannot run (an entry class the jar does not have, and another parallelism). It
// is not RUNNING within the timeout, so the operator rolls it back: Flink's own REST API shows
// the session running the old spec (its parallelism) as a new job, restored from the savepoint
// the upgrade took, which the Rollback operation in the status names.
func TestSessionJobRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "e2e-sj-rollback"
	session := example(t, "examples/session-job/session-cluster.yaml", ns)
	sessionKey := client.ObjectKeyFromObject(session)
	require.NoError(t, env.Client.Create(ctx, session))
	waitFor(t, sessionKey, "session Ready", 3*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionTrue
	})

	job := sessionJobs(t, ns)[0] // top-speed, upgradeMode savepoint
	require.Equal(t, flinkv1beta1.UpgradeModeSavepoint, job.Spec.Job.UpgradeMode)
	job.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{
		"kubernetes.operator.deployment.rollback.enabled":  "true",
		"kubernetes.operator.deployment.readiness.timeout": "20 s",
	})
	require.NoError(t, env.Client.Create(ctx, job))
	key := client.ObjectKeyFromObject(job)
	stable := waitFor(t, key, "RUNNING and stable", 3*time.Minute, func(j *flinkv1beta1.FlinkSessionJob) bool {
		return jobReady(j) && j.Status.LifecycleState == flinkv1beta1.LifecycleStable
	})
	stableID := stable.Status.JobStatus.JobID
	allTasksRunning(t, sessionKey, stableID) // a savepoint needs every task running

	patchJob(t, key, func(j *flinkv1beta1.FlinkSessionJob) {
		j.Spec.Job.EntryClass = "org.example.DoesNotExist"
		j.Spec.Job.Parallelism = 2
	})
	rolledBack := waitFor(t, key, "ROLLED_BACK and RUNNING", 5*time.Minute, func(j *flinkv1beta1.FlinkSessionJob) bool {
		return j.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationRolledBack &&
			j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
	})
	newID := rolledBack.Status.JobStatus.JobID
	require.NotEqual(t, stableID, newID)
	require.Equal(t, flinkv1beta1.LifecycleRolledBack, rolledBack.Status.LifecycleState)

	// The operator's record: the upgrade's savepoint, and the Rollback operation restoring it.
	sp := rolledBack.Status.JobStatus.SavepointInfo.LastSavepoint
	require.NotNil(t, sp)
	require.Equal(t, flinkv1beta1.SnapshotTriggerUpgrade, sp.TriggerType)
	ops := rolledBack.Status.Operations
	require.NotEmpty(t, ops)
	rollback := ops[len(ops)-1]
	logf(t, "operations %+v", ops)
	require.Equal(t, flinkv1beta1.OperationRollback, rollback.Type)
	require.Equal(t, localPath(sp.Location), localPath(rollback.Snapshot), "the Rollback operation names the upgrade savepoint")

	// Flink's own account: the old job stopped with that savepoint; the session runs one job of
	// this resource, the old spec's, restored from it.
	cl := flinkREST(t, sessionKey)
	state, err := cl.JobStatus(ctx, stableID)
	require.NoError(t, err)
	require.Equal(t, flink.JobState("FINISHED"), state, "the stable job stopped with a savepoint for the upgrade")
	overview, err := cl.JobsOverview(ctx)
	require.NoError(t, err)
	var running []string
	for _, j := range overview {
		if j.State == "RUNNING" {
			running = append(running, j.ID)
		}
	}
	require.Equal(t, []string{newID}, running, "the session runs the rolled-back job only (jobs %+v)", overview)
	allTasksRunning(t, sessionKey, newID)
	require.Equal(t, 1, runningParallelism(t, sessionKey, newID), "the old spec's parallelism runs")
	restored := restoredFrom(t, sessionKey, newID)
	require.True(t, restored.IsSavepoint)
	require.Equal(t, localPath(sp.Location), localPath(restored.ExternalPath), "restored from the savepoint the operator recorded")
	require.Equal(t, localPath(rollback.Snapshot), localPath(restored.ExternalPath))

	require.NoError(t, env.Client.Delete(ctx, rolledBack))
	require.NoError(t, env.Client.Delete(ctx, session))
}
