package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/operatorconfig"
)

// TestWebhookAppliesTheLiveOperatorPolicy: the admission webhook's validator reads the operator
// configuration in force (review finding F11), so a privileged pod template is refused at
// admission once kubernetes.operator.pod-security.level is baseline, and allowed again when the
// configuration changes back, without a restart.
func TestWebhookAppliesTheLiveOperatorPolicy(t *testing.T) {
	store := operatorconfig.NewStore(operatorconfig.Settings{Defaults: flinkconf.Defaults{
		Operator: map[string]string{"kubernetes.operator.pod-security.level": "baseline"}}})
	o := &options{jarSchemes: "https", live: store}
	v := o.validator()

	dep := &flinkv1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "privileged", Namespace: "tenant"},
		Spec: flinkv1beta1.FlinkDeploymentSpec{
			Image: "flink:1.20", ServiceAccount: "flink", FlinkVersion: flinkv1beta1.FlinkVersion("v1_20"),
			JobManager:  &flinkv1beta1.JobManagerSpec{Resource: &flinkv1beta1.Resource{CPU: ptr.To(1.0), Memory: "1g"}},
			TaskManager: &flinkv1beta1.TaskManagerSpec{Resource: &flinkv1beta1.Resource{CPU: ptr.To(1.0), Memory: "1g"}},
			PodTemplate: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "flink-main-container", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}},
		},
	}
	errs := v.ValidateDeployment(dep, nil)
	require.NotEmpty(t, errs, "baseline refuses a privileged container")
	assert.Contains(t, errs.ToAggregate().Error(), "spec.podTemplate")

	store.Set(operatorconfig.Settings{})
	assert.Empty(t, v.ValidateDeployment(dep, nil), "the default level (privileged, as upstream) allows it")
}
