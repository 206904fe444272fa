package controllers

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// Status fields in upstream's shapes, compared field by field with
// what the Apache operator wrote for the same spec (testdata/upstream, captured on real Flink).

var (
	epochMillisPattern = regexp.MustCompile(`^[0-9]+$`)
	// Java's Instant.toString: UTC, the fraction in groups of three digits, none when zero.
	isoInstant = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6}|\.\d{9})?Z$`)
)

// loadCapturedSnapshots reads the FlinkStateSnapshots of a capture step.
func loadCapturedSnapshots(t *testing.T, path string) []flinkv1beta1.FlinkStateSnapshot {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var snaps []flinkv1beta1.FlinkStateSnapshot
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		var kind struct{ Kind string }
		require.NoError(t, yaml.Unmarshal(doc, &kind))
		if kind.Kind == "FlinkStateSnapshot" {
			var s flinkv1beta1.FlinkStateSnapshot
			require.NoError(t, yaml.Unmarshal(doc, &s))
			snaps = append(snaps, s)
		}
	}
	require.NotEmpty(t, snaps)
	return snaps
}

func TestStatusShapeAsUpstream(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()

	t.Run("FlinkDeployment jobStatus and clusterInfo", func(t *testing.T) {
		t.Parallel()
		captured, _ := loadUpstreamCapture(t, "testdata/upstream/s1-laststate/01-running-stable.yaml")
		want := captured.Status
		ns, _, k, _ := newScenario(t, "status-shape")
		dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: captured.Name}, Spec: captured.Spec}
		stableDeployment(t, c, k, dep)
		got := waitFor(t, c, ns, dep.Name, "job details and clusterInfo recorded", func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.JobStatus.StartTime != "" && d.Status.ClusterInfo[flinkdeployment.ClusterInfoStateSize] != ""
		}).Status

		for key := range want.ClusterInfo {
			assert.Contains(t, got.ClusterInfo, key, "clusterInfo.%s is set, as upstream sets it", key)
		}
		// The same spec with one TaskManager registered: the same totals, in the same format.
		assert.Equal(t, want.ClusterInfo[flinkdeployment.ClusterInfoTotalCPU], got.ClusterInfo[flinkdeployment.ClusterInfoTotalCPU])
		assert.Equal(t, want.ClusterInfo[flinkdeployment.ClusterInfoTotalMemory], got.ClusterInfo[flinkdeployment.ClusterInfoTotalMemory])
		assert.Equal(t, "9685", got.ClusterInfo[flinkdeployment.ClusterInfoStateSize], "the latest completed checkpoint's size")
		assert.Equal(t, want.ClusterInfo["flink-version"], got.ClusterInfo["flink-version"])

		require.NotEmpty(t, want.JobStatus.JobName)
		assert.Equal(t, "fake", got.JobStatus.JobName, "the job's name as Flink reports it")
		for field, pair := range map[string][2]string{
			"startTime":  {want.JobStatus.StartTime, got.JobStatus.StartTime},
			"updateTime": {want.JobStatus.UpdateTime, got.JobStatus.UpdateTime},
		} {
			require.Regexp(t, epochMillisPattern, pair[0], "upstream's %s", field)
			assert.Regexp(t, epochMillisPattern, pair[1], "jobStatus.%s in upstream's format (epoch milliseconds)", field)
		}
		assert.Equal(t, "1", got.JobStatus.StartTime, "the start time the JobManager reports")
	})

	t.Run("FlinkStateSnapshot timestamps", func(t *testing.T) {
		t.Parallel()
		flink := fakeflink.New(t)
		ns := testEnv(t).NewNamespace(t, "snapshot-shape")
		dep := fixtures.NewDeployment(t, ns, "orders")
		require.NoError(t, c.Create(ctx, dep))
		const jobID = "0000000000000000000000000000abcd"
		dep.Status.JobStatus.JobID, dep.Status.JobStatus.State = jobID, flinkv1beta1.JobStatusRunning
		dep.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
		require.NoError(t, c.Status().Update(ctx, dep))
		flink.SetJob(jobID, "RUNNING")
		startManager(t, managerOptions{namespaces: []string{ns}, setup: snapshotController(flink)})

		f, tr := false, true
		for name, spec := range map[string]flinkv1beta1.FlinkStateSnapshotSpec{
			"triggered": {JobReference: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKindFlinkDeployment, Name: "orders"},
				Savepoint: &flinkv1beta1.SavepointSpec{DisposeOnDelete: &f}},
			"recorded": {Savepoint: &flinkv1beta1.SavepointSpec{Path: "file:///old/savepoint-1", AlreadyExists: &tr, DisposeOnDelete: &f}},
		} {
			require.NoError(t, c.Create(ctx, &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}))
		}
		for _, want := range loadCapturedSnapshots(t, "testdata/upstream/s4-handmade-snapshot/01-completed.yaml") {
			require.Regexp(t, isoInstant, want.Status.TriggerTimestamp, "upstream's triggerTimestamp of %s", want.Name)
			require.Regexp(t, isoInstant, want.Status.ResultTimestamp, "upstream's resultTimestamp of %s", want.Name)
		}
		for _, name := range []string{"triggered", "recorded"} {
			s := &flinkv1beta1.FlinkStateSnapshot{}
			wait.For(t, 20*time.Second, fmt.Sprintf("snapshot %s completes", name), func() bool {
				return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s) == nil && s.Status.State == flinkv1beta1.SnapshotCompleted
			})
			assert.Regexp(t, isoInstant, s.Status.TriggerTimestamp, "%s: triggerTimestamp in upstream's format", name)
			assert.Regexp(t, isoInstant, s.Status.ResultTimestamp, "%s: resultTimestamp in upstream's format", name)
		}
	})
}
