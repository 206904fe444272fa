package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// crashHarness runs one operator at a time and replaces it between the steps of an upgrade:
// each step ends by stopping the manager, and the next step starts a fresh one that knows only
// what the cluster and the resource's status say.
type crashHarness struct {
	t     *testing.T
	ns    string // the operators watch this namespace only
	flink *fakeflink.Server
	stop  func()
}

func (h *crashHarness) start() {
	h.t.Helper()
	_, h.stop = startStoppableOperator(h.t, h.flink, h.ns)
}

// step stops the running operator once cond holds, and starts a fresh one.
func (h *crashHarness) step(ns, name, what string, cond func(*flinkv1beta1.FlinkDeployment) bool) *flinkv1beta1.FlinkDeployment {
	h.t.Helper()
	d := waitFor(h.t, testEnv(h.t).Client, ns, name, what, cond)
	h.stop()
	h.t.Logf("step %q done; operator replaced", what)
	h.start()
	return d
}

func setParallelism(t *testing.T, c client.Client, ns, name string, p int32) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := get(t, c, ns, name)
		d.Spec.Job.Parallelism = p
		return c.Update(context.Background(), d)
	}))
}

func distinct(ids []string) int {
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	return len(seen)
}

// TestCrashSafeSavepointUpgrade runs a savepoint upgrade one step at a time with a new
// operator for every step, and a second spec change arriving while no operator runs. The job
// ends running the second change from the one savepoint taken when it was stopped: no
// savepoint is taken twice or lost, no spec change is dropped.
func TestCrashSafeSavepointUpgrade(t *testing.T) {
	t.Parallel()
	flink := fakeflink.New(t)
	c := testEnv(t).Client
	ctx := context.Background()
	ns, name := testEnv(t).NewNamespace(t, "crash-savepoint"), "job"
	k := &cluster{t: t, c: c, flink: flink}
	h := &crashHarness{t: t, ns: ns, flink: flink}
	h.start()

	require.NoError(t, c.Create(ctx, fixtures.NewDeployment(t, ns, name)))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	firstJob := d.Status.JobStatus.JobID
	k.run(ns, name, firstJob)
	waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
	flink.SetAutoComplete(false)

	// 1. The change is recorded as UPGRADING and the savepoint's trigger id before Flink sees it.
	setParallelism(t, c, ns, name, 4)
	d = h.step(ns, name, "savepoint triggered", func(d *flinkv1beta1.FlinkDeployment) bool {
		sp := d.Status.JobStatus.SavepointInfo
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationUpgrading && sp != nil && sp.TriggerID != "" &&
			len(flink.Stops()) > 0
	})
	trigger := d.Status.JobStatus.SavepointInfo.TriggerID
	assert.Contains(t, d.Status.ReconciliationStatus.LastReconciledSpec, `"parallelism":4`, "the change is recorded before anything is touched")

	// 2. A fresh operator follows the same savepoint instead of taking another one.
	wait.Never(t, time.Second, "a second savepoint was triggered", func() bool { return distinct(flink.Stops()) > 1 })
	flink.CompleteSavepoint(firstJob, trigger, "")
	d = h.step(ns, name, "savepoint recorded, old cluster going", func(d *flinkv1beta1.FlinkDeployment) bool {
		jm := k.jobManager(ns, name)
		return d.Status.JobStatus.UpgradeSavepointPath != "" && jm != nil && !jm.DeletionTimestamp.IsZero()
	})
	savepoint := d.Status.JobStatus.UpgradeSavepointPath
	assert.Equal(t, flink.SavepointLocation(firstJob, trigger), savepoint)

	// 3. Another change arrives while the operator is away; the old cluster finishes going.
	// The job is stopped already, so the newest spec replaces the recorded target: it is
	// deployed from the one savepoint, and no second restart is needed.
	h.stop()
	setParallelism(t, c, ns, name, 3)
	h.start()
	k.collect(ns, name)
	d = h.step(ns, name, "new cluster deployed from the savepoint", func(d *flinkv1beta1.FlinkDeployment) bool {
		jm := k.jobManager(ns, name)
		return jm != nil && jm.DeletionTimestamp.IsZero() && d.Status.JobStatus.JobID != firstJob &&
			d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
	})
	assert.Equal(t, savepoint, restorePath(t, c, ns, name), "restores the savepoint of the first change")
	assert.Contains(t, d.Status.ReconciliationStatus.LastReconciledSpec, `"parallelism":3`, "the change made while no operator ran is the one deployed")

	// 4. The upgraded job runs the latest spec.
	flink.SetAutoComplete(true)
	k.run(ns, name, d.Status.JobStatus.JobID)
	d = waitFor(t, c, ns, name, "STABLE at parallelism 3", lifecycleIs(flinkv1beta1.LifecycleStable))
	assert.Contains(t, d.Status.ReconciliationStatus.LastStableSpec, `"parallelism":3`, "the change made while no operator ran is applied")
	assert.Equal(t, 1, distinct(flink.Stops()), "one savepoint for the stop, none lost or repeated")
}

