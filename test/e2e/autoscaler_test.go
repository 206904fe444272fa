//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/wait"
)

// loadgenHostPath is where the load generator's jar is put on the node (a hostPath volume):
// the JobManager reads it as local:///loadgen-jar/loadgen.jar.
const loadgenHostPath = "/tmp/flink-loadgen"

// busyMap is the name of the load generator's busy vertex (test/loadgen).
const busyMap = "busy-map"

// TestAutoscaler: the job autoscaler on real Flink 1.20.3 and 2.3.0 under the load generator
// (test/loadgen), with windows made for the test. The job starts at parallelism 1 with the
// autoscaler in recommend-only mode: the load rises, a ScalingReport recommends a higher
// parallelism and nothing changes (Flink's REST reports parallelism 1). Scaling is then turned
// on: the busy vertex is scaled up in place (adaptive scheduler) while the load is high, and down
// after it falls. Each rescale keeps the job (same job id, restored from a checkpoint, as
// Flink's REST reports), each decision is a ScalingReport event, in the autoscaler ConfigMap and
// in status.scaling (every vertex, newParallelism what Flink's REST then reports), and the
// user's spec never gets the overrides.
//
// The two versions run in parallel (the test mostly waits on Flink).
func TestAutoscaler(t *testing.T) {
	t.Parallel()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	jar := filepath.Join(root, "bin", "loadgen", "loadgen.jar")
	_, err = os.Stat(jar)
	require.NoError(t, err, "the load generator is built by make loadgen")
	onNode := filepath.Join(env.Dir, "node", "hostpath", loadgenHostPath)
	require.NoError(t, os.MkdirAll(onNode, 0o755))
	data, err := os.ReadFile(jar)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(onNode, "loadgen.jar"), data, 0o644))

	for _, v := range []struct {
		dist, image string
		version     flinkv1beta1.FlinkVersion
	}{{"1.20.3", "flink:1.20", "v1_20"}, {"2.3.0", "flink:2.3", "v2_3"}} {
		t.Run(v.dist, func(t *testing.T) {
			t.Parallel()
			autoscaleOn(t, "e2e-autoscaler-"+strings.ReplaceAll(v.dist, ".", "-"), v.image, v.version)
		})
	}
}

func autoscaleOn(t *testing.T, ns, image string, version flinkv1beta1.FlinkVersion) {
	ctx := context.Background()
	require.NoError(t, env.Namespace(ctx, ns))
	dep := loadgenDeployment(ns, image, version)
	key := client.ObjectKeyFromObject(dep)
	started := time.Now()
	jobID, _ := deployRunning(t, dep)
	vertex := vertexNamed(t, key, jobID, busyMap)
	require.Equal(t, 1, vertex.Parallelism)

	// Recommend-only: a recommendation while the load is high, and nothing else.
	report := waitForEvent(t, key, jobs.ReasonScalingReport, "Scaling execution disabled", 3*time.Minute)
	logf(t, "recommended: %s", report)
	assert.Contains(t, report, vertex.ID, "the report names the busy vertex")
	assert.Equal(t, 1, vertexNamed(t, key, jobID, busyMap).Parallelism, "recommend-only: Flink's parallelism unchanged")
	state := autoscalerConfigMap(t, key)
	assert.Empty(t, state.Overrides, "recommend-only: no overrides")
	// The recommendation is in the status, for every vertex Flink runs.
	rec := scalingStatus(t, key, jobID, "the recommendation in status.scaling", func(sc *flinkv1beta1.ScalingDecision) bool {
		return sc.Outcome == flinkv1beta1.ScalingRecommended
	})
	busy := scalingVertex(rec, vertex.ID)
	require.NotNil(t, busy, "status.scaling names the busy vertex")
	assert.Equal(t, int32(1), busy.CurrentParallelism)
	assert.Greater(t, busy.NewParallelism, int32(1), "a scale-up recommended")
	assert.NotEmpty(t, busy.BusyRatio)
	assert.NotEmpty(t, busy.TrueProcessingRate)
	assert.NotEmpty(t, busy.TargetRate)

	// Scaling on: up while the load is high.
	before := completedCheckpoint(t, key, jobID)
	patch(t, key, func(d *flinkv1beta1.FlinkDeployment) {
		d.Spec.FlinkConfiguration = setConfig(t, d.Spec.FlinkConfiguration, "job.autoscaler.scaling.enabled", "true")
	})
	up := waitForParallelism(t, key, jobID, vertex.ID, func(p int) bool { return p > 1 }, 3*time.Minute)
	logf(t, "scaled up in place to %d after %s", up, time.Since(started).Round(time.Second))
	assertRescaled(t, key, jobID, vertex.ID, up, before)
	assertScalingIsFlinks(t, key, jobID)

	// Down after the load falls.
	before = completedCheckpoint(t, key, jobID)
	down := waitForParallelism(t, key, jobID, vertex.ID, func(p int) bool { return p < up }, 4*time.Minute)
	logf(t, "scaled down in place to %d after %s", down, time.Since(started).Round(time.Second))
	assertRescaled(t, key, jobID, vertex.ID, down, before)
	assertScalingIsFlinks(t, key, jobID)

	d := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, env.Client.Get(ctx, key, d))
	assert.NotContains(t, string(d.Spec.FlinkConfiguration.Raw), "pipeline.jobvertex-parallelism-overrides", "never written into the user's spec")
	assert.GreaterOrEqual(t, countEvents(t, key, jobs.ReasonScalingReport, "Scaling execution enabled"), 2, "a report per decision")
	deleteAndWait(t, dep)
}

