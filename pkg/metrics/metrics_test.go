package metrics

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

func TestResourceCollector(t *testing.T) {
	dep := func(ns, name string, state flinkv1beta1.LifecycleState, jm flinkv1beta1.JobManagerDeploymentStatus) *flinkv1beta1.FlinkDeployment {
		d := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		d.Spec.FlinkVersion = flinkv1beta1.FlinkVersion1_20
		d.Status.LifecycleState, d.Status.JobManagerDeploymentStatus = state, jm
		return d
	}
	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "j"}}
	job.Status.LifecycleState = flinkv1beta1.LifecycleUpgrading
	snap := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "s"},
		Spec: flinkv1beta1.FlinkStateSnapshotSpec{Savepoint: &flinkv1beta1.SavepointSpec{}}}
	snap.Status.State = flinkv1beta1.SnapshotCompleted
	c := fake.NewClientBuilder().WithScheme(kubeenv.Scheme()).WithObjects(
		dep("a", "one", flinkv1beta1.LifecycleStable, flinkv1beta1.JobManagerReady),
		dep("a", "two", flinkv1beta1.LifecycleStable, flinkv1beta1.JobManagerReady),
		dep("b", "three", flinkv1beta1.LifecycleFailed, flinkv1beta1.JobManagerError), job, snap).Build()

	collector := &ResourceCollector{Reader: c}
	expected := `
# HELP flink_operator_resources Custom resources by namespace and kind.
# TYPE flink_operator_resources gauge
flink_operator_resources{kind="FlinkDeployment",namespace="a"} 2
flink_operator_resources{kind="FlinkDeployment",namespace="b"} 1
flink_operator_resources{kind="FlinkSessionJob",namespace="a"} 1
flink_operator_resources{kind="FlinkStateSnapshot",namespace="a"} 1
`
	require.NoError(t, testutil.CollectAndCompare(collector, strings.NewReader(expected), "flink_operator_resources"))
	assert.Equal(t, 2.0, gauge(t, collector, "flink_operator_resources_lifecycle_state", `kind="FlinkDeployment",namespace="a",state="STABLE"`))
	assert.Equal(t, 0.0, gauge(t, collector, "flink_operator_resources_lifecycle_state", `kind="FlinkDeployment",namespace="a",state="FAILED"`), "zeros are reported")
	assert.Equal(t, 1.0, gauge(t, collector, "flink_operator_resources_lifecycle_state", `kind="FlinkSessionJob",namespace="a",state="UPGRADING"`))
	assert.Equal(t, 1.0, gauge(t, collector, "flink_operator_jobmanager_deployment_status", `namespace="b",status="ERROR"`))
	assert.Equal(t, 2.0, gauge(t, collector, "flink_operator_flink_version", `namespace="a",version="v1_20"`))
	assert.Equal(t, 1.0, gauge(t, collector, "flink_operator_snapshots", `namespace="a",state="COMPLETED",type="savepoint"`))

	// A deleted resource leaves no series: namespace b disappears.
	require.NoError(t, c.Delete(t.Context(), dep("b", "three", "", "")))
	out := collect(t, collector)
	assert.NotContains(t, out, `namespace="b"`)
}

// gauge returns one series' value from a collector's text exposition.
func gauge(t *testing.T, c prometheus.Collector, name, labels string) float64 {
	t.Helper()
	for _, line := range strings.Split(collect(t, c), "\n") {
		if strings.HasPrefix(line, name+"{"+labels+"}") {
			var v float64
			_, err := fmt.Sscan(strings.TrimSpace(line[len(name+"{"+labels+"}"):]), &v)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatalf("no series %s{%s}", name, labels)
	return 0
}

func collect(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	var b strings.Builder
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			v := m.GetGauge().GetValue()
			b.WriteString(f.GetName() + "{" + strings.Join(labels, ",") + "} " + ftoa(v) + "\n")
		}
	}
	return b.String()
}

func TestLifecycleTracker(t *testing.T) {
	tr := NewLifecycleTracker()
	now := time.Unix(0, 0)
	tr.now = func() time.Time { return now }
	step := func(d time.Duration, s flinkv1beta1.LifecycleState) {
		now = now.Add(d)
		tr.Observe("uid", "ns", KindDeployment, s)
	}
	step(0, flinkv1beta1.LifecycleCreated)
	step(3*time.Second, flinkv1beta1.LifecycleDeployed)  // submission 3 s
	step(7*time.Second, flinkv1beta1.LifecycleStable)    // stabilization 7 s
	step(time.Minute, flinkv1beta1.LifecycleUpgrading)   // an upgrade starts
	step(12*time.Second, flinkv1beta1.LifecycleDeployed) // upgrade 12 s
	step(time.Second, flinkv1beta1.LifecycleStable)      // stabilization 1 s
	step(time.Minute, flinkv1beta1.LifecycleUpgrading)   // suspend starts
	step(4*time.Second, flinkv1beta1.LifecycleSuspended) // suspend 4 s
	step(time.Minute, flinkv1beta1.LifecycleUpgrading)   // resume starts
	step(9*time.Second, flinkv1beta1.LifecycleStable)    // resume 9 s

	sums := map[string]float64{}
	counts := map[string]uint64{}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(tr.Collector()))
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, m := range families[0].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "transition" {
				sums[l.GetValue()] = m.GetHistogram().GetSampleSum()
				counts[l.GetValue()] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	assert.Equal(t, map[string]float64{"Submission": 3, "Stabilization": 8, "Upgrade": 12, "Suspend": 4, "Resume": 9}, sums)
	assert.Equal(t, uint64(2), counts["Stabilization"])
	tr.Forget("uid")
	assert.Empty(t, tr.seen)
}

func TestRESTMetricsOutcome(t *testing.T) {
	m := NewRESTMetrics()
	m.Observe(flink.Call{Endpoint: "GET /jobs/:jobid", StatusCode: 200, Duration: time.Millisecond})
	m.Observe(flink.Call{Endpoint: "GET /jobs/:jobid", StatusCode: 404, Duration: time.Millisecond})
	m.Observe(flink.Call{Endpoint: "GET /jobs/:jobid", Err: &flink.Error{Kind: flink.KindTimeout}, Duration: time.Second})
	assert.Equal(t, 1.0, testutil.ToFloat64(m.calls.WithLabelValues("GET /jobs/:jobid", "2xx")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.calls.WithLabelValues("GET /jobs/:jobid", "4xx")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.calls.WithLabelValues("GET /jobs/:jobid", "timeout")))
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
