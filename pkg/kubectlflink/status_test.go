package kubectlflink

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(testNow.Add(-d)) }

// runningDeployment is an application the operator runs: conditions, a checkpoint, a
// savepoint, operations and a rescale in flight.
func runningDeployment() *flinkv1beta1.FlinkDeployment {
	d := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", Generation: 3}}
	d.Spec.FlinkVersion = "v1_20"
	d.Spec.Job = &flinkv1beta1.JobSpec{JarURI: "local:///job.jar", UpgradeMode: flinkv1beta1.UpgradeModeSavepoint}
	st := &d.Status
	st.ObservedGeneration = 3
	st.LifecycleState = flinkv1beta1.LifecycleState("STABLE")
	st.ReconciliationStatus.State = flinkv1beta1.ReconciliationDeployed
	st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	st.JobStatus = flinkv1beta1.JobStatus{JobID: "0123456789abcdef0123456789abcdef", State: flinkv1beta1.JobStatusRunning, JobName: "TopSpeed",
		CheckpointInfo: &flinkv1beta1.CheckpointInfo{LastCheckpoint: &flinkv1beta1.Checkpoint{TimeStamp: testNow.Add(-30 * time.Second).UnixMilli()}},
		SavepointInfo:  &flinkv1beta1.SavepointInfo{LastSavepoint: &flinkv1beta1.Savepoint{TimeStamp: testNow.Add(-2 * time.Hour).UnixMilli(), Location: "file:///sp/old"}}}
	st.Conditions = []metav1.Condition{
		{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "Healthy", LastTransitionTime: ago(time.Hour)},
		{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Running", Message: "the job runs\nas deployed", LastTransitionTime: ago(5 * time.Minute)},
		{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Scaling", Message: "rescaling in place", LastTransitionTime: ago(time.Minute)},
	}
	ended := ago(4 * time.Minute)
	st.Operations = []flinkv1beta1.Operation{
		{Type: flinkv1beta1.OperationDeploy, Generation: 1, StartedAt: ago(3 * time.Hour), EndedAt: &ended, Outcome: flinkv1beta1.OperationSucceeded},
		{Type: flinkv1beta1.OperationUpgrade, Generation: 2, StartedAt: ago(6 * time.Minute), EndedAt: &ended, Outcome: flinkv1beta1.OperationSucceeded, Snapshot: "file:///sp/upgrade-1"},
		{Type: flinkv1beta1.OperationScale, Generation: 3, StartedAt: ago(time.Minute), Outcome: flinkv1beta1.OperationInProgress, Message: "asked Flink for 4"},
	}
	st.Rescale = &flinkv1beta1.Rescale{Generation: 3, RequestedAt: ago(time.Minute), From: "v1:2", To: "v1:4", Reported: "v1:3"}
	return d
}

func savepointSnapshot(name, of, path string, state flinkv1beta1.SnapshotState, at time.Time) *flinkv1beta1.FlinkStateSnapshot {
	s := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	s.Spec.JobReference = &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: of}
	s.Spec.Savepoint = &flinkv1beta1.SavepointSpec{}
	s.Status = flinkv1beta1.FlinkStateSnapshotStatus{State: state, Path: path, ResultTimestamp: flinkv1beta1.FormatSnapshotTime(at)}
	return s
}

// scalingDecision is status.scaling in the shape agreed for it (numbers as strings).
func scalingDecision() map[string]any {
	return map[string]any{
		"evaluatedAt": testNow.Add(-2 * time.Minute).Format(time.RFC3339), "generation": int64(3), "outcome": "Applied",
		"message": "source is behind: scaling up",
		"vertices": []any{
			map[string]any{"vertexId": "cbc357ccb763df2852fee8c4fc7d55f2", "name": "Source: Kafka", "currentParallelism": int64(2), "newParallelism": int64(4),
				"busyRatio": "0.83", "trueProcessingRate": "1520.4", "targetRate": "1800.0", "lag": "12000", "expectedCatchUp": "45s",
				"boundBy": []any{"MaxFactor", "KeyGroups"}},
			map[string]any{"vertexId": "90bea66de1c231edf33913ecd54406c1", "name": "Sink", "currentParallelism": int64(2), "newParallelism": int64(2),
				"busyRatio": "0.10"},
		},
	}
}

// withScaling makes unstructured reads of the resource carry status.scaling, as the API server
// returns it once the operator writes it (the Go type is not on this branch, so the fake
// client's typed store cannot hold it).
func withScaling(scaling map[string]any) interceptor.Funcs {
	return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if err := c.Get(ctx, key, obj, opts...); err != nil {
			return err
		}
		if u, ok := obj.(*unstructured.Unstructured); ok && scaling != nil {
			return unstructured.SetNestedField(u.Object, runtimeJSON(scaling), "status", "scaling")
		}
		return nil
	}}
}

