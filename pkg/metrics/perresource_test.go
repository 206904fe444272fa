package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// TestPerResourceSeries: each resource gets one series per signal, named by namespace, kind and
// name; times are values; a deleted resource, and the snapshots of a deleted job, leave nothing.
func TestPerResourceSeries(t *testing.T) {
	created := metav1.NewTime(time.Unix(1_700_000_000, 0))

	// An application whose job failed, with legacy savepoint bookkeeping and a health record.
	app := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "orders"},
		Spec: flinkv1beta1.FlinkDeploymentSpec{Job: &flinkv1beta1.JobSpec{JarURI: "local:///x.jar"}}}
	app.Status.LifecycleState = flinkv1beta1.LifecycleFailed
	app.Status.JobStatus.State = flinkv1beta1.JobStatusFailed
	app.Status.JobStatus.SavepointInfo = &flinkv1beta1.SavepointInfo{
		LastSavepoint: &flinkv1beta1.Savepoint{TimeStamp: 1_700_000_100_000},
		TriggerID:     "abc", TriggerTimestamp: ptr.To[int64](1_700_000_200_000)}
	app.Status.ClusterInfo = map[string]string{healthInfoKey: `{"numRestarts":70,"numCompletedCheckpoints":12,"numCompletedCheckpointsIncreasedTimeStamp":1700000300000,"healthy":false}`}

	// A session cluster (no job) and a running session job with snapshot resources.
	session := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "session"}}
	session.Status.LifecycleState = flinkv1beta1.LifecycleStable
	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "clicks"}}
	job.Status.LifecycleState = flinkv1beta1.LifecycleUpgrading
	job.Status.JobStatus.State = flinkv1beta1.JobStatusRestarting
	snap := func(name string, checkpoint bool, ref string, state flinkv1beta1.SnapshotState, result string) *flinkv1beta1.FlinkStateSnapshot {
		s := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, CreationTimestamp: created},
			Spec: flinkv1beta1.FlinkStateSnapshotSpec{JobReference: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkSessionJob, Name: ref}}}
		if checkpoint {
			s.Spec.Checkpoint = &flinkv1beta1.CheckpointSpec{}
		} else {
			s.Spec.Savepoint = &flinkv1beta1.SavepointSpec{}
		}
		s.Status.State, s.Status.ResultTimestamp = state, result
		return s
	}
	c := fake.NewClientBuilder().WithScheme(kubeenv.Scheme()).WithObjects(app, session, job,
		snap("sp-old", false, "clicks", flinkv1beta1.SnapshotCompleted, "1700000400000"),
		// upstream's ISO-8601, as this operator writes it now; the others as earlier versions did
		snap("sp-new", false, "clicks", flinkv1beta1.SnapshotCompleted, "2023-11-14T22:21:40Z"),
		snap("sp-failed", false, "clicks", flinkv1beta1.SnapshotFailed, ""),
		snap("cp-done", true, "clicks", flinkv1beta1.SnapshotCompleted, "1700000600000"),
		snap("sp-running", false, "clicks", flinkv1beta1.SnapshotInProgress, ""),
		// Snapshots of a job that is gone give no series.
		snap("orphan-done", false, "deleted", flinkv1beta1.SnapshotCompleted, "1700000700000"),
		snap("orphan-pending", false, "deleted", flinkv1beta1.SnapshotTriggerPending, ""),
	).Build()
	collector := &ResourceCollector{Reader: c}

	expected := `
# HELP flink_operator_resource_lifecycle 1 for each FlinkDeployment and FlinkSessionJob, labelled with its current lifecycle state.
# TYPE flink_operator_resource_lifecycle gauge
flink_operator_resource_lifecycle{kind="FlinkDeployment",name="orders",namespace="team-a",state="FAILED"} 1
flink_operator_resource_lifecycle{kind="FlinkDeployment",name="session",namespace="team-a",state="STABLE"} 1
flink_operator_resource_lifecycle{kind="FlinkSessionJob",name="clicks",namespace="team-a",state="UPGRADING"} 1
# HELP flink_operator_job_status 1 for each FlinkDeployment (application) and FlinkSessionJob whose job state is known, labelled with that state (status.jobStatus.state).
# TYPE flink_operator_job_status gauge
flink_operator_job_status{kind="FlinkDeployment",name="orders",namespace="team-a",state="FAILED"} 1
flink_operator_job_status{kind="FlinkSessionJob",name="clicks",namespace="team-a",state="RESTARTING"} 1
# HELP flink_operator_job_healthy 1 if the cluster health check (kubernetes.operator.cluster.health-check.enabled) last found the job healthy, 0 if not (too many restarts or no checkpoint progress); absent when the check is off.
# TYPE flink_operator_job_healthy gauge
flink_operator_job_healthy{kind="FlinkDeployment",name="orders",namespace="team-a"} 0
# HELP flink_operator_last_savepoint_timestamp_seconds When the resource's newest completed savepoint was taken (COMPLETED FlinkStateSnapshots referencing it, or the legacy status.jobStatus.savepointInfo), as a Unix time.
# TYPE flink_operator_last_savepoint_timestamp_seconds gauge
flink_operator_last_savepoint_timestamp_seconds{kind="FlinkDeployment",name="orders",namespace="team-a"} 1.7000001e+09
flink_operator_last_savepoint_timestamp_seconds{kind="FlinkSessionJob",name="clicks",namespace="team-a"} 1.7000005e+09
# HELP flink_operator_last_checkpoint_timestamp_seconds When the resource's newest completed checkpoint was seen (COMPLETED checkpoint FlinkStateSnapshots, the legacy status.jobStatus.checkpointInfo, or the health check seeing the completed-checkpoint count grow), as a Unix time.
# TYPE flink_operator_last_checkpoint_timestamp_seconds gauge
flink_operator_last_checkpoint_timestamp_seconds{kind="FlinkDeployment",name="orders",namespace="team-a"} 1.7000003e+09
flink_operator_last_checkpoint_timestamp_seconds{kind="FlinkSessionJob",name="clicks",namespace="team-a"} 1.7000006e+09
# HELP flink_operator_snapshot_pending_since_timestamp_seconds For each savepoint or checkpoint not yet finished (TRIGGER_PENDING or IN_PROGRESS FlinkStateSnapshots, or a legacy trigger in status), when it was asked for, as a Unix time; kind and name are the job's resource, snapshot the FlinkStateSnapshot (empty for a legacy trigger).
# TYPE flink_operator_snapshot_pending_since_timestamp_seconds gauge
flink_operator_snapshot_pending_since_timestamp_seconds{kind="FlinkDeployment",name="orders",namespace="team-a",snapshot="",type="savepoint"} 1.7000002e+09
flink_operator_snapshot_pending_since_timestamp_seconds{kind="FlinkSessionJob",name="clicks",namespace="team-a",snapshot="sp-running",type="savepoint"} 1.7e+09
`
	names := []string{"flink_operator_resource_lifecycle", "flink_operator_job_status", "flink_operator_job_healthy",
		"flink_operator_last_savepoint_timestamp_seconds", "flink_operator_last_checkpoint_timestamp_seconds",
		"flink_operator_snapshot_pending_since_timestamp_seconds"}
	require.NoError(t, testutil.CollectAndCompare(collector, strings.NewReader(expected), names...))

	// A state change replaces the resource's series; a deleted resource leaves none.
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(job), job))
	job.Status.LifecycleState = flinkv1beta1.LifecycleStable
	require.NoError(t, c.Update(t.Context(), job))
	require.NoError(t, c.Delete(t.Context(), app))
	out := collect(t, collector)
	assert.NotContains(t, out, `name="orders"`)
	assert.NotContains(t, out, `flink_operator_resource_lifecycle{kind="FlinkSessionJob",name="clicks",namespace="team-a",state="UPGRADING"}`)
	assert.Contains(t, out, `flink_operator_resource_lifecycle{kind="FlinkSessionJob",name="clicks",namespace="team-a",state="STABLE"} 1`)
	assert.NotContains(t, out, `deleted`, "snapshots of a deleted job")
}