// loadgenDeployment is an application running the load generator at parallelism 1: low load
// for 20 s, high for 80 s, then low; the busy vertex parks 2 ms per record, so at the high
// rate one subtask is saturated (a rate of 500/s) and the autoscaler wants about four.
func loadgenDeployment(ns, image string, version flinkv1beta1.FlinkVersion) *flinkv1beta1.FlinkDeployment {
	volume := func(name, hostPath string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostPath}}}
	}
	return &flinkv1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "loadgen"},
		Spec: flinkv1beta1.FlinkDeploymentSpec{
			Image: image, FlinkVersion: version, ServiceAccount: "flink",
			FlinkConfiguration: flinkv1beta1.NewFlinkConfiguration(map[string]string{
				"taskmanager.numberOfTaskSlots":    "4",
				"jobmanager.scheduler":             "adaptive",
				"state.checkpoints.dir":            "file:///flink-data/checkpoints",
				"state.savepoints.dir":             "file:///flink-data/savepoints",
				"execution.checkpointing.interval": "2s",
				// Short windows made for the test (upstream's defaults are minutes to hours).
				"job.autoscaler.enabled":                "true",
				"job.autoscaler.scaling.enabled":        "false",
				"job.autoscaler.stabilization.interval": "10s",
				"job.autoscaler.metrics.window":         "25s",
				"job.autoscaler.scale-down.interval":    "0",
				"job.autoscaler.utilization.target":     "0.5",
				"job.autoscaler.catch-up.duration":      "1m",
				"job.autoscaler.restart.time":           "10s",
				"job.autoscaler.vertex.max-parallelism": "4",
			}),
			PodTemplate: &corev1.Pod{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "flink-main-container", VolumeMounts: []corev1.VolumeMount{
					{Name: "flink-volume", MountPath: "/flink-data"}, {Name: "loadgen", MountPath: "/loadgen-jar"}}}},
				Volumes: []corev1.Volume{volume("flink-volume", "/tmp/flink-"+ns), volume("loadgen", loadgenHostPath)},
			}},
			JobManager:  &flinkv1beta1.JobManagerSpec{Resource: &flinkv1beta1.Resource{Memory: "1024m", CPU: ptr(0.5)}},
			TaskManager: &flinkv1beta1.TaskManagerSpec{Resource: &flinkv1beta1.Resource{Memory: "1024m", CPU: ptr(0.5)}},
			Job: &flinkv1beta1.JobSpec{
				JarURI:      "local:///loadgen-jar/loadgen.jar",
				Args:        []string{"--schedule", "40x20s,800x80s,40x60m", "--cpu-micros-per-record", "2000", "--work", "park"},
				Parallelism: 1, UpgradeMode: flinkv1beta1.UpgradeModeLastState,
			},
		},
	}
}

// vertexNamed is the job's vertex whose name contains name, as Flink reports it.
func vertexNamed(t *testing.T, key client.ObjectKey, jobID, name string) flink.JobVertex {
	t.Helper()
	details, err := flinkREST(t, key).JobDetails(context.Background(), jobID)
	require.NoError(t, err)
	for _, v := range details.Vertices {
		if strings.Contains(v.Name, name) {
			return v
		}
	}
	t.Fatalf("job %s has no vertex %q: %+v", jobID, name, details.Vertices)
	return flink.JobVertex{}
}

// waitForParallelism waits until Flink runs every task of the job with the vertex at a
// parallelism ok accepts, and returns it.
func waitForParallelism(t *testing.T, key client.ObjectKey, jobID, vertexID string, ok func(int) bool, timeout time.Duration) int {
	t.Helper()
	last := 0
	wait.For(t, timeout, "vertex "+vertexID+" at the parallelism waited for", func() bool {
		details, err := flinkREST(t, key).JobDetails(context.Background(), jobID)
		if err != nil {
			return false
		}
		last = parallelismOf(details.Vertices, vertexID)
		return ok(last) && details.AllTasksRunning()
	}, func() string {
		return fmt.Sprintf("parallelism %d (events: %v)", last, eventMessages(t, key, jobs.ReasonScalingReport))
	})
	return last
}