// runtimeJSON deep-copies v as unstructured content (int64 numbers, []any lists).
func runtimeJSON(v map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: map[string]any{"x": v}}).DeepCopy().Object["x"].(map[string]any)
}

// TestStatusOneScreen: status of a running application shows its lifecycle, job state and id,
// conditions in the order people act on them with reasons and one-line messages, the last
// checkpoint and the newest savepoint (a snapshot resource newer than the status's
// lastSavepoint wins) with age and path, its snapshots newest first, the rescale in flight,
// the operations, and the autoscaler's decision in one line.
func TestStatusOneScreen(t *testing.T) {
	f := newFakeCluster(t, withScaling(scalingDecision()), runningDeployment(),
		savepointSnapshot("app-savepoint-manual-1", "app", "file:///sp/manual-1", flinkv1beta1.SnapshotCompleted, testNow.Add(-10*time.Minute)),
		savepointSnapshot("app-savepoint-manual-2", "app", "", flinkv1beta1.SnapshotInProgress, testNow.Add(-10*time.Second)),
		savepointSnapshot("other-savepoint-manual-1", "other", "file:///sp/other", flinkv1beta1.SnapshotCompleted, testNow))
	out := mustRun(t, f, "ns", "status", "app")
	t.Log("\n" + out)
	for _, want := range []string{
		"flinkdeployment ns/app (generation 3, observed 3)",
		"Lifecycle:", "STABLE",
		"Job:", "RUNNING  id 0123456789abcdef0123456789abcdef  name TopSpeed",
		"Last checkpoint:  30s ago",
		"Last savepoint:   10m ago  file:///sp/manual-1",
		"Ready        True    Running  5m   the job runs as deployed",
		"Progressing  True    Scaling  60s  rescaling in place",
		"app-savepoint-manual-2  savepoint  IN_PROGRESS  10s",
		"Rescale in flight (generation 3, asked 60s ago): v1:2 -> v1:4, Flink reports v1:3",
		"Upgrade  2    6m ago   2m    Succeeded",
		"file:///sp/upgrade-1",
		"Scale    3    60s ago  -     InProgress",
		"Scaling: Applied, 2m ago: Source: Kafka 2->4 (kubectl flink explain-scaling app)",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "other", "a snapshot of another resource is not listed")
	assert.Less(t, strings.Index(out, "Ready "), strings.Index(out, "Degraded "), "Ready comes before Degraded")
}

// TestStatusToleratesAnEmptyStatus: a resource nobody reconciled yet (or whose status another
// operator wrote in part) prints dashes and "none", not an error.
func TestStatusToleratesAnEmptyStatus(t *testing.T) {
	d := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}}
	d.Spec.Job = &flinkv1beta1.JobSpec{}
	f := newFakeCluster(t, withScaling(map[string]any{"outcome": int64(7), "vertices": "not a list", "evaluatedAt": "yesterday"}), d)
	out := mustRun(t, f, "ns", "status", "flinkdeployment/new")
	assert.Contains(t, out, "Conditions: none")
	assert.Contains(t, out, "Last savepoint:   none")
	assert.Contains(t, out, "Scaling: 7: no parallelism change")
}

