package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/shard"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
)

// TestSnapshotsLandInTheOwnersShard: an operator instance serving the shard shard=a (label
// selector) takes a savepoint of a FlinkDeployment labelled shard=a. The FlinkStateSnapshot it
// creates carries shard=a, so the same instance's caches hold it (it takes and trims it);
// without the label it would be in no instance's shard and never be taken. The deployment's
// other labels (an Argo CD instance label) are not copied.
func TestSnapshotsLandInTheOwnersShard(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns := testEnv(t).NewNamespace(t, "shard-snap")
	flink := fakeflink.New(t)
	k := &cluster{t: t, c: c, flink: flink}
	sel, err := shard.Parse("shard=a")
	require.NoError(t, err)
	startManager(t, managerOptions{namespaces: []string{ns}, setup: func(mgr ctrl.Manager, rec record.EventRecorder) error {
		return (&flinkdeployment.FlinkDeploymentReconciler{
			Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
			Flink:     &clients.Factory{URLTemplate: flink.URL, Timeout: 2 * time.Second},
			Validator: &validation.Validator{}, Intervals: fixtures.FastIntervals(), Shard: sel,
		}).SetupWithManager(mgr)
	}})

	const name = "orders"
	dep := fixtures.NewDeployment(t, ns, name)
	dep.Labels = map[string]string{"shard": "a", "app.kubernetes.io/instance": "argo-orders"}
	stableDeployment(t, c, k, dep)
	snap := requestSavepoint(t, c, ns, name, 1)
	assert.Equal(t, "a", snap.Labels["shard"], "the snapshot is in its deployment's shard")
	assert.True(t, sel.Matches(labels.Set(snap.Labels)))
	assert.NotContains(t, snap.Labels, "app.kubernetes.io/instance", "only the labels the selector looks at are copied")
	assert.Equal(t, "MANUAL", snap.Labels[jobs.LabelSnapshotTrigger], "upstream's snapshot labels stay")
	assert.Equal(t, name, snap.Labels[jobs.LabelJobReferenceName])
}
