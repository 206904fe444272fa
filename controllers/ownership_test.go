package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/test/wait"
)

// errorReported: the resource's status carries an error.
func errorReported(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.Error != "" }

// TestForeignObjectsAreLeftAlone: a tenant who may create FlinkDeployments
// cannot use the operator to overwrite or delete another application's objects by naming a
// FlinkDeployment after them.
func TestForeignObjectsAreLeftAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a Service of another application is not taken over", func(t *testing.T) {
		t.Parallel()
		ns, _, _, events := newScenario(t, "foreign-svc")
		c := testEnv(t).Client
		// Without HA the cluster's internal Service is named like the FlinkDeployment.
		web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
		require.NoError(t, c.Create(ctx, web))

		require.NoError(t, c.Create(ctx, fixtures.NewDeployment(t, ns, "x")))
		d := waitFor(t, c, ns, "x", "an error reported", errorReported)
		assert.Equal(t, flinkv1beta1.ErrorReasonForeignObject, flinkv1beta1.ErrorReason(d.Status.Error), d.Status.Error)
		if stalled := meta.FindStatusCondition(d.Status.Conditions, lifecycle.ConditionStalled); assert.NotNil(t, stalled) {
			assert.Equal(t, string(flinkv1beta1.ErrorReasonForeignObject), stalled.Reason, "a human must remove or rename the object")
		}
		wait.For(t, 10*time.Second, "a Warning event naming the Service", func() bool {
			return events.has("Warning " + reconciler.ReasonForeignObject + " Service " + ns + "/x already exists")
		})

		live := &corev1.Service{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(web), live))
		assert.Equal(t, web.ResourceVersion, live.ResourceVersion, "the Service was written")
		assert.Equal(t, map[string]string{"app": "web"}, live.Spec.Selector)
		assert.Empty(t, live.OwnerReferences)
	})

	t.Run("a Deployment of another application is neither taken over nor deleted", func(t *testing.T) {
		t.Parallel()
		ns, _, _, events := newScenario(t, "foreign-deploy")
		c := testEnv(t).Client
		labels := map[string]string{"app": "web"}
		web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "y", Labels: labels},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}}
		require.NoError(t, c.Create(ctx, web))

		require.NoError(t, c.Create(ctx, fixtures.NewDeployment(t, ns, "y")))
		d := waitFor(t, c, ns, "y", "an error reported", errorReported)
		assert.Equal(t, flinkv1beta1.ErrorReasonForeignObject, flinkv1beta1.ErrorReason(d.Status.Error), d.Status.Error)
		wait.For(t, 10*time.Second, "a Warning event naming the Deployment", func() bool {
			return events.has("Warning " + reconciler.ReasonForeignObject + " Deployment " + ns + "/y already exists")
		})

		require.NoError(t, c.Delete(ctx, get(t, c, ns, "y")))
		webTouched := func() bool {
			live := &appsv1.Deployment{}
			err := c.Get(ctx, client.ObjectKeyFromObject(web), live)
			return err != nil || live.DeletionTimestamp != nil
		}
		wait.For(t, 30*time.Second, "the FlinkDeployment deleted (or the foreign Deployment with it)", func() bool {
			return webTouched() || apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "y"}, &flinkv1beta1.FlinkDeployment{}))
		}, func() string { return "still there" })

		live := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(web), live), "the foreign Deployment was deleted")
		assert.Nil(t, live.DeletionTimestamp, "the foreign Deployment is being deleted")
		assert.Equal(t, web.ResourceVersion, live.ResourceVersion, "the foreign Deployment was written")
	})
}
