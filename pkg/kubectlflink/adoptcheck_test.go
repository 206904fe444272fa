package kubectlflink

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// upstreamCapture reads what the Apache operator wrote while managing real Flink
// (controllers/testdata/upstream): its FlinkDeployments, FlinkSessionJobs and ConfigMaps.
func upstreamCapture(t *testing.T, path string) []client.Object {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "controllers", "testdata", "upstream", path))
	require.NoError(t, err)
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var objs []client.Object
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		var meta metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal(doc, &meta))
		var obj client.Object
		switch meta.Kind {
		case "FlinkDeployment":
			obj = &flinkv1beta1.FlinkDeployment{}
		case "FlinkSessionJob":
			obj = &flinkv1beta1.FlinkSessionJob{}
		case "ConfigMap":
			obj = &corev1.ConfigMap{}
		default:
			continue
		}
		require.NoError(t, yaml.Unmarshal(doc, obj))
		if d, ok := obj.(*flinkv1beta1.FlinkDeployment); ok && d.Spec.JobManager != nil && d.Spec.JobManager.Replicas == 0 {
			// The API server applies the CRD's default (replicas: 1) to what it returns; the
			// capture was trimmed of it and the fake client has no CRD.
			d.Spec.JobManager.Replicas = 1
		}
		objs = append(objs, obj)
	}
	require.NotEmpty(t, objs)
	return objs
}

// readOnly fails the test on any write: adopt-check is a dry run.
func readOnly(t *testing.T) interceptor.Funcs {
	refuse := func(what string) error {
		t.Errorf("adopt-check wrote: %s", what)
		return nil
	}
	return interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return refuse("create")
		},
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			return refuse("update")
		},
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return refuse("patch")
		},
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
			return refuse("delete")
		},
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return refuse("status update")
		},
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return refuse("status patch")
		},
	}
}

func deploymentOf(objs []client.Object) *flinkv1beta1.FlinkDeployment {
	for _, o := range objs {
		if d, ok := o.(*flinkv1beta1.FlinkDeployment); ok {
			return d
		}
	}
	return nil
}

