//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/flinkcluster"
	"github.com/flink-operator/flink-operator/test/s3store"
)

// s3Bucket is the bucket examples/checkpoint-s3 keeps its state in.
const s3Bucket = "flink-state"

// TestStateInObjectStorage keeps a job's checkpoints, savepoints and HA data in S3, as production
// clusters do, instead of on a shared disk: Flink's own S3 file system plugin (enabled as on
// the Flink image, with ENABLE_BUILT_IN_PLUGINS in the JobManager's and TaskManagers'
// containers, set through containerized.*.env) writes to an S3-compatible store (package
// s3store). A savepoint upgrade, a last-state upgrade and a killed JobManager each restore what
// Flink says they restore, from an s3:// path whose objects the bucket holds.
func TestStateInObjectStorage(t *testing.T) {
	t.Parallel()
	require.Contains(t, flinkcluster.Versions(t), exampleImagesFlink, "the S3 plugin is installed for Flink %s", exampleImagesFlink)
	ctx := context.Background()
	store, err := s3store.Start("127.0.0.1:0", s3Bucket)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	// The example as a user applies it; only the store's address is this test's.
	dep := example(t, "examples/checkpoint-s3/checkpoint-s3.yaml", "e2e-s3")
	dep.Spec.FlinkConfiguration = setConfig(t, dep.Spec.FlinkConfiguration, "s3.endpoint", store.Endpoint)
	conf, err := dep.Spec.FlinkConfiguration.Flatten()
	require.NoError(t, err)
	for _, k := range []string{"containerized.master.env.ENABLE_BUILT_IN_PLUGINS", "containerized.taskmanager.env.ENABLE_BUILT_IN_PLUGINS"} {
		require.Equal(t, s3PluginJar, conf[k], "the example enables the plugin the local image has (%s)", k)
	}
	key := client.ObjectKeyFromObject(dep)
	require.NoError(t, env.Client.Create(ctx, dep))
	d := waitFor(t, key, "Ready and RUNNING", 3*time.Minute, readyAndRunning)
	jobID := d.Status.JobStatus.JobID
	allTasksRunning(t, key, jobID)

	cp := completedCheckpoint(t, key, jobID)
	requireInBucket(t, store, cp.ExternalPath, "checkpoints/")
	keys, err := store.Keys(s3Bucket, "ha/")
	require.NoError(t, err)
	require.NotEmpty(t, keys, "Kubernetes HA keeps the job's submitted graph and checkpoint pointers' data under high-availability.storageDir")

	t.Run("savepoint upgrade restores the savepoint from the bucket", func(t *testing.T) {
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 2 })
		d := waitFor(t, key, "upgraded to parallelism 2", 4*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return readyAndRunning(d) && d.Status.JobStatus.SavepointInfo.LastSavepoint.TriggerType == flinkv1beta1.SnapshotTriggerUpgrade
		})
		jobID = d.Status.JobStatus.JobID
		allTasksRunning(t, key, jobID)
		restored := restoredFrom(t, key, jobID)
		require.True(t, restored.IsSavepoint, "Flink restored a savepoint")
		require.Equal(t, d.Status.JobStatus.SavepointInfo.LastSavepoint.Location, restored.ExternalPath, "the upgrade savepoint the operator recorded")
		requireInBucket(t, store, restored.ExternalPath, "savepoints/")
		require.Equal(t, 2, runningParallelism(t, key, jobID), "Flink runs the new parallelism")
	})

	t.Run("last-state upgrade restores the latest checkpoint from the bucket", func(t *testing.T) {
		cp := completedCheckpoint(t, key, jobID)
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) {
			d.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeLastState
			d.Spec.Job.Parallelism = 1
		})
		d := waitFor(t, key, "upgraded with last-state to parallelism 1", 4*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return readyAndRunning(d) && strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, `"upgradeMode":"last-state"`)
		})
		require.Equal(t, jobID, d.Status.JobStatus.JobID, "last-state through HA keeps the job id")
		allTasksRunning(t, key, jobID)
		restored := restoredFrom(t, key, jobID)
		require.False(t, restored.IsSavepoint, "Flink restored a checkpoint")
		require.GreaterOrEqual(t, restored.ID, cp.ID, "the latest checkpoint or a newer one")
		requireInBucket(t, store, restored.ExternalPath, "checkpoints/")
		require.Equal(t, 1, runningParallelism(t, key, jobID), "Flink runs the new parallelism")
	})

	t.Run("a killed JobManager recovers from the bucket", func(t *testing.T) {
		killedJobManagerRecovers(t, key, jobID)
		requireInBucket(t, store, restoredFrom(t, key, jobID).ExternalPath, "checkpoints/")
	})

	require.NoError(t, env.Client.Delete(ctx, &flinkv1beta1.FlinkDeployment{ObjectMeta: dep.ObjectMeta}))
	requireNoPods(t, key)
}

// requireInBucket checks that a checkpoint or savepoint Flink reported is in the test's bucket,
// under dir, with its _metadata object written there. Written, not still there: once the job
// completes newer checkpoints, Flink deletes a restored checkpoint they subsume (seen on a loaded
// machine, where the restored chk-3 was gone before this looked).
func requireInBucket(t *testing.T, store *s3store.Server, location, dir string) {
	t.Helper()
	prefix := "s3://" + s3Bucket + "/" + dir
	require.True(t, strings.HasPrefix(location, prefix), "%s is under %s", location, prefix)
	metadata := strings.TrimPrefix(location, "s3://"+s3Bucket+"/") + "/_metadata"
	require.True(t, store.Written(s3Bucket, metadata), "Flink wrote %s to the bucket", metadata)
}
