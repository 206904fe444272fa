//go:build e2e

package e2e

import (
	"context"
	"path"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/wait"
	"github.com/flink-operator/flink-operator/test/zkserver"
)

// TestZooKeeperHA runs an application cluster of real Flink 1.20 with ZooKeeper HA against a
// real ZooKeeper server (standalone, on the suite's loopback, which the pods share): a
// last-state upgrade restores through ZooKeeper (same job id, Flink restores a checkpoint), a
// killed JobManager recovers through ZooKeeper, a stateless upgrade leaves exactly one job in
// Flink's job list (the old one is not recovered beside it), and deletion removes the
// cluster's znodes. The operator reaches the quorum because the suite allows loopback
// (--zookeeper-allowed-networks).
func TestZooKeeperHA(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	srv := zkserver.Start(t, "127.0.0.1")
	zkc := srv.Client(t)
	const root = "/e2e-zk"

	dep := example(t, "examples/checkpoint-ha/checkpoint-ha.yaml", "e2e-zookeeper")
	dep.Name = "zk-ha"
	conf := setConfig(t, dep.Spec.FlinkConfiguration, "high-availability.type", "zookeeper")
	conf = setConfig(t, conf, "high-availability.zookeeper.quorum", srv.Addr)
	conf = setConfig(t, conf, "high-availability.zookeeper.path.root", root)
	conf = setConfig(t, conf, "high-availability.storageDir", "file:///flink-data/zk-ha")
	// Sessions of a killed JobManager end soon (Flink's default is a minute).
	conf = setConfig(t, conf, "high-availability.zookeeper.client.session-timeout", "6000")
	dep.Spec.FlinkConfiguration = setConfig(t, conf, "execution.checkpointing.interval", "2s")
	dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeLastState
	key := client.ObjectKeyFromObject(dep)
	base := root + "/" + dep.Name

	require.NoError(t, env.Client.Create(ctx, dep))
	jobID := waitFor(t, key, "Ready and RUNNING", 3*time.Minute, readyAndRunning).Status.JobStatus.JobID
	logf(t, "deployed in %s; znodes: %s", time.Since(start).Round(time.Second), strings.Join(zkTree(t, zkc, base), " "))
	require.True(t, zkHas(t, zkc, path.Join(base, "jobgraphs", jobID)), "Flink keeps the job graph in ZooKeeper")
	var cms corev1.ConfigMapList
	require.NoError(t, env.Client.List(ctx, &cms, client.InNamespace(key.Namespace), client.MatchingLabels{native.LabelApp: key.Name}))
	for _, cm := range cms.Items {
		require.False(t, strings.HasSuffix(cm.Name, "-config-map") && cm.Name != "flink-config-"+key.Name,
			"no Kubernetes HA ConfigMap with ZooKeeper HA: %s", cm.Name)
	}

	t.Run("last-state upgrade restores through ZooKeeper", func(t *testing.T) {
		cp := completedCheckpoint(t, key, jobID)
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) {
			d.Spec.FlinkConfiguration = setConfig(t, d.Spec.FlinkConfiguration, "execution.checkpointing.interval", "3s")
		})
		d := waitFor(t, key, "upgraded with last-state", 3*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return readyAndRunning(d) && strings.Contains(string(d.Status.ReconciliationStatus.LastReconciledSpec), `"3s"`)
		})
		require.Equal(t, jobID, d.Status.JobStatus.JobID, "last-state through ZooKeeper HA keeps the job id")
		restored := restoredFrom(t, key, jobID)
		require.False(t, restored.IsSavepoint, "restored from a checkpoint ZooKeeper pointed at, not a savepoint")
		require.GreaterOrEqual(t, restored.ID, cp.ID, "restored from the latest checkpoint or a newer one")
		require.Equal(t, int64(3000), checkpointInterval(t, key, jobID), "the new job graph runs, not the one ZooKeeper kept")
	})

	t.Run("a killed JobManager recovers through ZooKeeper", func(t *testing.T) { killedJobManagerRecovers(t, key, jobID) })

	t.Run("a stateless upgrade leaves exactly one job", func(t *testing.T) {
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) {
			d.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeStateless
			d.Spec.FlinkConfiguration = setConfig(t, d.Spec.FlinkConfiguration, "execution.checkpointing.interval", "4s")
		})
		d := waitFor(t, key, "upgraded stateless", 3*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return readyAndRunning(d) && strings.Contains(string(d.Status.ReconciliationStatus.LastReconciledSpec), `"4s"`)
		})
		newJob := d.Status.JobStatus.JobID
		require.NotEqual(t, jobID, newJob, "a stateless upgrade starts a new job")
		// The dispatcher recovers the job graphs it finds before the application submits its
		// own: once the new job is listed, an old graph left in ZooKeeper is listed too.
		var jobs []flink.JobOverview
		wait.For(t, 2*time.Minute, "the new job "+newJob+" running", func() bool {
			var err error
			jobs, err = flinkREST(t, key).JobsOverview(ctx)
			for _, j := range jobs {
				if j.ID == newJob && j.State == flink.JobRunning {
					return err == nil
				}
			}
			return false
		})
		var ids []string
		for _, j := range jobs {
			ids = append(ids, j.ID+"="+string(j.State))
		}
		require.Len(t, jobs, 1, "Flink's job list: %v", ids)
		require.Equal(t, newJob, jobs[0].ID)
		require.Equal(t, flink.JobRunning, jobs[0].State)
		require.False(t, zkHas(t, zkc, path.Join(base, "jobgraphs", jobID)), "the old job graph is gone")
		jobID = newJob
	})

	t.Run("deletion removes the cluster's znodes", func(t *testing.T) {
		// Another cluster's node under the same root must survive. (The root itself is a
		// container znode Flink's Curator created: ZooKeeper removes it by itself once it is
		// empty, so its absence says nothing about the operator.)
		neighbour := path.Join(root, "another-cluster")
		_, err := zkc.Create(neighbour, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		deleteAndWait(t, &flinkv1beta1.FlinkDeployment{ObjectMeta: dep.ObjectMeta})
		requireNoPods(t, key)
		require.False(t, zkHas(t, zkc, base), "left: %v", zkTree(t, zkc, base))
		require.True(t, zkHas(t, zkc, neighbour), "another cluster's znode under the same root was deleted")
	})
	logf(t, "TestZooKeeperHA took %s", time.Since(start).Round(time.Second))
}

func zkHas(t *testing.T, c *zk.Conn, p string) bool {
	t.Helper()
	ok, _, err := c.Exists(p)
	require.NoError(t, err)
	return ok
}

// zkTree lists the znodes below p, for the log.
func zkTree(t *testing.T, c *zk.Conn, p string) []string {
	t.Helper()
	children, _, err := c.Children(p)
	if err != nil {
		return nil
	}
	sort.Strings(children)
	out := []string{}
	for _, child := range children {
		out = append(out, path.Join(p, child))
		out = append(out, zkTree(t, c, path.Join(p, child))...)
	}
	return out
}
