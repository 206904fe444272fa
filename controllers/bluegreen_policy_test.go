package controllers

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkbluegreendeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// livePolicy is an operator configuration a test changes while the operator runs.
type livePolicy struct {
	conf atomic.Pointer[map[string]string]
}

func (l *livePolicy) set(kv ...string) {
	conf := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		conf[kv[i]] = kv[i+1]
	}
	l.conf.Store(&conf)
}

func (l *livePolicy) get() map[string]string { return *l.conf.Load() }

// blueGreenPolicyOperator runs the blue/green operator with the operator-wide policy read from
// policy at every reconcile, as cmd/main.go wires it (webhooks are not part of this test).
func blueGreenPolicyOperator(flink *fakeflink.Server, policy *livePolicy) func(ctrl.Manager, record.EventRecorder) error {
	return func(mgr ctrl.Manager, rec record.EventRecorder) error {
		if err := deploymentController(flink)(mgr, rec); err != nil {
			return err
		}
		if err := snapshotController(flink)(mgr, rec); err != nil {
			return err
		}
		return (&flinkbluegreendeployment.FlinkBlueGreenDeploymentReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
			Validator: &validation.Validator{OperatorConfig: policy.get}}).SetupWithManager(mgr)
	}
}

func refusedBy(substr string) func(*flinkv1beta1.FlinkBlueGreenDeployment) bool {
	return func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
		c := meta.FindStatusCondition(bg.Status.Conditions, flinkbluegreendeployment.ConditionBlueGreenReady)
		return c != nil && c.Status == "False" && c.Reason == flinkbluegreendeployment.ReasonInvalid && strings.Contains(c.Message, substr) && strings.Contains(bg.Status.Error, substr)
	}
}

// podWithHostNetwork is a pod template the baseline level refuses.
func podWithHostNetwork() *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: native.MainContainer}}}}
}

// TestBlueGreenPolicyAtReconcile: a FlinkBlueGreenDeployment the operator-wide policy forbids
// (admitted before the policy changed, or with the webhooks off) is refused by the controller
// with the Ready condition and a Warning event naming the field, and nothing is created: no
// child FlinkDeployment, no Ingress. A running one keeps its Ingress as it was.
func TestBlueGreenPolicyAtReconcile(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	const name = "orders"
	const snippetField = "spec.ingress.annotations[nginx.ingress.kubernetes.io/configuration-snippet]"

	noChildrenNoIngress := func(t *testing.T, ns string) {
		t.Helper()
		// Long enough for the old controller to have created the blue child and the Ingress.
		time.Sleep(2 * time.Second)
		for _, child := range []string{name + "-blue", name + "-green"} {
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: child}, &flinkv1beta1.FlinkDeployment{})
			assert.True(t, apierrors.IsNotFound(err), "child %s: %v", child, err)
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: native.IngressName(name)}, &networkingv1.Ingress{})
		assert.True(t, apierrors.IsNotFound(err), "ingress: %v", err)
	}

	t.Run("an annotation outside the allowlist", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-policy-annotation")
		policy := &livePolicy{}
		policy.set("kubernetes.operator.ingress.annotations.allowed", "cert-manager.io/*")
		events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenPolicyOperator(fakeflink.New(t), policy)})
		bg := fixtures.NewBlueGreen(t, ns, name, "10 min")
		bg.Spec.Ingress.Annotations = map[string]string{"nginx.ingress.kubernetes.io/configuration-snippet": `more_set_headers "X: y";`}
		require.NoError(t, c.Create(ctx, bg))
		waitFor(t, c, ns, name, "refused", refusedBy(snippetField))
		events.seen(t, snippetField)
		noChildrenNoIngress(t, ns)
	})

	t.Run("a host outside the namespace's domains", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-policy-host")
		policy := &livePolicy{}
		policy.set("kubernetes.operator.ingress.hosts.allowed", "{{namespace}}.apps.example.com")
		events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenPolicyOperator(fakeflink.New(t), policy)})
		require.NoError(t, c.Create(ctx, fixtures.NewBlueGreen(t, ns, name, "10 min"))) // {{name}}.{{namespace}}.example.com
		waitFor(t, c, ns, name, "refused", refusedBy(`spec.ingress.template: Forbidden: host "orders.`+ns+`.example.com"`))
		events.seen(t, "kubernetes.operator.ingress.hosts.allowed")
		noChildrenNoIngress(t, ns)
	})

	t.Run("a template whose pods break the pod security level", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-policy-pods")
		policy := &livePolicy{}
		policy.set("kubernetes.operator.pod-security.level", "baseline")
		_, _ = startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenPolicyOperator(fakeflink.New(t), policy)})
		bg := fixtures.NewBlueGreen(t, ns, name, "10 min")
		bg.Spec.Template.Spec.PodTemplate = podWithHostNetwork()
		require.NoError(t, c.Create(ctx, bg))
		waitFor(t, c, ns, name, "refused", refusedBy("spec.template.spec.podTemplate: Forbidden"))
		noChildrenNoIngress(t, ns)
	})

	t.Run("the policy changes under a running resource: its Ingress is not changed", func(t *testing.T) {
		t.Parallel()
		ns := testEnv(t).NewNamespace(t, "bg-policy-change")
		flink := fakeflink.New(t)
		k := &cluster{t: t, c: c, flink: flink}
		policy := &livePolicy{}
		policy.set()
		_, _ = startManager(t, managerOptions{namespaces: []string{ns}, setup: blueGreenPolicyOperator(flink, policy)})
		activeBlue(t, c, k, ns, name, "10 min")

		policy.set("kubernetes.operator.ingress.annotations.allowed", "cert-manager.io/*")
		updateBlueGreenSpec(t, c, ns, name, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Ingress.Annotations = map[string]string{"nginx.ingress.kubernetes.io/configuration-snippet": "x"}
		})
		waitFor(t, c, ns, name, "refused", refusedBy(snippetField))
		time.Sleep(time.Second)
		ing := &networkingv1.Ingress{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: native.IngressName(name)}, ing))
		assert.NotContains(t, ing.Annotations, "nginx.ingress.kubernetes.io/configuration-snippet")

		// Allowed again: the refusal clears and the Ingress follows the spec.
		policy.set()
		updateBlueGreenSpec(t, c, ns, name, func(bg *flinkv1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Ingress.Annotations["cert-manager.io/cluster-issuer"] = "letsencrypt"
		})
		wait.For(t, 30*time.Second, "ingress annotations applied", func() bool {
			return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: native.IngressName(name)}, ing) == nil &&
				ing.Annotations["cert-manager.io/cluster-issuer"] == "letsencrypt"
		}, func() string { return "" })
		waitFor(t, c, ns, name, "refusal cleared", func(bg *flinkv1beta1.FlinkBlueGreenDeployment) bool {
			return bg.Status.Error == "" && meta.IsStatusConditionTrue(bg.Status.Conditions, flinkbluegreendeployment.ConditionBlueGreenReady)
		})
	})
}