// TestPerResourceSeriesAreBounded: n resources give n lifecycle series, whatever their history.
func TestPerResourceSeriesAreBounded(t *testing.T) {
	b := fake.NewClientBuilder().WithScheme(kubeenv.Scheme())
	const n = 50
	for i := range n {
		d := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d" + ftoa(float64(i))},
			Spec: flinkv1beta1.FlinkDeploymentSpec{Job: &flinkv1beta1.JobSpec{}}}
		d.Status.LifecycleState = flinkv1beta1.LifecycleStable
		d.Status.JobStatus.State = flinkv1beta1.JobStatusRunning
		b = b.WithObjects(d)
	}
	collector := &ResourceCollector{Reader: b.Build()}
	assert.Equal(t, n, testutil.CollectAndCount(collector, "flink_operator_resource_lifecycle"))
	assert.Equal(t, n, testutil.CollectAndCount(collector, "flink_operator_job_status"))
}

// TestResourceCollectorReportsOnlyOnTheLeader: a standby replica (not elected) reports no
// resource series, so sums over instances and alerts do not count each resource twice.
func TestResourceCollectorReportsOnlyOnTheLeader(t *testing.T) {
	d := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}}
	elected := make(chan struct{})
	collector := &ResourceCollector{Reader: fake.NewClientBuilder().WithScheme(kubeenv.Scheme()).WithObjects(d).Build(), Elected: elected}
	assert.Equal(t, 0, testutil.CollectAndCount(collector), "standby")
	close(elected)
	assert.Equal(t, 1, testutil.CollectAndCount(collector, "flink_operator_resources"), "leader")
	assert.Equal(t, 1, testutil.CollectAndCount(collector, "flink_operator_resource_lifecycle"), "leader")
}
