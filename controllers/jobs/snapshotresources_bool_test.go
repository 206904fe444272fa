package jobs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// TestSnapshotBooleanOptionsReadAsFlinkDoes: the boolean options of snapshot resources are read
// as Flink's Configuration reads a boolean (ConfigurationUtils.convertToBoolean: true or false
// in any letter case, nothing around it), and as admission checks them: a value admission
// refuses (" true ") is the option's default, never read one way when the savepoint resource
// is created and another way by the registry.
func TestSnapshotBooleanOptionsReadAsFlinkDoes(t *testing.T) {
	dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orders"}}
	for _, tc := range []struct {
		raw                         string
		dispose, resources, cleanup bool
		refused                     bool
	}{
		{raw: "true", dispose: true, resources: true, cleanup: true},
		{raw: "TRUE", dispose: true, resources: true, cleanup: true},
		{raw: "False", dispose: false, resources: false, cleanup: false},
		// Not booleans to Flink: admission refuses them, and each option reads as its default.
		{raw: " true ", dispose: false, resources: true, cleanup: true, refused: true},
		{raw: " false ", dispose: false, resources: true, cleanup: true, refused: true},
		{raw: "yes", dispose: false, resources: true, cleanup: true, refused: true},
	} {
		conf := flinkconf.Config{
			options.DisposeOnDelete.Key:   tc.raw,
			options.SnapshotResources.Key: tc.raw,
			options.SavepointCleanup.Key:  tc.raw,
		}
		j := JobSnapshots{Owner: dep, Kind: flinkv1beta1.JobKindFlinkDeployment, Conf: conf}
		snap := newSnapshot(j, false, flinkv1beta1.SnapshotTriggerManual, "1")
		assert.Equal(t, tc.dispose, *snap.Spec.Savepoint.DisposeOnDelete, "dispose-on-delete %q on the savepoint resource", tc.raw)
		assert.Equal(t, tc.dispose, options.DisposeOnDelete.Get(conf), "dispose-on-delete %q in the registry", tc.raw)
		assert.Equal(t, tc.resources, SnapshotResourcesEnabled(conf), "snapshot.resource.enabled %q", tc.raw)
		assert.Equal(t, tc.cleanup, savepointCleanupEnabled(conf), "savepoint.cleanup.enabled %q", tc.raw)
		for _, o := range []options.Option{options.DisposeOnDelete.Option, options.SnapshotResources.Option, options.SavepointCleanup.Option} {
			assert.Equal(t, tc.refused, o.Check(conf) != nil, "admission of %s %q", o.Key, tc.raw)
		}
	}
}