// TestCrashSafeLastStateUpgrade runs a last-state upgrade with Kubernetes HA one step at a time
// with a new operator for every step: the HA metadata is never deleted, no savepoint is taken,
// and the new cluster resumes the same job (same id) from it.
func TestCrashSafeLastStateUpgrade(t *testing.T) {
	t.Parallel()
	flink := fakeflink.New(t)
	c := testEnv(t).Client
	ctx := context.Background()
	ns, name := testEnv(t).NewNamespace(t, "crash-last-state"), "job"
	k := &cluster{t: t, c: c, flink: flink}
	h := &crashHarness{t: t, ns: ns, flink: flink}
	h.start()

	require.NoError(t, c.Create(ctx, haDeployment(t, ns, name, nil)))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	jobID := d.Status.JobStatus.JobID
	k.run(ns, name, jobID)
	waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
	haLeft := func() int { // the job's checkpoint pointers
		var list corev1.ConfigMapList
		require.NoError(t, c.List(ctx, &list, client.InNamespace(ns), native.HALabels(name)))
		n := 0
		for _, cm := range list.Items {
			if cm.Name != native.HAClusterConfigMapName(name) {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, haLeft())

	// 1. Recorded, and the old cluster's deletion started (HA metadata kept).
	setParallelism(t, c, ns, name, 4)
	h.step(ns, name, "old cluster going", func(d *flinkv1beta1.FlinkDeployment) bool {
		jm := k.jobManager(ns, name)
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationUpgrading && jm != nil && !jm.DeletionTimestamp.IsZero()
	})
	assert.Equal(t, 1, haLeft(), "HA metadata kept")

	// 2. The old cluster finishes going; a fresh operator deploys the new one from HA.
	k.collect(ns, name)
	d = h.step(ns, name, "new cluster deployed", func(d *flinkv1beta1.FlinkDeployment) bool {
		jm := k.jobManager(ns, name)
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && jm != nil && jm.DeletionTimestamp.IsZero()
	})
	assert.Equal(t, jobID, d.Status.JobStatus.JobID, "the same job resumes from HA")
	assert.Equal(t, flinkv1beta1.LastStateSentinelPath, restorePath(t, c, ns, name), "no savepoint path: HA metadata is the state")
	assert.Equal(t, 1, haLeft(), "HA metadata kept")
	assert.Empty(t, k.jobGraphs(ns, name), "the old job graph is not recovered: the new spec's graph is submitted")

	// 3. A fresh operator sees it running.
	k.run(ns, name, jobID)
	d = waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
	assert.Contains(t, d.Status.ReconciliationStatus.LastStableSpec, `"parallelism":4`)
	assert.Empty(t, flink.Stops(), "no savepoint taken")
	assert.Empty(t, flink.Triggered(), "no savepoint taken")
	assert.Equal(t, 1, haLeft())
}
