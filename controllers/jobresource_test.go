package controllers

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/flinksessionjob"
	"github.com/flink-operator/flink-operator/controllers/flinkstatesnapshot"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/operatorconfig"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// laggingCache serves, while lagging is set, the copy of each object it read first: an informer
// cache that has not seen the writes made since. It counts the writes asked of it.
type laggingCache struct {
	client.Client
	mu      sync.Mutex
	lagging bool
	first   map[types.NamespacedName]client.Object
	writes  int
}

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.first[key].(*flinkv1beta1.FlinkSessionJob); ok && c.lagging {
		if out, ok := obj.(*flinkv1beta1.FlinkSessionJob); ok {
			*out = *old.DeepCopy()
			return nil
		}
	}
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if _, seen := c.first[key]; !seen {
		if c.first == nil {
			c.first = map[types.NamespacedName]client.Object{}
		}
		c.first[key] = obj.DeepCopyObject().(client.Object)
	}
	return nil
}

func (c *laggingCache) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.count()
	return c.Client.Update(ctx, obj, opts...)
}

func (c *laggingCache) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	c.count()
	return c.Client.Patch(ctx, obj, p, opts...)
}

func (c *laggingCache) Status() client.SubResourceWriter { return countedStatus{c.Client.Status(), c} }

func (c *laggingCache) count() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
}

type countedStatus struct {
	client.SubResourceWriter
	c *laggingCache
}

func (s countedStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	s.c.count()
	return s.SubResourceWriter.Patch(ctx, obj, p, opts...)
}

// TestSessionJobSkipsStaleCopyOfItsOwnWrite: a session job read from a cache that has not
// caught up with the reconciler's own writes (the finalizer it added, the status it wrote) is
// not acted upon, as for FlinkDeployments: the reconcile is skipped until the watch event of
// the write brings the object back, instead of computing a status from the stale copy and
// having its write refused.
func TestSessionJobSkipsStaleCopyOfItsOwnWrite(t *testing.T) {
	t.Parallel()
	job := &flinkv1beta1.FlinkSessionJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orders", UID: "uid-orders", Generation: 1},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session",
			Job: &flinkv1beta1.JobSpec{JarURI: "https://repo.example.com/orders.jar", UpgradeMode: flinkv1beta1.UpgradeModeStateless}},
	}
	base := fake.NewClientBuilder().WithScheme(kubeenv.Scheme()).WithObjects(job).WithStatusSubresource(job).Build()
	c := &laggingCache{Client: base}
	r := &flinksessionjob.FlinkSessionJobReconciler{Client: c, Scheme: kubeenv.Scheme(), Recorder: record.NewFakeRecorder(100),
		Flink: &clients.Factory{}, Validator: &validation.Validator{}, Intervals: fixtures.FastIntervals()}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(job)}

	_, err := r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	written := &flinkv1beta1.FlinkSessionJob{}
	require.NoError(t, base.Get(context.Background(), req.NamespacedName, written))
	require.Contains(t, written.Finalizers, flinksessionjob.SessionJobFinalizer, "the first reconcile adds the finalizer")
	require.NotEmpty(t, written.Status.LifecycleState, "the first reconcile writes the status")

	c.mu.Lock()
	c.lagging, c.writes = true, 0
	c.mu.Unlock()
	res, err := r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, reconciler.StaleCopyRetry, res.RequeueAfter, "a copy older than the reconciler's own write is skipped")
	assert.Zero(t, c.writes, "nothing is written from a stale copy")

	c.mu.Lock()
	c.lagging = false
	c.mu.Unlock()
	res, err = r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.NotEqual(t, reconciler.StaleCopyRetry, res.RequeueAfter, "the latest copy is reconciled")
}

// TestSnapshotAddressesClusterAsItsReconcilerDoes: the snapshot reconciler addresses a job's
// cluster from the same configuration as the cluster's own reconciler: the operator's default
// Flink configuration in force (here its REST port) and the cluster's own options over it.
func TestSnapshotAddressesClusterAsItsReconcilerDoes(t *testing.T) {
	t.Parallel()
	dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orders"},
		Spec: flinkv1beta1.FlinkDeploymentSpec{FlinkVersion: "v1_20", Job: &flinkv1beta1.JobSpec{JarURI: "local:///job.jar"}},
		Status: flinkv1beta1.FlinkDeploymentStatus{CommonStatus: flinkv1beta1.CommonStatus{
			JobStatus: flinkv1beta1.JobStatus{State: flinkv1beta1.JobStatusRunning, JobID: "0123456789abcdef0123456789abcdef"}}}}
	snap := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sp"},
		Spec: flinkv1beta1.FlinkStateSnapshotSpec{JobReference: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: "orders"},
			Savepoint: &flinkv1beta1.SavepointSpec{}}}
	c := fake.NewClientBuilder().WithScheme(kubeenv.Scheme()).WithObjects(dep, snap).Build()
	live := operatorconfig.NewStore(operatorconfig.Settings{ReconcileInterval: time.Minute, ProgressCheckInterval: time.Second,
		Defaults: flinkconf.Defaults{Base: map[string]string{"rest.port": "18081"}}})
	factory := &clients.Factory{URLTemplate: "http://{{name}}.{{namespace}}:{{port}}"}
	snapshots := &flinkstatesnapshot.FlinkStateSnapshotReconciler{ReconcilerOptions: reconciler.ReconcilerOptions{Live: live}, Client: c, Scheme: kubeenv.Scheme(),
		Recorder: record.NewFakeRecorder(10), Flink: factory}
	deployments := &flinkdeployment.FlinkDeploymentReconciler{ReconcilerOptions: reconciler.ReconcilerOptions{Live: live}, Client: c, Flink: factory}

	tgt, why, err := snapshots.ResolveTarget(context.Background(), snap)
	require.NoError(t, err)
	require.Empty(t, why)
	defer tgt.Flink.Close()
	_, defaults, _ := reconciler.LiveSettings(live, deployments.Intervals, deployments.Defaults, deployments.Flink)
	deployments.Defaults = defaults
	running := flinkdeployment.NewScope(dep)
	running.Deployed = &dep.Spec // the spec the cluster runs
	own, err := deployments.RestClient(context.Background(), running)
	require.NoError(t, err)
	defer own.Close()
	assert.Equal(t, "http://orders.ns:18081", tgt.Flink.URL(), "the port of the operator's default configuration")
	assert.Equal(t, own.URL(), tgt.Flink.URL(), "the cluster's own reconciler's address")
}
