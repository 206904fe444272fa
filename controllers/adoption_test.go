package controllers

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/test/fakeflink"
)

// loadUpstreamCapture reads a capture of what the Apache operator wrote (testdata/upstream):
// the FlinkDeployment with its status, and the ConfigMaps beside it.
func loadUpstreamCapture(t *testing.T, path string) (*flinkv1beta1.FlinkDeployment, []corev1.ConfigMap) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var dep *flinkv1beta1.FlinkDeployment
	var cms []corev1.ConfigMap
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		var kind struct{ Kind string }
		require.NoError(t, yaml.Unmarshal(doc, &kind))
		switch kind.Kind {
		case "FlinkDeployment":
			dep = &flinkv1beta1.FlinkDeployment{}
			require.NoError(t, yaml.Unmarshal(doc, dep))
		case "ConfigMap":
			var cm corev1.ConfigMap
			require.NoError(t, yaml.Unmarshal(doc, &cm))
			cms = append(cms, cm)
		}
	}
	require.NotNil(t, dep)
	return dep, cms
}

// adopt creates what the Apache operator left (its status included) before this operator
// starts, in a fresh namespace (the capture's own name could be taken by an earlier run on the
// shared control plane), and returns that namespace.
func adopt(t *testing.T, c client.Client, dep *flinkv1beta1.FlinkDeployment, cms []corev1.ConfigMap) string {
	t.Helper()
	ctx := context.Background()
	dep.Namespace = testEnv(t).NewNamespace(t, dep.Namespace)
	for i := range cms {
		cms[i].Namespace = dep.Namespace
		require.NoError(t, c.Create(ctx, &cms[i]))
	}
	status := dep.Status
	dep.Finalizers = []string{flinkdeployment.DeploymentFinalizer}
	require.NoError(t, c.Create(ctx, dep))
	dep.Status = status
	require.NoError(t, c.Status().Update(ctx, dep))
	return dep.Namespace
}

// TestAdoptsWhatTheApacheOperatorWrote: a platform moves its resources over from the Apache
// operator. Its status conventions are understood: the last-state sentinel
// in upgradeSavepointPath means "restore from HA metadata", never a path.
func TestAdoptsWhatTheApacheOperatorWrote(t *testing.T) {
	t.Parallel()
	flink := fakeflink.New(t)
	c := testEnv(t).Client
	k := &cluster{t: t, c: c, flink: flink}

	dep, cms := loadUpstreamCapture(t, "testdata/upstream/suspended-last-state.yaml")
	name, jobID := dep.Name, dep.Status.JobStatus.JobID
	require.Equal(t, "KUBERNETES_OPERATOR_LAST_STATE", dep.Status.JobStatus.UpgradeSavepointPath)
	ns := adopt(t, c, dep, cms)
	startOperator(t, flink, ns)

	waitFor(t, c, ns, name, "the adopted status observed", func(d *flinkv1beta1.FlinkDeployment) bool {
		cond := meta.FindStatusCondition(d.Status.Conditions, "Reconciling")
		return cond != nil && cond.ObservedGeneration == d.Generation && d.Status.LifecycleState == flinkv1beta1.LifecycleSuspended
	})
	assert.Nil(t, k.jobManager(ns, name+"-jobmanager"), "a suspended job stays suspended")

	update(t, c, ns, name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.State = flinkv1beta1.JobStateRunning })
	d := waitFor(t, c, ns, name, "resumed", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && k.jobManager(ns, name) != nil
	})
	assert.Equal(t, jobID, d.Status.JobStatus.JobID, "resumed through HA: the same job id")
	assert.Equal(t, flinkv1beta1.LastStateSentinelPath, restorePath(t, c, ns, name), "no savepoint path: Flink restores from its HA metadata")
	assert.Empty(t, k.jobGraphs(ns, name), "the job graph upstream left is removed: the resumed spec's graph is submitted")
	assert.Contains(t, haConfigMaps(t, c, ns, name), name+"-"+jobID+"-config-map", "the checkpoint pointers are kept")
}

// TestAdoptsALegacySavepoint: a savepoint-mode job the Apache operator suspended, whose status
// names its savepoint only in the legacy savepointInfo.lastSavepoint, resumes from it (as
// upstream's restoreJob does) instead of asking for a manual restore.
func TestAdoptsALegacySavepoint(t *testing.T) {
	t.Parallel()
	flink := fakeflink.New(t)
	c := testEnv(t).Client
	k := &cluster{t: t, c: c, flink: flink}

	dep, _ := loadUpstreamCapture(t, "testdata/upstream/suspended-last-state.yaml")
	name := dep.Name
	dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeSavepoint
	const legacy = "file:/flink-data/savepoints/savepoint-aed9d9-legacy"
	dep.Status.JobStatus.UpgradeSavepointPath = ""
	dep.Status.JobStatus.SavepointInfo = &flinkv1beta1.SavepointInfo{LastSavepoint: &flinkv1beta1.Savepoint{Location: legacy,
		TriggerType: flinkv1beta1.SnapshotTriggerUpgrade, TimeStamp: 1795452000000}}
	ns := adopt(t, c, dep, nil) // no HA metadata left
	startOperator(t, flink, ns)

	update(t, c, ns, name, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.State = flinkv1beta1.JobStateRunning })
	waitFor(t, c, ns, name, "resumed", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && k.jobManager(ns, name) != nil
	})
	assert.Equal(t, legacy, restorePath(t, c, ns, name), "restored from the legacy lastSavepoint")
}
