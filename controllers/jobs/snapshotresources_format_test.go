package jobs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// TestSnapshotResourceSavepointFormat: the savepoint resources the operator creates (manual,
// periodic, upgrade) carry kubernetes.operator.savepoint.format.type, as upstream's
// AbstractJobReconciler.triggerSnapshotIfNeeded passes it to
// FlinkStateSnapshotUtils.createSavepointResource; CANONICAL when unset.
func TestSnapshotResourceSavepointFormat(t *testing.T) {
	dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orders"}}
	for _, tc := range []struct {
		conf map[string]string
		want flinkv1beta1.SavepointFormatType
	}{
		{nil, flinkv1beta1.SavepointFormatCanonical},
		{map[string]string{"kubernetes.operator.savepoint.format.type": "NATIVE"}, flinkv1beta1.SavepointFormatNative},
		{map[string]string{"kubernetes.operator.savepoint.format.type": "native"}, flinkv1beta1.SavepointFormatNative},
		{map[string]string{"kubernetes.operator.savepoint.format.type": "CANONICAL"}, flinkv1beta1.SavepointFormatCanonical},
	} {
		j := JobSnapshots{Owner: dep, Kind: flinkv1beta1.JobKindFlinkDeployment, Conf: flinkconf.Config(tc.conf)}
		for _, trigger := range []flinkv1beta1.SnapshotTriggerType{flinkv1beta1.SnapshotTriggerManual, flinkv1beta1.SnapshotTriggerPeriodic, flinkv1beta1.SnapshotTriggerUpgrade} {
			snap := newSnapshot(j, false, trigger, "1")
			assert.Equal(t, tc.want, snap.Spec.Savepoint.FormatType, "%s savepoint with %v", trigger, tc.conf)
		}
	}
}
