package flinkbluegreendeployment

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// TestBlueGreenTimestamps: upstream resets its markers to the epoch, not to empty; an adopted
// status with them has no grace period or readiness running.
func TestBlueGreenTimestamps(t *testing.T) {
	t.Parallel()
	for _, unset := range []string{"", "1970-01-01T00:00:00Z", "not a time"} {
		_, ok := parseTimestamp(unset)
		assert.False(t, ok, unset)
	}
	at, ok := parseTimestamp("2026-11-25T16:00:00.5Z")
	assert.True(t, ok)
	assert.Equal(t, int64(1795622400), at.Unix())
}

// refusingCreate refuses every create with an error that quotes the object's configuration,
// as an admission webhook or the API server may.
type refusingCreate struct{ client.Client }

func (c refusingCreate) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	if d, ok := obj.(*flinkv1beta1.FlinkDeployment); ok {
		conf, _ := d.Spec.FlinkConfiguration.Flatten()
		return fmt.Errorf("admission webhook denied %s: s3.secret-key=%s", d.Name, conf["s3.secret-key"])
	}
	return errors.New("refused")
}

// TestBlueGreenMasksTemplateSecrets: the blue/green reconciler is wired as the others: the
// secrets of its template's Flink configuration are masked in the errors it returns (logged
// by controller-runtime) and the events it records.
func TestBlueGreenMasksTemplateSecrets(t *testing.T) {
	t.Parallel()
	bg := fixtures.NewBlueGreen(t, "ns", "orders", "10m")
	bg.Spec.Template.Spec.FlinkConfiguration = flinkv1beta1.FlinkConfiguration{}
	require.NoError(t, yaml.Unmarshal([]byte(`{s3.secret-key: hunter2-secret, state.savepoints.dir: "file:///sp"}`), &bg.Spec.Template.Spec.FlinkConfiguration))
	base := fake.NewClientBuilder().WithScheme(kubeenv.Scheme()).WithObjects(bg).WithStatusSubresource(bg).Build()
	rec := record.NewFakeRecorder(100)
	r := &FlinkBlueGreenDeploymentReconciler{Client: refusingCreate{base}, Scheme: kubeenv.Scheme(), Recorder: rec}

	_, err := blueGreenAsWired(r).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(bg)})
	require.Error(t, err, "the child could not be created")
	assert.Contains(t, err.Error(), "admission webhook denied")
	assert.NotContains(t, err.Error(), "hunter2-secret", "the returned error masks the template's secret")
	close(rec.Events)
	for e := range rec.Events {
		assert.NotContains(t, e, "hunter2-secret", "events mask the template's secret")
	}
}

// blueGreenAsWired is the blue/green reconciler as SetupWithManager registers it.
func blueGreenAsWired(r *FlinkBlueGreenDeploymentReconciler) reconcile.Reconciler {
	return r.redacting()
}