// TestStatusOfEachKind: session jobs, snapshots and blue/green deployments have a screen too.
func TestStatusOfEachKind(t *testing.T) {
	j := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job"}}
	j.Spec.DeploymentName = "session"
	j.Status.JobStatus = flinkv1beta1.JobStatus{JobID: "abc", State: flinkv1beta1.JobStatusRunning}
	j.Status.Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionReconciliation, flinkv1beta1.ErrorReasonForeignObject, "Service x belongs to someone else")
	snap := savepointSnapshot("sp", "app", "", flinkv1beta1.SnapshotFailed, testNow)
	snap.Status.Error = "savepoint directory not configured"
	bg := &flinkv1beta1.FlinkBlueGreenDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bg"}}
	bg.Status.BlueGreenState = "ACTIVE_BLUE"
	f := newFakeCluster(t, interceptor.Funcs{}, j, snap, bg)

	out := mustRun(t, f, "ns", "status", "--kind", "sessionjob", "job")
	assert.Contains(t, out, "Session:")
	assert.Contains(t, out, "RUNNING  id abc")
	assert.Contains(t, out, "Error:            ForeignObject: Service x belongs to someone else")
	assert.Contains(t, out, "Scaling: no decision recorded")

	out = mustRun(t, f, "ns", "status", "snapshot/sp")
	assert.Contains(t, out, "FAILED")
	assert.Contains(t, out, "savepoint directory not configured")
	assert.Contains(t, out, "flinkdeployment/app")

	out = mustRun(t, f, "ns", "status", "bluegreen/bg")
	assert.Contains(t, out, "ACTIVE_BLUE")
}

// TestStatusErrors: a missing resource, an unknown kind and a kind given twice are errors that
// say what to do.
func TestStatusErrors(t *testing.T) {
	f := newFakeCluster(t, interceptor.Funcs{})
	_, err := f.run(t, "ns", "status", "nope")
	require.ErrorContains(t, err, "flinkdeployment ns/nope not found: check the name and namespace (-n)")
	_, err = f.run(t, "ns", "status", "--kind", "pod", "x")
	require.ErrorContains(t, err, `unknown kind "pod"`)
	_, err = f.run(t, "ns", "status", "--kind", "sessionjob", "snapshot/x")
	require.ErrorContains(t, err, "leave out --kind")
}

func TestParseTarget(t *testing.T) {
	for _, tt := range []struct {
		arg, kind string
		want      Target
	}{
		{arg: "a", want: Target{Kind: KindDeployment, Namespace: "ns", Name: "a"}},
		{arg: "a", kind: "sessionjob", want: Target{Kind: KindSessionJob, Namespace: "ns", Name: "a"}},
		{arg: "flinkdeployment/a", want: Target{Kind: KindDeployment, Namespace: "ns", Name: "a"}},
		{arg: "flinksessionjobs.flink.apache.org/a", want: Target{Kind: KindSessionJob, Namespace: "ns", Name: "a"}},
		{arg: "FlinkStateSnapshot/a", want: Target{Kind: KindSnapshot, Namespace: "ns", Name: "a"}},
		{arg: "a", kind: "bluegreen", want: Target{Kind: KindBlueGreen, Namespace: "ns", Name: "a"}},
	} {
		got, err := parseTarget(tt.arg, tt.kind, "ns")
		require.NoError(t, err, tt.arg)
		assert.Equal(t, tt.want, got, tt.arg)
	}
	_, err := parseTarget("flinkdeployment/", "", "ns")
	require.Error(t, err)
}

func TestVersion(t *testing.T) {
	f := newFakeCluster(t, interceptor.Funcs{})
	assert.Equal(t, "kubectl-flink test\n", mustRun(t, f, "ns", "version"))
}
