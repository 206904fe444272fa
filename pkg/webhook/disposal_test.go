package webhook

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// TestAlreadyExistsSnapshotDisposalWarning: recording an existing savepoint
// keeps upstream's default (deleting the record disposes of the data) but the webhook warns
// about it, unless disposeOnDelete: false says to keep the data.
func TestAlreadyExistsSnapshotDisposalWarning(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, flinkv1beta1.AddToScheme(scheme))
	v := &snapshotValidator{v: &validation.Validator{}, reader: fake.NewClientBuilder().WithScheme(scheme).Build()}
	snapshot := func(savepoint string) *flinkv1beta1.FlinkStateSnapshot {
		snap := &flinkv1beta1.FlinkStateSnapshot{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: imported, namespace: team-a}
spec: {savepoint: `+savepoint+`}
`), snap))
		return snap
	}
	const want = "spec.savepoint.disposeOnDelete is true (the default): deleting this FlinkStateSnapshot disposes of the existing " +
		"savepoint s3://bucket/savepoints/savepoint-1; set spec.savepoint.disposeOnDelete: false to keep the data"
	for _, tc := range []struct {
		name, savepoint string
		want            []string
	}{
		// The API server has filled in the schema's default before admission.
		{"alreadyExists, disposeOnDelete defaulted", `{alreadyExists: true, disposeOnDelete: true, path: "s3://bucket/savepoints/savepoint-1"}`, []string{want}},
		{"alreadyExists, disposeOnDelete unset", `{alreadyExists: true, path: "s3://bucket/savepoints/savepoint-1"}`, []string{want}},
		{"alreadyExists, keeping the data", `{alreadyExists: true, disposeOnDelete: false, path: "s3://bucket/savepoints/savepoint-1"}`, nil},
		{"a savepoint the operator takes", `{disposeOnDelete: true}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(tc.savepoint)
			imported := snap.Spec.Savepoint.AlreadyExists != nil
			if !imported {
				snap.Spec.JobReference = &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: "orders"}
			}
			warnings, err := v.ValidateCreate(context.Background(), snap)
			if imported {
				require.NoError(t, err, "a valid record")
			}
			assert.Equal(t, tc.want, []string(warnings))
			warnings, _ = v.ValidateUpdate(context.Background(), snap, snap)
			assert.Equal(t, tc.want, []string(warnings))
		})
	}
}
