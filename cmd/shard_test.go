package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinksessionjob"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/operatorconfig"
	operatoroptions "github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/test/wait"
)

// shardInstance starts an operator instance (run, as main does) that stops when the test ends
// or when the returned function is called.
func shardInstance(t *testing.T, o options) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, testEnv(t).Config, o, map[string]bool{}) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("operator instance did not stop")
		}
	}
	t.Cleanup(stop)
	return stop
}

// shardOptions are an instance's options in namespace ns with leader election in opNS.
func shardOptions(t *testing.T, ns, opNS string) options {
	return options{metricsAddr: "0", probeAddr: freeAddr(t), watchNamespaces: ns,
		enableLeaderElection: true, leaderElectionNS: opNS, leaderElectionID: "flink-operator.flink.apache.org",
		leaseDuration: 15 * time.Second, renewDeadline: 10 * time.Second, retryPeriod: time.Second,
		restURLTemplate: clients.DefaultRESTURLTemplate, reconcileInterval: time.Minute, progressInterval: time.Second,
		restTimeout: time.Second, reconcileDeadline: time.Minute, reconcileParallelism: 4}
}

// sessionCluster is a FlinkDeployment the operator deploys without any Flink (no job).
func sessionCluster(t *testing.T, ns, name string, labels map[string]string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
spec:
  image: flink:1.20
  flinkVersion: v1_20
  serviceAccount: flink
  flinkConfiguration: {taskmanager.numberOfTaskSlots: "2", high-availability.type: kubernetes, high-availability.storageDir: "file:///ha"}
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
`), dep))
	dep.Namespace, dep.Name, dep.Labels = ns, name, labels
	return dep
}

// TestShardedInstancesSplitResources: two operator instances over disjoint
// halves of one namespace, by label selector: instance a from --label-selector, instance b from
// the operator ConfigMap (kubernetes.operator.label.selector, and its Lease from
// kubernetes.operator.leader-election.lease-name). Each deploys exactly its half, under a
// Lease of its own; an unlabelled resource is nobody's. A resource relabelled from a to b is
// left alone by a (no cleanup) and served by b; a selector change in b's ConfigMap takes
// effect in-process.
func TestShardedInstancesSplitResources(t *testing.T) {
	env := testEnv(t)
	ctx := context.Background()
	ns, opNS := env.NewNamespace(t, "shards"), env.NewNamespace(t, "shards-operator")
	const n = 3
	var halfA, halfB []string
	for i := range n {
		halfA, halfB = append(halfA, fmt.Sprintf("a-%d", i)), append(halfB, fmt.Sprintf("b-%d", i))
	}
	for _, name := range halfA {
		require.NoError(t, env.Client.Create(ctx, sessionCluster(t, ns, name, map[string]string{"shard": "a"})))
	}
	for _, name := range halfB {
		require.NoError(t, env.Client.Create(ctx, sessionCluster(t, ns, name, map[string]string{"shard": "b"})))
	}
	require.NoError(t, env.Client.Create(ctx, sessionCluster(t, ns, "nobodys", nil)))

	jm := func(name string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		if env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: native.JobManagerDeploymentName(name)}, d) != nil {
			return nil
		}
		return d
	}
	deployed := func(names ...string) func() bool {
		return func() bool {
			for _, name := range names {
				if jm(name) == nil {
					return false
				}
			}
			return true
		}
	}
	anyDeployed := func(names ...string) func() bool {
		return func() bool {
			for _, name := range names {
				if jm(name) != nil {
					return true
				}
			}
			return false
		}
	}
	holder := func(lease string) string {
		l := &coordinationv1.Lease{}
		if env.Client.Get(ctx, client.ObjectKey{Namespace: opNS, Name: lease}, l) != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}

	// Instance a alone: its half is deployed, b's half and the unlabelled one are not touched.
	oa := shardOptions(t, ns, opNS)
	oa.labelSelector, oa.leaderElectionID = "shard=a", "flink-operator-shard-a"
	stopA := shardInstance(t, oa)
	wait.For(t, 60*time.Second, "instance a deploys shard a", deployed(halfA...))
	wait.Never(t, 3*time.Second, "instance a deployed a resource outside its selector", anyDeployed(append(halfB, "nobodys")...))
	for _, name := range append(halfB, "nobodys") {
		d := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d))
		assert.Empty(t, d.Status.LifecycleState, "%s was reconciled by instance a", name)
		assert.Empty(t, d.Finalizers, "%s was reconciled by instance a", name)
	}

	// Instance b, configured by its ConfigMap, with a Lease of its own.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: opNS, Name: "flink-operator-config-b"},
		Data: map[string]string{"config.yaml": operatoroptions.LabelSelector.Key + ": shard=b\n" + operatoroptions.LeaseName.Key + ": flink-operator-shard-b\n"}}
	require.NoError(t, env.Client.Create(ctx, cm))
	ob := shardOptions(t, ns, opNS)
	ob.configMap, ob.configMapNamespace = cm.Name, opNS
	shardInstance(t, ob)
	wait.For(t, 60*time.Second, "instance b deploys shard b", deployed(halfB...))
	wait.Never(t, 2*time.Second, "the unlabelled resource was deployed by an instance", anyDeployed("nobodys"))
	a, b := holder("flink-operator-shard-a"), holder("flink-operator-shard-b")
	assert.NotEmpty(t, a, "instance a holds its own Lease")
	assert.NotEmpty(t, b, "instance b holds its own Lease")
	assert.NotEqual(t, a, b)
	assert.Empty(t, holder("flink-operator.flink.apache.org"), "no instance used the default Lease")

	// a-0 moves to shard b: instance a leaves it as it is (its cache drops it; the request that
	// follows finds nothing and must not clean up), instance b serves it from now on.
	moved := halfA[0]
	before := jm(moved)
	require.NotNil(t, before)
	d := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: moved}, d))
	d.Labels["shard"] = "b"
	require.NoError(t, env.Client.Update(ctx, d))
	wait.Never(t, 2*time.Second, "the relabelled resource's cluster was cleaned up", func() bool {
		now := jm(moved)
		got := &flinkv1beta1.FlinkDeployment{}
		return now == nil || now.UID != before.UID || now.DeletionTimestamp != nil ||
			env.Client.Get(ctx, client.ObjectKeyFromObject(d), got) != nil || len(got.Finalizers) == 0
	})
	stopA() // only instance b runs now: whatever happens to a-0 is b's doing
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: moved}, d))
	d.Spec.Job = &flinkv1beta1.JobSpec{JarURI: "local:///x.jar", UpgradeMode: flinkv1beta1.UpgradeModeSavepoint}
	require.NoError(t, env.Client.Update(ctx, d))
	wait.For(t, 30*time.Second, "instance b reports the invalid change of the resource it took over", func() bool {
		got := &flinkv1beta1.FlinkDeployment{}
		return env.Client.Get(ctx, client.ObjectKeyFromObject(d), got) == nil && got.Status.Error != ""
	})

	// A selector change in b's ConfigMap restarts b's controllers with the new selector.
	unlabelled := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nobodys"}, unlabelled))
	unlabelled.Labels = map[string]string{"shard": "c"}
	require.NoError(t, env.Client.Update(ctx, unlabelled))
	cm.Data["config.yaml"] = operatoroptions.LabelSelector.Key + ": shard in (b,c)\n" + operatoroptions.LeaseName.Key + ": flink-operator-shard-b\n"
	require.NoError(t, env.Client.Update(ctx, cm))
	wait.For(t, 60*time.Second, "instance b serves shard c after its selector changed", deployed("nobodys"))
}

// TestSessionJobOfAnotherShardsSession: a session job served by instance a whose session
// cluster is labelled for shard b (not in a's cache). The job is deleted while its session's
// JobManager is not ready (with HA, the job comes back with it): the instance must wait to stop
// the job, not take the session for gone and drop the finalizer with the job still running.
func TestSessionJobOfAnotherShardsSession(t *testing.T) {
	env := testEnv(t)
	ctx := context.Background()
	ns, opNS := env.NewNamespace(t, "shard-session"), env.NewNamespace(t, "shard-session-operator")

	session := sessionCluster(t, ns, "session", map[string]string{"shard": "b"})
	require.NoError(t, env.Client.Create(ctx, session))
	session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerDeploying
	require.NoError(t, env.Client.Status().Update(ctx, session))

	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders", Labels: map[string]string{"shard": "a"},
		Finalizers: []string{flinksessionjob.SessionJobFinalizer}},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session",
			Job: &flinkv1beta1.JobSpec{JarURI: "https://example.com/orders.jar", UpgradeMode: flinkv1beta1.UpgradeModeStateless}}}
	require.NoError(t, env.Client.Create(ctx, job))
	job.Status.JobStatus = flinkv1beta1.JobStatus{JobID: "a5b3c0e1d2f4a5b3c0e1d2f4a5b3c0e1", State: "RUNNING"}
	require.NoError(t, env.Client.Status().Update(ctx, job))
	require.NoError(t, env.Client.Delete(ctx, job))

	o := shardOptions(t, ns, opNS)
	o.labelSelector, o.leaderElectionID = "shard=a", "flink-operator-shard-a"
	shardInstance(t, o)
	wait.For(t, 30*time.Second, "a Warning that deletion waits for the session", func() bool {
		var events corev1.EventList
		if env.Client.List(ctx, &events, client.InNamespace(ns)) != nil {
			return false
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == job.Name && strings.Contains(e.Message, "Waiting for session session to be ready") {
				return true
			}
		}
		return false
	})
	wait.Never(t, 2*time.Second, "the session job's finalizer was dropped with its job running", func() bool {
		got := &flinkv1beta1.FlinkSessionJob{}
		return env.Client.Get(ctx, client.ObjectKeyFromObject(job), got) != nil
	})
}

func TestLabelSelectorOption(t *testing.T) {
	o := options{metricsAddr: "0", probeAddr: "0", labelSelector: "shard in a"}
	_, err := newManager(testEnv(t).Config, o)
	require.ErrorContains(t, err, `--label-selector: kubernetes.operator.label.selector: "shard in a" is not a label selector`)
}

func TestWatchNamespacesEnv(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	assert.Equal(t, "", watchNamespacesEnv(env(nil)))
	assert.Equal(t, "a,b", watchNamespacesEnv(env(map[string]string{"WATCH_NAMESPACES": "a,b"})), "upstream's name")
	assert.Equal(t, "olm", watchNamespacesEnv(env(map[string]string{"WATCH_NAMESPACE": "olm"})), "OLM's name")
	assert.Equal(t, "olm", watchNamespacesEnv(env(map[string]string{"WATCH_NAMESPACE": "olm", "WATCH_NAMESPACES": "a,b"})),
		"OLM's wins: its OperatorGroup is what the operator's RBAC is granted for")
}

func TestNeedsRestart(t *testing.T) {
	base := operatorconfig.Settings{WatchNamespaces: "a", LabelSelector: "shard=a", LeaseName: "l", ReconcileParallelism: 4,
		ReconcileInterval: time.Minute}
	assert.False(t, needsRestart(base, base))
	changed := base
	changed.ReconcileInterval = time.Second
	assert.False(t, needsRestart(base, changed), "intervals apply from the next reconcile")
	for _, change := range []func(*operatorconfig.Settings){
		func(s *operatorconfig.Settings) { s.WatchNamespaces = "b" },
		func(s *operatorconfig.Settings) { s.LabelSelector = "shard=b" },
		func(s *operatorconfig.Settings) { s.LeaseName = "m" },
		func(s *operatorconfig.Settings) { s.ReconcileParallelism = 8 },
		func(s *operatorconfig.Settings) { s.RateLimit.Max = 10 },
		func(s *operatorconfig.Settings) { s.Retry.MaxAttempts = 3 },
	} {
		now := base
		change(&now)
		assert.True(t, needsRestart(base, now), "%+v", now)
	}
}

// TestSessionClusterWaitsForOtherShardsJobs: a session cluster of shard a is deleted while a
// session job of shard b (not in instance a's cache) still runs on it. Instance a must wait for
// that job as for its own (upstream's block-on-session-jobs), not delete the cluster under it.
func TestSessionClusterWaitsForOtherShardsJobs(t *testing.T) {
	env := testEnv(t)
	ctx := context.Background()
	ns, opNS := env.NewNamespace(t, "shard-block"), env.NewNamespace(t, "shard-block-operator")
	session := sessionCluster(t, ns, "session", map[string]string{"shard": "a"})
	require.NoError(t, env.Client.Create(ctx, session))
	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders", Labels: map[string]string{"shard": "b"}},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session",
			Job: &flinkv1beta1.JobSpec{JarURI: "https://example.com/orders.jar", UpgradeMode: flinkv1beta1.UpgradeModeStateless}}}
	require.NoError(t, env.Client.Create(ctx, job))

	o := shardOptions(t, ns, opNS)
	o.labelSelector, o.leaderElectionID = "shard=a", "flink-operator-shard-a"
	shardInstance(t, o)
	jmKey := client.ObjectKey{Namespace: ns, Name: native.JobManagerDeploymentName(session.Name)}
	wait.For(t, 60*time.Second, "instance a deploys its session cluster", func() bool {
		return env.Client.Get(ctx, jmKey, &appsv1.Deployment{}) == nil
	})
	require.NoError(t, env.Client.Delete(ctx, session))
	wait.For(t, 30*time.Second, "a Warning that deletion waits for the session job", func() bool {
		var events corev1.EventList
		if env.Client.List(ctx, &events, client.InNamespace(ns)) != nil {
			return false
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == session.Name && strings.Contains(e.Message, "Waiting for the session jobs of this session cluster to be deleted: orders") {
				return true
			}
		}
		return false
	})
	wait.Never(t, 2*time.Second, "the session cluster was deleted under another shard's session job", func() bool {
		jm := &appsv1.Deployment{}
		return env.Client.Get(ctx, jmKey, jm) != nil || jm.DeletionTimestamp != nil
	})
}

// TestSnapshotOfAnotherShardsJob: a FlinkStateSnapshot in shard a whose job is a FlinkDeployment
// of shard b. Instance a follows the reference to the API server and judges the job as it is
// (here: not running), instead of abandoning the snapshot for a FlinkDeployment "not found".
func TestSnapshotOfAnotherShardsJob(t *testing.T) {
	env := testEnv(t)
	ctx := context.Background()
	ns, opNS := env.NewNamespace(t, "shard-snapshot"), env.NewNamespace(t, "shard-snapshot-operator")
	app := sessionCluster(t, ns, "orders", map[string]string{"shard": "b"})
	app.Spec.Job = &flinkv1beta1.JobSpec{JarURI: "local:///opt/flink/examples/streaming/TopSpeedWindowing.jar", UpgradeMode: flinkv1beta1.UpgradeModeStateless}
	require.NoError(t, env.Client.Create(ctx, app))
	snap := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders-manual", Labels: map[string]string{"shard": "a"}},
		Spec: flinkv1beta1.FlinkStateSnapshotSpec{JobReference: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: app.Name},
			Savepoint: &flinkv1beta1.SavepointSpec{}}}
	require.NoError(t, env.Client.Create(ctx, snap))

	o := shardOptions(t, ns, opNS)
	o.labelSelector, o.leaderElectionID = "shard=a", "flink-operator-shard-a"
	shardInstance(t, o)
	got := &flinkv1beta1.FlinkStateSnapshot{}
	wait.For(t, 30*time.Second, "instance a judges the snapshot", func() bool {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(snap), got) == nil && got.Status.Error != ""
	}, func() string { return fmt.Sprintf("status %+v", got.Status) })
	assert.Equal(t, "the job of FlinkDeployment orders is not running", got.Status.Error)
}
