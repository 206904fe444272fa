package crd

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// TestUpstreamSchemaReadsThisOperatorsStatus is the migration guide's way back at the API
// server: with upstream's CRDs installed again (helm install of the Apache operator), a
// resource whose status this operator wrote, with everything it adds (conditions Ready,
// Progressing, Reconciling, Degraded, Stalled with their typed reasons, the operations history,
// the autoscaler's decision in status.scaling), is stored and read back
// as upstream's schema dictates: what upstream's schema knows is kept unchanged, the rest is
// pruned, and nothing is refused. What the Apache operator then reads is its own fields: its
// status classes ignore unknown properties (@JsonIgnoreProperties(ignoreUnknown = true) on
// FlinkDeploymentStatus, FlinkSessionJobStatus, FlinkStateSnapshotStatus,
// FlinkBlueGreenDeploymentStatus, JobStatus in flink-kubernetes-operator-api's
// org.apache.flink.kubernetes.operator.api.status), and its FlinkDeploymentStatus
// (setRunningConditionIfRequired) replaces the conditions with its own Running one.
func TestUpstreamSchemaReadsThisOperatorsStatus(t *testing.T) {
	ctx := context.Background()
	up := kubeenv.Start(t, kubeenv.Options{CRDDirs: []string{filepath.Join("test", "crd", "testdata", "upstream", "crds")}})
	const ns = "way-back"
	require.NoError(t, up.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	common := flinkv1beta1.CommonStatus{
		JobStatus: flinkv1beta1.JobStatus{JobName: "orders", JobID: "0123456789abcdef0123456789abcdef", State: flinkv1beta1.JobStatusRestarting,
			StartTime: "1764990000000", UpdateTime: "1764990100000",
			SavepointInfo: &flinkv1beta1.SavepointInfo{LastSavepoint: &flinkv1beta1.Savepoint{TimeStamp: 1764990000000,
				Location: "s3://b/savepoints/savepoint-1", TriggerType: flinkv1beta1.SnapshotTriggerUpgrade}}},
		Error:              flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionSnapshot, flinkv1beta1.ErrorReasonSnapshotFailed, "Savepoint failed: disk full"),
		ObservedGeneration: 1, LifecycleState: flinkv1beta1.LifecycleStable,
		ReconciliationStatus: flinkv1beta1.ReconciliationStatus{ReconciliationTimestamp: 1764990000000, LastReconciledSpec: `{"spec":{}}`,
			LastStableSpec: `{"spec":{}}`, State: flinkv1beta1.ReconciliationDeployed},
		Operations: []flinkv1beta1.Operation{{Type: flinkv1beta1.OperationUpgrade, Generation: 1, StartedAt: metav1.Unix(1764990000, 0),
			EndedAt: ptr.To(metav1.Unix(1764990060, 0)), Outcome: flinkv1beta1.OperationSucceeded, Snapshot: "s3://b/savepoints/savepoint-1"}},
		Scaling: &flinkv1beta1.ScalingDecision{EvaluatedAt: metav1.Unix(1764990120, 0), Generation: 1, Outcome: flinkv1beta1.ScalingHeld,
			Message: "Held: a scale-down waits for job.autoscaler.scale-down.interval: busy map 4 -> 2 (bound by MaxFactor, ScaleDownInterval)",
			Vertices: []flinkv1beta1.VertexScaling{
				{VertexID: "bc764cd8ddf7a0cff126f51c16239658", Name: "Source: orders", CurrentParallelism: 2, NewParallelism: 2,
					BusyRatio: "0.10", TrueProcessingRate: "Infinity", TargetRate: "1000.0", Lag: "12000", ExpectedCatchUp: "45s"},
				{VertexID: "0a448493b4782967b150582570326227", Name: "busy map", CurrentParallelism: 4, NewParallelism: 2,
					BusyRatio: "0.08", TrueProcessingRate: "1520.4", TargetRate: "1000.0",
					BoundBy: []flinkv1beta1.ScalingBound{flinkv1beta1.ScalingBoundMaxFactor, flinkv1beta1.ScalingBoundScaleDownInterval}},
			}},
	}
	withConditions := func(conds []metav1.Condition) []metav1.Condition {
		var out []metav1.Condition
		for _, c := range conds {
			meta.SetStatusCondition(&out, c)
		}
		return out
	}
	dep := &flinkv1beta1.FlinkDeployment{Status: flinkv1beta1.FlinkDeploymentStatus{CommonStatus: common,
		JobManagerDeploymentStatus: flinkv1beta1.JobManagerReady, ClusterInfo: map[string]string{"flink-version": "1.20.3"},
		TaskManager: &flinkv1beta1.TaskManagerInfo{LabelSelector: "component=taskmanager,app=dep", Replicas: 1},
		Rescale:     &flinkv1beta1.Rescale{Generation: 1, RequestedAt: metav1.Unix(1764990000, 0), From: "a:2,b:2", To: "a:4,b:1", Reported: "a:2,b:1", TimedOut: true}}}
	dep.Status.Conditions = withConditions(lifecycle.Conditions(&dep.Status, true, 1, flinkv1beta1.JobStateRunning))
	job := &flinkv1beta1.FlinkSessionJob{Status: flinkv1beta1.FlinkSessionJobStatus{CommonStatus: common}}
	job.Status.Conditions = withConditions(lifecycle.SessionJobConditions(&job.Status.CommonStatus, 1, flinkv1beta1.JobStateRunning))
	snap := &flinkv1beta1.FlinkStateSnapshot{Spec: flinkv1beta1.FlinkStateSnapshotSpec{Savepoint: &flinkv1beta1.SavepointSpec{}},
		Status: flinkv1beta1.FlinkStateSnapshotStatus{State: flinkv1beta1.SnapshotTriggerPending, Failures: 2, Error: "disk full",
			TriggerTimestamp: "2026-12-06T00:00:00Z"}}
	snap.Generation = 1
	snap.Status.Conditions = withConditions(lifecycle.SnapshotConditions(snap))
	bg := &flinkv1beta1.FlinkBlueGreenDeployment{Status: flinkv1beta1.FlinkBlueGreenDeploymentStatus{
		JobStatus: common.JobStatus, BlueGreenState: flinkv1beta1.BlueGreenActiveBlue, Error: "Aborting deployment 'bg-green'"}}
	bgView := lifecycle.BlueGreenView{State: bg.Status.BlueGreenState, Error: bg.Status.Error}
	bg.Status.Conditions = withConditions([]metav1.Condition{lifecycle.BlueGreenProgressing(bgView, 1), lifecycle.BlueGreenDegraded(false, bg.Status.Error, nil, 1)})
	bg.Status.Operations = []flinkv1beta1.Operation{{Type: flinkv1beta1.OperationUpgrade, Generation: 1, StartedAt: metav1.Unix(1764990000, 0),
		EndedAt: ptr.To(metav1.Unix(1764990600, 0)), Outcome: flinkv1beta1.OperationFailed, Snapshot: "s3://b/savepoints/savepoint-1",
		Message: "Aborting deployment 'bg-green'"}}

	for _, tt := range []struct {
		doc    string
		status any
	}{
		{validDeployment, dep.Status}, {validSessionJob, job.Status}, {validSnapshot, snap.Status}, {validBlueGreen, bg.Status},
	} {
		obj := mustObject(t, tt.doc)
		t.Run(obj.GetKind(), func(t *testing.T) {
			obj.SetNamespace(ns)
			require.NoError(t, up.Client.Create(ctx, obj), "upstream's schema accepts the spec")
			written, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tt.status)
			require.NoError(t, err)
			require.NotEmpty(t, written["conditions"], "this operator's conditions are written")
			if obj.GetKind() != "FlinkStateSnapshot" { // a snapshot is one operation: its own status is its history
				require.NotEmpty(t, written["operations"], "and its history of operations")
			}
			if obj.GetKind() == "FlinkDeployment" {
				require.NotEmpty(t, written["rescale"], "and the rescale in flight")
			}
			if obj.GetKind() == "FlinkDeployment" || obj.GetKind() == "FlinkSessionJob" {
				require.NotEmpty(t, written["scaling"], "and the autoscaler's decision explained")
			}
			require.NoError(t, unstructured.SetNestedMap(obj.Object, written, "status"))
			require.NoError(t, up.Client.Status().Update(ctx, obj), "upstream's schema accepts this operator's status")

			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			require.NoError(t, up.Client.Get(ctx, client.ObjectKeyFromObject(obj), got))
			schema := upstreamStatusSchema(t, obj.GetKind())
			want := prune(written, schema)
			assert.Equal(t, want, got.Object["status"], "read back as upstream's schema prunes it")
			assert.NotContains(t, got.Object["status"], "scaling", "upstream's schema prunes status.scaling")
			for field := range schema.Properties {
				if _, ok := written[field]; ok {
					assert.Contains(t, got.Object["status"], field, "upstream's field %s is kept", field)
				}
			}
			if _, known := schema.Properties["conditions"]; known {
				conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
				assert.Len(t, conds, len(written["conditions"].([]any)), "upstream's schema has conditions: all of ours are kept")
			} else {
				assert.NotContains(t, got.Object["status"], "conditions", "upstream's schema has no conditions: pruned")
			}
		})
	}
}

// upstreamStatusSchema is the status schema of upstream's CRD of the kind.
func upstreamStatusSchema(t *testing.T, kind string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, k := range kinds {
		if k.kind == kind {
			crd := readCRD(t, filepath.Join("testdata", "upstream", "crds", k.upstream))
			s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
			return &s
		}
	}
	t.Fatalf("no upstream CRD of %s", kind)
	return nil
}

// prune is what a structural schema leaves of a value, as the API server prunes unknown fields:
// properties it does not name go, map values follow additionalProperties, list items follow items.
func prune(v any, s *apiextensionsv1.JSONSchemaProps) any {
	if s == nil || (s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields) {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			if p, ok := s.Properties[k]; ok {
				out[k] = prune(val, &p)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				out[k] = prune(val, s.AdditionalProperties.Schema)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Allows {
				out[k] = val
			}
		}
		return out
	case []any:
		if s.Items == nil || s.Items.Schema == nil {
			return x
		}
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = prune(item, s.Items.Schema)
		}
		return out
	}
	return v
}
