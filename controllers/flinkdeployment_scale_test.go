package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/test/wait"
)

func withConfig(t *testing.T, spec *flinkv1beta1.FlinkDeploymentSpec, kv map[string]string) *flinkv1beta1.FlinkDeploymentSpec {
	t.Helper()
	c := spec.DeepCopy()
	flat, err := c.FlinkConfiguration.Flatten()
	require.NoError(t, err)
	for k, v := range kv {
		if v == "" {
			delete(flat, k)
		} else {
			flat[k] = v
		}
	}
	c.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(flat)
	return c
}

func TestInPlaceScaleTarget(t *testing.T) {
	t.Parallel()
	base := withConfig(t, &fixtures.NewDeployment(t, "ns", "job").Spec, map[string]string{
		"jobmanager.scheduler": "adaptive", jobs.KeyParallelismOverrides: "a:2,b:2"})
	adaptive := flinkconf.Config{"jobmanager.scheduler": "adaptive"}
	tests := []struct {
		name    string
		desired *flinkv1beta1.FlinkDeploymentSpec
		conf    flinkconf.Config
		want    map[string]int
	}{
		{"overrides changed", withConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:1"}), adaptive, map[string]int{"a": 4, "b": 1}},
		{"an override added", withConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:2,b:2,c:3"}), adaptive, map[string]int{"a": 2, "b": 2, "c": 3}},
		{"an override removed: upgrade", withConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4"}), adaptive, nil},
		{"overrides and image changed: upgrade", func() *flinkv1beta1.FlinkDeploymentSpec {
			d := withConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:2"})
			d.Image = "flink:1.20.1"
			return d
		}(), adaptive, nil},
		{"default scheduler: upgrade", withConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:2"}), flinkconf.Config{}, nil},
		{"disabled: upgrade", withConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:2"}),
			flinkconf.Config{"jobmanager.scheduler": "adaptive", options.InPlaceScaling.Key: "false"}, nil},
		{"Flink 1.17: upgrade", func() *flinkv1beta1.FlinkDeploymentSpec {
			d := withConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:2"})
			d.FlinkVersion = "v1_17"
			return d
		}(), adaptive, nil},
		{"standalone: upgrade", func() *flinkv1beta1.FlinkDeploymentSpec {
			d := withConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a:4,b:2"})
			d.Mode = flinkv1beta1.DeploymentModeStandalone
			return d
		}(), adaptive, nil},
		{"malformed: upgrade (validation reports it)", withConfig(t, base, map[string]string{jobs.KeyParallelismOverrides: "a=4"}), adaptive, nil},
		{"job parallelism changed: upgrade", func() *flinkv1beta1.FlinkDeploymentSpec {
			d := base.DeepCopy()
			d.Job.Parallelism = 8
			return d
		}(), adaptive, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, flinkdeployment.InPlaceScaleTarget(base, tt.desired, tt.conf))
		})
	}
	assert.True(t, flinkconf.AtLeast("v2_0", 1, 18))
	assert.True(t, flinkconf.AtLeast("v1_18", 1, 18))
	assert.False(t, flinkconf.AtLeast("v1_17", 1, 18))
}

// TestInPlaceScaling: a per-vertex parallelism change on the adaptive scheduler rescales the
// running job without a restart; removing an override falls back to an upgrade.
func TestInPlaceScaling(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns, flink, k, events := newScenario(t, "scaling")
	const name = "job"
	dep := fixtures.NewDeployment(t, ns, name)
	dep.Spec = *withConfig(t, &dep.Spec, map[string]string{"jobmanager.scheduler": "adaptive", jobs.KeyParallelismOverrides: "source:2,sink:2"})
	require.NoError(t, c.Create(ctx, dep))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	jobID := d.Status.JobStatus.JobID
	k.run(ns, name, jobID)
	flink.SetVertices(jobID, map[string]int{"source": 2, "sink": 2})
	waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
	jm := k.jobManager(ns, name)

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := get(t, c, ns, name)
		d.Spec = *withConfig(t, &d.Spec, map[string]string{jobs.KeyParallelismOverrides: "source:4,sink:1"})
		return c.Update(ctx, d)
	}))
	waitFor(t, c, ns, name, "scaled in place", func(d *flinkv1beta1.FlinkDeployment) bool {
		return flink.Vertices(jobID)["source"] == 4
	})
	assert.Equal(t, map[string]int{"source": 4, "sink": 1}, flink.Vertices(jobID))
	// The event follows Flink's answer: it is waited for, not raced.
	wait.For(t, 10*time.Second, "events.has(\"Scaled the running job in place: source:4,sink:1\")", func() bool { return events.has("Scaled the running job in place: source:4,sink:1") })
	d = waitFor(t, c, ns, name, "recorded as deployed", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && d.Status.ObservedGeneration == d.Generation
	})
	assert.Contains(t, d.Status.ReconciliationStatus.LastReconciledSpec, "source:4,sink:1")
	assert.Equal(t, jobID, d.Status.JobStatus.JobID, "same job")
	assert.Equal(t, jm.UID, k.jobManager(ns, name).UID, "same JobManager: no restart")
	assert.Nil(t, k.jobManager(ns, name).DeletionTimestamp)
	assert.Empty(t, flink.Stops(), "no savepoint")

	// Removing an override needs the job's own parallelism back: a full (savepoint) upgrade.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := get(t, c, ns, name)
		d.Spec = *withConfig(t, &d.Spec, map[string]string{jobs.KeyParallelismOverrides: "source:4"})
		return c.Update(ctx, d)
	}))
	waitFor(t, c, ns, name, "upgrading", func(d *flinkv1beta1.FlinkDeployment) bool {
		jm := k.jobManager(ns, name)
		return jm != nil && !jm.DeletionTimestamp.IsZero()
	})
	assert.NotEmpty(t, flink.Stops(), "stopped with a savepoint")
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
	replicas, ok := flinkdeployment.ReactiveScaleTarget(&base, parallelism(6), reactive)
	assert.True(t, ok)
	assert.Equal(t, int32(3), replicas, "ceil(6 / 2 slots)")

	withReplicas := base.DeepCopy()
	withReplicas.TaskManager.Replicas = fixtures.Ptr(int32(5))
	replicas, ok = flinkdeployment.ReactiveScaleTarget(&base, withReplicas, reactive)
	assert.True(t, ok)
	assert.Equal(t, int32(5), replicas)

	_, ok = flinkdeployment.ReactiveScaleTarget(&base, parallelism(6), flinkconf.Config{"taskmanager.numberOfTaskSlots": "2"})
	assert.False(t, ok, "not reactive: upgrade")
	image := parallelism(6)
	image.Image = "flink:1.20.1"
	_, ok = flinkdeployment.ReactiveScaleTarget(&base, image, reactive)
	assert.False(t, ok, "more than the scale changed: upgrade")
	nativeMode := parallelism(6)
	nativeMode.Mode = flinkv1beta1.DeploymentModeNative
	_, ok = flinkdeployment.ReactiveScaleTarget(&base, nativeMode, reactive)
	assert.False(t, ok)
	_, ok = flinkdeployment.ReactiveScaleTarget(&base, base.DeepCopy(), reactive)
	assert.False(t, ok, "nothing changed")
}

