package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// Where resources are sent is the administrator's decision: a resource cannot name extension
// endpoints (they would be ignored silently otherwise).
func TestResourceCannotSetExtensionEndpoints(t *testing.T) {
	dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "orders"},
		Spec: flinkv1beta1.FlinkDeploymentSpec{FlinkConfiguration: flinkv1beta1.FlinkConfiguration{Raw: []byte(
			`{"kubernetes.operator.extension.listeners": "[{name: x, url: 'https://attacker.example.com'}]",
			  "kubernetes.operator.extension.allowed-hosts": "attacker.example.com"}`)}}}
	msgs := (&Validator{}).ValidateDeployment(dep, nil).ToAggregate().Error()
	for _, key := range []string{"kubernetes.operator.extension.listeners", "kubernetes.operator.extension.allowed-hosts"} {
		assert.Contains(t, msgs, "spec.flinkConfiguration["+key+"]: Forbidden: an operator-wide policy, set in the operator configuration only")
	}
}