// TestAdoptCheckOnWhatTheApacheOperatorWrote: on the Apache operator's own resources,
// adopt-check says what the reconciler's functions decide: an unchanged running application
// and session job are kept (no restart, job ids kept); a spec changed while no operator ran is
// upgraded as jobs.PlanUpgrade decides for its upgrade mode (stop-with-savepoint; last-state
// through the HA metadata the capture holds); a resource nothing was recorded for is deployed,
// unless suspended; an upgrade the Apache operator left unfinished goes on. Nothing is written.
func TestAdoptCheckOnWhatTheApacheOperatorWrote(t *testing.T) {
	savepointApp := upstreamCapture(t, "s2-savepoint/01-running-stable.yaml")
	lastStateApp := upstreamCapture(t, "s1-laststate/01-running-stable.yaml")
	session := upstreamCapture(t, "s3-session/01-running.yaml")

	t.Run("unchanged resources are kept", func(t *testing.T) {
		objs := append(append(append([]client.Object{}, savepointApp...), lastStateApp...), session...)
		out := mustRun(t, newFakeCluster(t, readOnly(t), objs...), "", "adopt-check", "-A")
		t.Log("\n" + out)
		for _, d := range []*flinkv1beta1.FlinkDeployment{deploymentOf(savepointApp), deploymentOf(lastStateApp)} {
			assert.Contains(t, out, "flinkdeployment "+d.Namespace+"/"+d.Name+": KEEP\n  why: the spec is the one recorded as deployed: nothing is restarted or redeployed; job "+
				d.Status.JobStatus.JobID+" (RUNNING) is kept")
		}
		assert.Regexp(t, `flinksessionjob \S+: KEEP\n  why: the spec is the one recorded as submitted: job [0-9a-f]{32} \(RUNNING\) is kept`, out)
		assert.Contains(t, out, "Dry run over all namespaces: nothing was written.")
	})

	t.Run("a savepoint application changed while no operator ran", func(t *testing.T) {
		d := deploymentOf(savepointApp)
		d.Spec.Job.Parallelism = 2
		verdicts, err := adoptCheck(context.Background(), newFakeCluster(t, readOnly(t), savepointApp...).client, d.Namespace)
		require.NoError(t, err)
		require.Len(t, verdicts, 1)
		assert.Equal(t, ActionUpgrade, verdicts[0].Action)
		assert.Contains(t, verdicts[0].Why, "the spec differs from the one recorded as deployed (upgradeMode savepoint): the job stops with a savepoint, then the new job restores")
	})

	t.Run("a last-state application changed while no operator ran", func(t *testing.T) {
		d := deploymentOf(lastStateApp)
		d.Spec.Job.Parallelism = 2
		verdicts, err := adoptCheck(context.Background(), newFakeCluster(t, readOnly(t), lastStateApp...).client, d.Namespace)
		require.NoError(t, err)
		require.Len(t, verdicts, 1)
		assert.Equal(t, ActionUpgrade, verdicts[0].Action)
		assert.Contains(t, verdicts[0].Why, "(upgradeMode last-state): the cluster is deleted, its HA metadata kept, then the new job restores from its HA metadata with the same job id")

		// Without its HA metadata the same change cannot restore from it.
		withoutHA := []client.Object{d}
		verdicts, err = adoptCheck(context.Background(), newFakeCluster(t, readOnly(t), withoutHA...).client, d.Namespace)
		require.NoError(t, err)
		assert.NotContains(t, verdicts[0].Why, "restores from its HA metadata")
	})

	t.Run("nothing recorded, suspended, or an upgrade left unfinished", func(t *testing.T) {
		fresh := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fresh"}}
		fresh.Spec.Job = &flinkv1beta1.JobSpec{InitialSavepointPath: "file:///sp/1"}
		suspended := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "suspended"}}
		suspended.Spec.Job = &flinkv1beta1.JobSpec{State: flinkv1beta1.JobStateSuspended}
		upgrading := deploymentOf(upstreamCapture(t, "s2-savepoint/01-running-stable.yaml"))
		upgrading.Namespace = "ns"
		upgrading.Status.ReconciliationStatus.State = flinkv1beta1.ReconciliationUpgrading
		verdicts, err := adoptCheck(context.Background(), newFakeCluster(t, readOnly(t), fresh, suspended, upgrading).client, "ns")
		require.NoError(t, err)
		byName := map[string]Verdict{}
		for _, v := range verdicts {
			byName[v.Name] = v
		}
		assert.Equal(t, ActionDeploy, byName["fresh"].Action)
		assert.Contains(t, byName["fresh"].Why, "restoring initialSavepointPath file:///sp/1")
		assert.Equal(t, ActionNothing, byName["suspended"].Action)
		assert.Equal(t, ActionContinueUpgrade, byName[upgrading.Name].Action)
	})
}

// TestAdoptCheckNotes: the observed generation the Apache operator 1.7 kept only in
// lastReconciledSpec, a trigger nonce not yet taken, and upstream options without effect here
// are noted.
func TestAdoptCheckNotes(t *testing.T) {
	objs := upstreamCapture(t, "apache-1.7.0-running.yaml")
	d := deploymentOf(objs)
	d.Status.ObservedGeneration = 0
	nonce := int64(7)
	d.Spec.Job.SavepointTriggerNonce = &nonce
	conf, err := d.Spec.FlinkConfiguration.Flatten()
	require.NoError(t, err)
	conf["kubernetes.operator.health.probe.enabled"] = "true"
	d.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
	verdicts, err := adoptCheck(context.Background(), newFakeCluster(t, readOnly(t), objs...).client, d.Namespace)
	require.NoError(t, err)
	require.NotEmpty(t, verdicts)
	v := verdicts[0]
	t.Logf("%+v", v)
	require.Equal(t, KindDeployment, v.Kind)
	assert.Equal(t, ActionKeep, v.Action)
	assert.Contains(t, v.Notes, "status.observedGeneration is taken from lastReconciledSpec (generation 2)")
	assert.Contains(t, v.Notes, "spec.job.savepointTriggerNonce is new: a manual savepoint is taken")
	assert.True(t, slices.ContainsFunc(v.Notes, func(n string) bool { return strings.Contains(n, "kubernetes.operator.health.probe.enabled") }),
		"the unhonoured option is noted: %v", v.Notes)
}
