package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestCanaryResourcesAreNotReconciled: resources labelled flink.apache.org/canary=true exist
// only to tell whether the operator reconciles (upstream's CanaryResourceManager): the shape of
// upstream's examples/canary.yaml, with no spec, gets no finalizer, no status, no events and
// no cluster; deleting one is immediate. A session job canary is treated the same.
func TestCanaryResourcesAreNotReconciled(t *testing.T) {
	t.Parallel()
	fake := fakeflink.New(t)
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "canary")
	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: adoptingControllers(fake)})

	canary := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: canary
  labels:
    "flink.apache.org/canary": "true"
`), canary))
	canary.Namespace = ns
	require.NoError(t, c.Create(ctx, canary))
	jobCanary := &flinkv1beta1.FlinkSessionJob{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
apiVersion: flink.apache.org/v1beta1
kind: FlinkSessionJob
metadata:
  name: canary-job
  labels:
    "flink.apache.org/canary": "true"
`), jobCanary))
	jobCanary.Namespace = ns
	require.NoError(t, c.Create(ctx, jobCanary))

	untouched := func() string {
		d := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(canary), d))
		j := &flinkv1beta1.FlinkSessionJob{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(jobCanary), j))
		switch {
		case len(d.Finalizers) > 0 || len(j.Finalizers) > 0:
			return "a canary got a finalizer"
		case d.Status.LifecycleState != "" || d.Status.ReconciliationStatus.LastReconciledSpec != "" || d.Status.Error != "":
			return "the canary FlinkDeployment got a status"
		case j.Status.LifecycleState != "" || j.Status.ReconciliationStatus.LastReconciledSpec != "" || j.Status.Error != "":
			return "the canary FlinkSessionJob got a status"
		case events.len() > 0:
			return "events were recorded: " + strings.Join(events.since(0), "; ")
		case !apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "canary"}, &appsv1.Deployment{})):
			return "a cluster was deployed for the canary"
		}
		return ""
	}
	wait.Never(t, 3*time.Second, "canaries are not reconciled", func() bool { return untouched() != "" })
	assert.Empty(t, untouched())

	require.NoError(t, c.Delete(ctx, canary))
	require.NoError(t, c.Delete(ctx, jobCanary))
	wait.For(t, 10*time.Second, "canaries are deleted at once", func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(canary), &flinkv1beta1.FlinkDeployment{})) &&
			apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(jobCanary), &flinkv1beta1.FlinkSessionJob{}))
	})
}
