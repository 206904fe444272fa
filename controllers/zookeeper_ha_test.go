package controllers

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/hastore"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
	"github.com/flink-operator/flink-operator/test/zkserver"
)

// TestZooKeeperHAMetadata: with ZooKeeper HA the operator reads and deletes the job's HA
// metadata in ZooKeeper (a real server here), as with Kubernetes HA in ConfigMaps.
// Before, ZooKeeper was never looked at: a stateless upgrade left the old job's
// graph there (the new JobManager recovered the old job beside the new one), deletion left
// everything, and a last-state upgrade never found the metadata and cancelled the job instead.
func TestZooKeeperHAMetadata(t *testing.T) {
	t.Parallel()
	srv := zkserver.Start(t, "127.0.0.1")
	zkc := srv.Client(t)
	c := testEnv(t).Client
	ctx := context.Background()

	// scenario deploys "job" with ZooKeeper HA under root, runs it, and writes the metadata a
	// JobManager of it writes to ZooKeeper: its job graph and a completed checkpoint.
	scenario := func(t *testing.T, prefix, root string, mode flinkv1beta1.UpgradeMode) (string, *fakeflink.Server, *cluster, *flinkv1beta1.FlinkDeployment, string) {
		ns := testEnv(t).NewNamespace(t, prefix)
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		startManager(t, managerOptions{namespaces: []string{ns}, setup: zooKeeperController(flink)})
		dep := fixtures.NewDeployment(t, ns, "job")
		dep.Spec.Job.UpgradeMode = mode
		conf, err := dep.Spec.FlinkConfiguration.Flatten()
		require.NoError(t, err)
		conf["high-availability.type"] = "zookeeper"
		conf["high-availability.zookeeper.quorum"] = srv.Addr
		conf["high-availability.zookeeper.path.root"] = root
		conf["high-availability.storageDir"] = "file:///ha"
		dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
		require.NoError(t, c.Create(ctx, dep))
		d := waitFor(t, c, ns, "job", "deployed", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
		})
		job := d.Status.JobStatus.JobID
		// Not k.run: that also writes Kubernetes HA ConfigMaps, which a ZooKeeper HA
		// JobManager never writes.
		k.makeAvailable(ns, "job")
		flink.SetJob(job, "RUNNING")
		d = waitFor(t, c, ns, "job", "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
		base := root + "/job"
		zkCreate(t, zkc, base+"/jobgraphs/"+job)
		zkCreate(t, zkc, base+"/jobs/"+job+"/checkpoints/0000000000000000003")
		zkCreate(t, zkc, base+"/leader/dispatcher/connection_info")
		return ns, flink, k, d, base
	}

	t.Run("a stateless upgrade deletes the old job's metadata before the new cluster starts", func(t *testing.T) {
		ns, _, k, d, base := scenario(t, "zk-stateless", "/zk-stateless", flinkv1beta1.UpgradeModeStateless)
		oldJob := d.Status.JobStatus.JobID
		d.Spec.Image = "flink:1.20.1"
		require.NoError(t, c.Update(ctx, d))
		k.collect(ns, "job")
		d = waitFor(t, c, ns, "job", "redeployed", func(d *flinkv1beta1.FlinkDeployment) bool {
			jm := k.jobManager(ns, "job")
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && jm != nil &&
				jm.Spec.Template.Spec.Containers[0].Image == "flink:1.20.1"
		})
		assert.NotEqual(t, oldJob, d.Status.JobStatus.JobID, "a stateless upgrade starts a new job")
		assert.False(t, zkExists(t, zkc, base+"/jobgraphs/"+oldJob), "the old job's graph would be recovered beside the new job")
		assert.False(t, zkExists(t, zkc, base), "all of the cluster's HA metadata is deleted, as upstream")
		assert.True(t, zkExists(t, zkc, "/zk-stateless"), "only the cluster's own node goes")
		assert.Equal(t, "", restorePath(t, c, ns, "job"))
	})

	t.Run("a last-state upgrade restores through the metadata and keeps it", func(t *testing.T) {
		ns, flink, k, d, base := scenario(t, "zk-last-state", "/zk-last-state", flinkv1beta1.UpgradeModeLastState)
		oldJob := d.Status.JobStatus.JobID
		d.Spec.Image = "flink:1.20.1"
		require.NoError(t, c.Update(ctx, d))
		k.collect(ns, "job")
		d = waitFor(t, c, ns, "job", "redeployed", func(d *flinkv1beta1.FlinkDeployment) bool {
			jm := k.jobManager(ns, "job")
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && jm != nil &&
				jm.Spec.Template.Spec.Containers[0].Image == "flink:1.20.1"
		})
		assert.Equal(t, oldJob, d.Status.JobStatus.JobID, "the same job resumes from HA")
		assert.Equal(t, "RUNNING", flink.Job(oldJob), "not cancelled: its JobManager was deleted with the metadata kept")
		assert.Equal(t, flinkv1beta1.LastStateSentinelPath, restorePath(t, c, ns, "job"), "HA holds a checkpoint: the sentinel guards it")
		assert.False(t, zkExists(t, zkc, base+"/jobgraphs/"+oldJob), "the old graph goes, so the new spec's graph runs")
		assert.True(t, zkExists(t, zkc, base+"/jobs/"+oldJob+"/checkpoints/0000000000000000003"), "the checkpoint pointers stay")
	})

	t.Run("deleting the resource deletes the metadata", func(t *testing.T) {
		ns, _, k, d, base := scenario(t, "zk-delete", "/zk-delete", flinkv1beta1.UpgradeModeLastState)
		require.NoError(t, c.Delete(ctx, d))
		wait.For(t, 30*time.Second, "the FlinkDeployment to be deleted", func() bool {
			if jm := k.jobManager(ns, "job"); jm != nil && !jm.DeletionTimestamp.IsZero() {
				jm.Finalizers = nil // the garbage collector's part
				_ = c.Update(ctx, jm)
			}
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job"}, &flinkv1beta1.FlinkDeployment{})
			return apierrors.IsNotFound(err)
		})
		assert.False(t, zkExists(t, zkc, base))
	})

	t.Run("another namespace's cluster of the same name keeps its metadata when this one is deleted", func(t *testing.T) {
		// ZooKeeper paths are not namespaced and Flink's cluster id is the resource's name:
		// a cluster "job" of another namespace, suspended for a last-state resume, keeps its
		// job's metadata at the same node.
		ns, _, k, d, base := scenario(t, "zk-collide", "/zk-collide", flinkv1beta1.UpgradeModeLastState)
		const foreign = "00000000000000000000000000f0e1f0"
		zkCreate(t, zkc, base+"/jobgraphs/"+foreign)
		zkCreate(t, zkc, base+"/jobs/"+foreign+"/checkpoints/0000000000000000042")
		require.NoError(t, c.Delete(ctx, d))
		wait.For(t, 30*time.Second, "the FlinkDeployment to be deleted", func() bool {
			if jm := k.jobManager(ns, "job"); jm != nil && !jm.DeletionTimestamp.IsZero() {
				jm.Finalizers = nil // the garbage collector's part
				_ = c.Update(ctx, jm)
			}
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job"}, &flinkv1beta1.FlinkDeployment{})
			return apierrors.IsNotFound(err)
		})
		assert.True(t, zkExists(t, zkc, base+"/jobgraphs/"+foreign), "another cluster's job graph was deleted")
		assert.True(t, zkExists(t, zkc, base+"/jobs/"+foreign+"/checkpoints/0000000000000000042"), "another cluster's checkpoint pointer was deleted")
	})
}

// zooKeeperController is deploymentController with ZooKeeper quorums on loopback allowed.
func zooKeeperController(flink *fakeflink.Server) func(ctrl.Manager, record.EventRecorder) error {
	return func(mgr ctrl.Manager, rec record.EventRecorder) error {
		return (&flinkdeployment.FlinkDeploymentReconciler{
			Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
			Flink:     &clients.Factory{URLTemplate: flink.URL, Timeout: 2 * time.Second},
			Validator: &validation.Validator{}, Intervals: fixtures.FastIntervals(), ReconcilerOptions: reconciler.ReconcilerOptions{PriorityQueue: true},
			ZooKeeper: hastore.ZooKeeperPolicy{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		}).SetupWithManager(mgr)
	}
}

func zkCreate(t *testing.T, c *zk.Conn, p string) {
	t.Helper()
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			if _, err := c.Create(p[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatalf("create %s: %v", p[:i], err)
			}
		}
	}
}

func zkExists(t *testing.T, c *zk.Conn, p string) bool {
	t.Helper()
	ok, _, err := c.Exists(strings.TrimSuffix(p, "/"))
	require.NoError(t, err)
	return ok
}
