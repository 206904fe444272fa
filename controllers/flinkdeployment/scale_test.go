package flinkdeployment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

func TestInPlaceScaleTarget(t *testing.T) {
	t.Parallel()
	base := fixtures.WithConfig(t, &fixtures.NewDeployment(t, "ns", "job").Spec, map[string]string{
		"jobmanager.scheduler": "adaptive", jobs.KeyParallelismOverrides: "a:2,b:2"})
	adaptive := flinkconf.Config{"jobmanager.scheduler": "adaptive"}
	tests := []struct {
		name    string
		desired *flinkv1beta1.FlinkDeploymentSpec
		conf    flinkconf.Config
		want    map[string]int
	}{
		{"overrides changed", fixtures.WithConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:1"}), adaptive, map[string]int{"a": 4, "b": 1}},
		{"an override added", fixtures.WithConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:2,b:2,c:3"}), adaptive, map[string]int{"a": 2, "b": 2, "c": 3}},
		{"an override removed: upgrade", fixtures.WithConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4"}), adaptive, nil},
		{"overrides and image changed: upgrade", func() *flinkv1beta1.FlinkDeploymentSpec {
			d := fixtures.WithConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:2"})
			d.Image = "flink:1.20.1"
			return d
		}(), adaptive, nil},
		{"default scheduler: upgrade", fixtures.WithConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:2"}), flinkconf.Config{}, nil},
		{"disabled: upgrade", fixtures.WithConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:2"}),
			flinkconf.Config{"jobmanager.scheduler": "adaptive", options.InPlaceScaling.Key: "false"}, nil},
		{"Flink 1.17: upgrade", func() *flinkv1beta1.FlinkDeploymentSpec {
			d := fixtures.WithConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:2"})
			d.FlinkVersion = "v1_17"
			return d
		}(), adaptive, nil},
		{"standalone: upgrade", func() *flinkv1beta1.FlinkDeploymentSpec {
			d := fixtures.WithConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:2"})
			d.Mode = flinkv1beta1.DeploymentModeStandalone
			return d
		}(), adaptive, nil},
		{"malformed: upgrade (validation reports it)", fixtures.WithConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a=4"}), adaptive, nil},
		{"job parallelism changed: upgrade", func() *flinkv1beta1.FlinkDeploymentSpec {
			d := base.DeepCopy()
			d.Job.Parallelism = 8
			return d
		}(), adaptive, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, inPlaceScaleTarget(base, tt.desired, tt.conf))
		})
	}
	assert.True(t, flinkconf.AtLeast("v2_0", 1, 18))
	assert.True(t, flinkconf.AtLeast("v1_18", 1, 18))
	assert.False(t, flinkconf.AtLeast("v1_17", 1, 18))
}

func TestReactiveScaleTarget(t *testing.T) {
	t.Parallel()
	base := fixtures.NewDeployment(t, "ns", "job").Spec
	base.Mode = flinkv1beta1.DeploymentModeStandalone
	reactive := flinkconf.Config{"scheduler-mode": "reactive", "taskmanager.numberOfTaskSlots": "2", "parallelism.default": "6"}
	parallelism := func(p int32) *flinkv1beta1.FlinkDeploymentSpec {
		d := base.DeepCopy()
		d.Job.Parallelism = p
		return d
	}
	replicas, ok := reactiveScaleTarget(&base, parallelism(6), reactive)
	assert.True(t, ok)
	assert.Equal(t, int32(3), replicas, "ceil(6 / 2 slots)")

	withReplicas := base.DeepCopy()
	withReplicas.TaskManager.Replicas = fixtures.Ptr(int32(5))
	replicas, ok = reactiveScaleTarget(&base, withReplicas, reactive)
	assert.True(t, ok)
	assert.Equal(t, int32(5), replicas)

	_, ok = reactiveScaleTarget(&base, parallelism(6), flinkconf.Config{"taskmanager.numberOfTaskSlots": "2"})
	assert.False(t, ok, "not reactive: upgrade")
	image := parallelism(6)
	image.Image = "flink:1.20.1"
	_, ok = reactiveScaleTarget(&base, image, reactive)
	assert.False(t, ok, "more than the scale changed: upgrade")
	nativeMode := parallelism(6)
	nativeMode.Mode = flinkv1beta1.DeploymentModeNative
	_, ok = reactiveScaleTarget(&base, nativeMode, reactive)
	assert.False(t, ok)
	_, ok = reactiveScaleTarget(&base, base.DeepCopy(), reactive)
	assert.False(t, ok, "nothing changed")
}

// TestRescaleStep is the specification of what an in-place rescale in flight comes to at one
// look (rescaleStep).
func TestRescaleStep(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	asked := flinkv1beta1.Rescale{RequestedAt: metav1.NewTime(t0), From: "a:2,b:2", To: "a:4,b:1"}
	timedOut := asked
	timedOut.TimedOut, timedOut.Reported = true, "a:2,b:1"
	const timeout = time.Minute
	running := flinkv1beta1.JobStatusRunning
	tests := []struct {
		name     string
		r        flinkv1beta1.Rescale
		job      flinkv1beta1.JobStatusState
		reported map[string]int
		at       time.Duration
		want     rescaleOutcome
		reports  string // what the next rescale records as reported; "" when it is over
		timedOut bool
	}{
		{"Flink reports the new parallelism", asked, running, map[string]int{"a": 4, "b": 1, "c": 7}, time.Second, rescaleReached, "", false},
		{"part of it", asked, running, map[string]int{"a": 3, "b": 1}, time.Second, rescaleWaiting, "a:3,b:1", false},
		{"a vertex Flink does not list is not rescaled", asked, running, map[string]int{"a": 4}, time.Second, rescaleWaiting, "a:4", false},
		{"Flink not read: still waiting", asked, running, nil, time.Second, rescaleWaiting, "", false},
		{"restarting the tasks to rescale", asked, flinkv1beta1.JobStatusRestarting, map[string]int{"a": 2, "b": 2}, time.Second, rescaleWaiting, "a:2,b:2", false},
		{"past the timeout", asked, running, map[string]int{"a": 2, "b": 1}, timeout, rescaleTimedOut, "a:2,b:1", true},
		{"timed out already: said once", timedOut, running, map[string]int{"a": 2, "b": 1}, 2 * timeout, rescaleWaiting, "a:2,b:1", true},
		{"reached after the timeout (slots came)", timedOut, running, map[string]int{"a": 4, "b": 1}, 2 * timeout, rescaleReached, "", false},
		{"the job failed", asked, flinkv1beta1.JobStatusFailed, nil, time.Second, rescaleAbandoned, "", false},
		{"the job was suspended", asked, flinkv1beta1.JobStatusSuspended, nil, time.Second, rescaleAbandoned, "", false},
		{"not written by this operator", flinkv1beta1.Rescale{To: "a=4"}, running, nil, time.Second, rescaleAbandoned, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, got := rescaleStep(tt.r, tt.job, tt.reported, t0.Add(tt.at), timeout)
			assert.Equal(t, tt.want, got)
			if tt.want == rescaleReached || tt.want == rescaleAbandoned {
				assert.Nil(t, next, "over: status.rescale goes")
				return
			}
			require.NotNil(t, next)
			assert.Equal(t, tt.r.To, next.To)
			assert.Equal(t, tt.r.From, next.From)
			assert.Equal(t, tt.reports, next.Reported)
			assert.Equal(t, tt.timedOut, next.TimedOut)
		})
	}
	assert.Equal(t, "a:4,b:1,c:10", formatParallelism(map[string]int{"c": 10, "b": 1, "a": 4}))
}

// TestRescaleFrom: what a rescale starts from is the deployed override, so a retry after Flink
// was asked (its requirements already at the target) still says where it came from.
func TestRescaleFrom(t *testing.T) {
	t.Parallel()
	deployed := fixtures.WithConfig(t, &fixtures.NewDeployment(t, "ns", "job").Spec, map[string]string{jobs.KeyParallelismOverrides: "a:2"})
	bounds := func(upper int) flink.VertexResources {
		return flink.VertexResources{Parallelism: flink.ParallelismBounds{LowerBound: 1, UpperBound: upper}}
	}
	target := map[string]int{"a": 4, "b": 1}
	assert.Equal(t, map[string]int{"a": 2, "b": 3}, rescaleFrom(deployed, map[string]flink.VertexResources{"a": bounds(2), "b": bounds(3), "c": bounds(5)}, target),
		"the override, else Flink's upper bound; only the vertices asked for")
	assert.Equal(t, map[string]int{"a": 2, "b": 1}, rescaleFrom(deployed, map[string]flink.VertexResources{"a": bounds(4), "b": bounds(1)}, target),
		"a retry: Flink's requirements are at the target already, the override is not")
}
