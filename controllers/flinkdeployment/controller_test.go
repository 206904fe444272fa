package flinkdeployment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/operatorconfig"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// The reconciler validates again with the operator-wide policy of the operator configuration
// in force: a resource admitted before the policy was set (or without the webhook) is refused.
func TestReconcileValidationAppliesTheOperatorPolicy(t *testing.T) {
	t.Parallel()
	dep := fixtures.NewDeployment(t, "ns", "x")
	dep.Spec.PodTemplate = &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true}}
	baseline := map[string]string{options.PodSecurityLevel.Key: "baseline"}

	fixed := &FlinkDeploymentReconciler{Validator: &validation.Validator{}, Defaults: flinkconf.Defaults{Operator: baseline}}
	assert.NotEmpty(t, fixed.validator().ValidateDeployment(dep, nil), "the fixed operator configuration")

	live := operatorconfig.NewStore(operatorconfig.Settings{})
	dynamic := &FlinkDeploymentReconciler{Validator: &validation.Validator{}, ReconcilerOptions: reconciler.ReconcilerOptions{Live: live}}
	assert.Empty(t, dynamic.validator().ValidateDeployment(dep, nil), "privileged by default")
	live.Set(operatorconfig.Settings{Defaults: flinkconf.Defaults{Operator: baseline}})
	errs := dynamic.validator().ValidateDeployment(dep, nil)
	require.Len(t, errs, 2)
	assert.Contains(t, errs[0].Error(), "spec.podTemplate: Forbidden: the JobManager pod violates the pod security level \"baseline\"")
}
