package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestRecreatedResourceDoesNotTakeAnotherOwnersJobManager: a FlinkDeployment deleted and created
// again with its old status restored (a backup tool restoring status) finds the JobManager
// Deployment of the deleted resource still there, with the generation annotation its restored
// status names. That JobManager is not this resource's (its ownerReference names the deleted
// one's UID): observe must not take it for the deployment of the upgrade the status records as
// in progress, or the resource is DEPLOYED with nothing deployed (here: its job stopped with a
// savepoint, left FINISHED on the old cluster).
func TestRecreatedResourceDoesNotTakeAnotherOwnersJobManager(t *testing.T) {
	t.Parallel()
	fake := fakeflink.New(t)
	c := testEnv(t).Client
	capture := loadCapture(t, "s2-savepoint/01-running-stable")
	d := capture.deployments[0]
	jobID := d.Status.JobStatus.JobID
	// The restored status: a savepoint upgrade to parallelism 2 whose stop already ran.
	d.Spec.Job.Parallelism = 2
	rs := &d.Status.ReconciliationStatus
	require.Contains(t, rs.LastReconciledSpec, `"parallelism":1,`)
	rs.LastReconciledSpec = strings.Replace(rs.LastReconciledSpec, `"parallelism":1,`, `"parallelism":2,`, 1)
	rs.State = flinkv1beta1.ReconciliationUpgrading
	d.Status.JobStatus.State = flinkv1beta1.JobStatusFinished
	d.Status.JobStatus.UpgradeSavepointPath = "file:///flink-data/savepoints/savepoint-f46373-0123456789ab"
	ns := adoptCapture(t, c, fake, capture)
	fake.SetJob(jobID, "FINISHED")

	// The JobManager is the deleted resource's.
	jm := &appsv1.Deployment{}
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: native.JobManagerDeploymentName(d.Name)}, jm))
	require.Equal(t, itoa(d.Status.ObservedGeneration), jm.Annotations[native.AnnotationGeneration], "the generation the restored status names")
	refs := jm.GetOwnerReferences()
	require.Len(t, refs, 1)
	refs[0].UID = "0a1b2c3d-0000-4000-8000-00000000dead"
	jm.SetOwnerReferences(refs)
	require.NoError(t, c.Update(context.Background(), jm))
	oldJM := jm.UID

	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: adoptingControllers(fake)})
	events.seen(t, "does not belong to this FlinkDeployment")
	wait.Never(t, 1500*time.Millisecond, "the upgrade was taken for deployed by another owner's JobManager", func() bool {
		return get(t, c, ns, d.Name).Status.ReconciliationStatus.State != flinkv1beta1.ReconciliationUpgrading
	})
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: jm.Name}, jm))
	assert.Equal(t, oldJM, jm.UID)
	assert.True(t, jm.DeletionTimestamp.IsZero(), "another owner's JobManager is left alone")
	assert.Equal(t, []metav1.OwnerReference(refs), jm.GetOwnerReferences(), "another owner's JobManager is left unchanged")
}
