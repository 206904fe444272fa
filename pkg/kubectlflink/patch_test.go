package kubectlflink

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// TestSuspendResumeRestart: each command patches one field of the spec and says what it
// changed; a second suspend changes nothing and says so; restart counts the nonce up from
// none; a session job is addressed by kind.
func TestSuspendResumeRestart(t *testing.T) {
	j := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job"}}
	j.Spec.Job = &flinkv1beta1.JobSpec{}
	f := newFakeCluster(t, interceptor.Funcs{}, runningDeployment(), j)
	get := func() *flinkv1beta1.FlinkDeployment {
		d := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, f.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app"}, d))
		return d
	}

	assert.Equal(t, "flinkdeployment ns/app patched: spec.job.state: running -> suspended\n", mustRun(t, f, "ns", "suspend", "app"))
	assert.Equal(t, flinkv1beta1.JobStateSuspended, get().Spec.Job.State)
	assert.Equal(t, "flinkdeployment ns/app: already suspended; nothing changed\n", mustRun(t, f, "ns", "suspend", "app"))
	assert.Equal(t, "flinkdeployment ns/app patched: spec.job.state: suspended -> running\n", mustRun(t, f, "ns", "resume", "app"))
	assert.Equal(t, flinkv1beta1.JobStateRunning, get().Spec.Job.State)

	assert.Equal(t, "flinkdeployment ns/app patched: spec.restartNonce: 0 -> 1\n", mustRun(t, f, "ns", "restart", "app"))
	assert.Equal(t, "flinkdeployment ns/app patched: spec.restartNonce: 1 -> 2\n", mustRun(t, f, "ns", "restart", "app"))
	assert.Equal(t, int64(2), *get().Spec.RestartNonce)
	assert.Equal(t, flinkv1beta1.UpgradeModeSavepoint, get().Spec.Job.UpgradeMode, "nothing else changed")

	assert.Equal(t, "flinksessionjob ns/job patched: spec.job.state: running -> suspended\n", mustRun(t, f, "ns", "suspend", "sessionjob/job"))
}

// TestPatchErrors: a session cluster has no job to suspend; snapshots are not restarted; a
// write conflict (someone changed the resource since it was read) is an error, not a silent
// overwrite.
func TestPatchErrors(t *testing.T) {
	session := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "session"}}
	f := newFakeCluster(t, interceptor.Funcs{}, session)
	_, err := f.run(t, "ns", "suspend", "session")
	require.ErrorContains(t, err, "flinkdeployment ns/session is a session cluster, which has no job: suspend its FlinkSessionJobs instead")
	_, err = f.run(t, "ns", "restart", "snapshot/x")
	require.ErrorContains(t, err, "not found")
	_, err = f.run(t, "ns", "resume", "missing")
	require.ErrorContains(t, err, "flinkdeployment ns/missing not found")

	// The patch carries the resourceVersion read: a stale one is refused.
	readStale := false
	stale := newFakeCluster(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		err := c.Get(ctx, key, obj, opts...)
		if readStale {
			obj.SetResourceVersion("1")
		}
		return err
	}}, runningDeployment())
	d := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, stale.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app"}, d))
	d.Labels = map[string]string{"changed": "meanwhile"}
	require.NoError(t, stale.client.Update(context.Background(), d))
	readStale = true
	_, err = stale.run(t, "ns", "restart", "app")
	require.ErrorContains(t, err, "patch flinkdeployment ns/app (spec.restartNonce: 0 -> 1)")
}
