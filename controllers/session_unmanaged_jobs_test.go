package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/wait"
)

// readySession creates an HA session cluster (no FlinkSessionJobs) and waits until it is
// STABLE, with a job submitted outside the operator (the CLI, the SQL gateway) running on it.
func readySession(t *testing.T, c client.Client, k *cluster, ns string, conf map[string]string, cliJob string) {
	t.Helper()
	dep := haDeployment(t, ns, "session", conf)
	dep.Spec.Job = nil
	require.NoError(t, c.Create(context.Background(), dep))
	waitFor(t, c, ns, "session", "deployed", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
	})
	k.run(ns, "session", cliJob)
	waitFor(t, c, ns, "session", "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
}

// TestSessionClusterDeletionWaitsForUnmanagedJobs: deleting a session cluster whose JobManager
// runs a job no FlinkSessionJob manages waits, with a Warning CleanupFailed naming the job
// (upstream's SessionReconciler.cleanupInternal with
// kubernetes.operator.session.deletion.block-on-unmanaged-jobs, default true): the cluster and
// the job's HA metadata stay. Jobs that ended do not block; once the job is cancelled, the
// cluster goes.
func TestSessionClusterDeletionWaitsForUnmanagedJobs(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, fake, k, events := newScenario(t, "unmanaged-jobs")
	cliJob, ended := "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	readySession(t, c, k, ns, nil, cliJob)
	fake.SetJob(ended, "FINISHED")
	haBefore := haConfigMaps(t, c, ns, "session")
	require.NotEmpty(t, haBefore)

	require.NoError(t, c.Delete(context.Background(), get(t, c, ns, "session")))
	events.seen(t, "non terminated jobs ["+cliJob+"]")
	wait.Never(t, 1500*time.Millisecond, "the session cluster was deleted under a running job", func() bool {
		jm := k.jobManager(ns, "session")
		return jm == nil || !jm.DeletionTimestamp.IsZero()
	})
	assert.ElementsMatch(t, haBefore, haConfigMaps(t, c, ns, "session"), "the running job's HA metadata is kept")
	assert.False(t, events.has(ended), "an ended job does not block")
	assert.Equal(t, "RUNNING", fake.Job(cliJob), "the operator does not cancel a job it does not manage")

	fake.SetJob(cliJob, "CANCELED")
	k.collect(ns, "session")
	wait.For(t, 20*time.Second, "the session cluster goes once its jobs ended", func() bool {
		return apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "session"}, &flinkv1beta1.FlinkDeployment{}))
	})
}

// TestSessionClusterDeletionWithoutBlockOnUnmanagedJobs: with the option false (or its
// deprecated key kubernetes.operator.session.block-on-unmanaged-jobs false), a running
// unmanaged job does not keep the session cluster.
func TestSessionClusterDeletionWithoutBlockOnUnmanagedJobs(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	for _, key := range []string{"kubernetes.operator.session.deletion.block-on-unmanaged-jobs", "kubernetes.operator.session.block-on-unmanaged-jobs"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			ns, _, k, _ := newScenario(t, "unmanaged-not-blocking")
			readySession(t, c, k, ns, map[string]string{key: "false"}, "0123456789abcdef0123456789abcdef")
			require.NoError(t, c.Delete(context.Background(), get(t, c, ns, "session")))
			k.collect(ns, "session")
			wait.For(t, 20*time.Second, "the session cluster goes", func() bool {
				return apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "session"}, &flinkv1beta1.FlinkDeployment{}))
			})
		})
	}
}