// TestReactiveScaling: a standalone reactive-mode cluster scales its TaskManager Deployment
// for a parallelism change, without touching the job.
func TestReactiveScaling(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns, flink, k, events := newScenario(t, "reactive")
	const name = "job"
	dep := fixtures.NewDeployment(t, ns, name)
	dep.Spec.Mode = flinkv1beta1.DeploymentModeStandalone
	dep.Spec = *withConfig(t, &dep.Spec, map[string]string{"scheduler-mode": "reactive"})
	require.NoError(t, c.Create(ctx, dep))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	jobID := d.Status.JobStatus.JobID
	k.run(ns, name, jobID)
	waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
	jm := k.jobManager(ns, name)

	setParallelism(t, c, ns, name, 6)
	wait.For(t, 20*time.Second, "TaskManagers scaled to ceil(6/2)", func() bool {
		tm := &appsv1.Deployment{}
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: native.TaskManagerDeploymentName(name)}, tm) == nil &&
			tm.Spec.Replicas != nil && *tm.Spec.Replicas == 3
	})
	d = waitFor(t, c, ns, name, "recorded", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ObservedGeneration == d.Generation && strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, `"parallelism":6`)
	})
	assert.Equal(t, jobID, d.Status.JobStatus.JobID)
	assert.Equal(t, jm.UID, k.jobManager(ns, name).UID, "no restart")
	assert.Nil(t, k.jobManager(ns, name).DeletionTimestamp)
	assert.Empty(t, flink.Stops())
	events.seen(t, "Scaled the TaskManagers to 3 (reactive mode); the job adapts without a restart")
}