// assertRescaled checks a rescale to p: the same job, restored from a checkpoint at least as
// new as the one completed before it, the decision in the autoscaler ConfigMap.
func assertRescaled(t *testing.T, key client.ObjectKey, jobID, vertexID string, p int, before *flink.CheckpointRef) {
	t.Helper()
	d := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, env.Client.Get(context.Background(), key, d))
	assert.Equal(t, jobID, d.Status.JobStatus.JobID, "rescaled in place: the same job")
	restored := restoredFrom(t, key, jobID)
	assert.GreaterOrEqual(t, restored.ID, before.ID, "the rescaled job restored its latest checkpoint (or a newer one)")
	state := autoscalerConfigMap(t, key)
	assert.Equal(t, p, state.Overrides[autoscaler.VertexID(vertexID)], "the decision is in the autoscaler ConfigMap")
	assert.NotEmpty(t, state.History[autoscaler.VertexID(vertexID)], "and in its scaling history")
	assert.Contains(t, d.Status.ReconciliationStatus.LastReconciledSpec, fmt.Sprintf("%s:%d", vertexID, p), "recorded as running")
}

// scalingStatus waits until the resource's status.scaling lists the vertices of the job Flink
// runs, each once, and ok accepts it; it returns it.
func scalingStatus(t *testing.T, key client.ObjectKey, jobID, what string, ok func(*flinkv1beta1.ScalingDecision) bool) *flinkv1beta1.ScalingDecision {
	t.Helper()
	var sc *flinkv1beta1.ScalingDecision
	wait.For(t, time.Minute, what, func() bool {
		d := &flinkv1beta1.FlinkDeployment{}
		if env.Client.Get(context.Background(), key, d) != nil || d.Status.Scaling == nil {
			return false
		}
		sc = d.Status.Scaling
		details, err := flinkREST(t, key).JobDetails(context.Background(), jobID)
		if err != nil || len(details.Vertices) != len(sc.Vertices) {
			return false
		}
		for _, v := range details.Vertices {
			if scalingVertex(sc, v.ID) == nil {
				return false
			}
		}
		return ok(sc)
	}, func() string { return fmt.Sprintf("status.scaling %+v", sc) })
	return sc
}

// scalingVertex is the vertex of status.scaling with the id, nil without it.
func scalingVertex(sc *flinkv1beta1.ScalingDecision, id string) *flinkv1beta1.VertexScaling {
	for i := range sc.Vertices {
		if sc.Vertices[i].VertexID == id {
			return &sc.Vertices[i]
		}
	}
	return nil
}

// assertScalingIsFlinks checks, after a rescale, that status.scaling's decision is what Flink's
// REST reports running: every vertex of the job, with newParallelism its parallelism (a decision
// taken after the rescale, Held at the limits, also names the running parallelism).
func assertScalingIsFlinks(t *testing.T, key client.ObjectKey, jobID string) {
	t.Helper()
	var running map[string]int
	sc := scalingStatus(t, key, jobID, "status.scaling at Flink's parallelism", func(sc *flinkv1beta1.ScalingDecision) bool {
		details, err := flinkREST(t, key).JobDetails(context.Background(), jobID)
		if err != nil {
			return false
		}
		running = map[string]int{}
		for _, v := range details.Vertices {
			running[v.ID] = v.Parallelism
			if int(scalingVertex(sc, v.ID).NewParallelism) != v.Parallelism {
				return false
			}
		}
		return true
	})
	logf(t, "status.scaling: %s %s (Flink runs %v)", sc.Outcome, sc.Message, running)
	assert.Contains(t, []flinkv1beta1.ScalingOutcome{flinkv1beta1.ScalingApplied, flinkv1beta1.ScalingHeld}, sc.Outcome)
}

// autoscalerConfigMap decodes the resource's autoscaler state.
func autoscalerConfigMap(t *testing.T, key client.ObjectKey) autoscaler.State {
	t.Helper()
	var cm corev1.ConfigMap
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: key.Namespace, Name: jobs.AutoscalerConfigMapName(key.Name)}, &cm))
	state, err := autoscaler.DecodeState(cm.Data)
	require.NoError(t, err)
	return state
}

// eventMessages are the messages of the resource's events with reason.
func eventMessages(t *testing.T, key client.ObjectKey, reason string) []string {
	t.Helper()
	var list corev1.EventList
	require.NoError(t, env.Client.List(context.Background(), &list, client.InNamespace(key.Namespace)))
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == key.Name && e.InvolvedObject.Kind == "FlinkDeployment" && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

func countEvents(t *testing.T, key client.ObjectKey, reason, substr string) int {
	t.Helper()
	n := 0
	for _, m := range eventMessages(t, key, reason) {
		if strings.Contains(m, substr) {
			n++
		}
	}
	return n
}

// waitForEvent waits for an event of the resource with reason and a message containing substr.
func waitForEvent(t *testing.T, key client.ObjectKey, reason, substr string, timeout time.Duration) string {
	t.Helper()
	var found string
	wait.For(t, timeout, fmt.Sprintf("%s: a %s event with %q", key.Name, reason, substr), func() bool {
		for _, m := range eventMessages(t, key, reason) {
			if strings.Contains(m, substr) {
				found = m
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("events: %v", eventMessages(t, key, reason)) })
	return found
}
