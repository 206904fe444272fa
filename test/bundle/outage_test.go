package bundle_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// webhookTimeoutSeconds is how long the API server waits for a webhook before failing the
// request (failurePolicy Fail); its default, 10 s, held every write of a Flink resource that long
// while the operator hung.
const webhookTimeoutSeconds = 5

// notBeingDeleted is the match condition that lets updates of objects being deleted (finalizer
// removal) skip the webhooks.
var notBeingDeleted = admissionregistrationv1.MatchCondition{
	Name: "not-being-deleted", Expression: "oldObject == null || !has(oldObject.metadata.deletionTimestamp)"}

// controllerRuntimeShutdown is controller-runtime's default graceful shutdown timeout (the
// operator does not change it): the pod's grace period must exceed it.
const controllerRuntimeShutdown = 30 * time.Second

// kustomizeInstall is what `kustomize build config/default` installs, by kind.
type kustomizeInstall struct {
	webhooks    map[string]webhookConfig
	deployment  *appsv1.Deployment
	pdbs        []policyv1.PodDisruptionBudget
	netpols     []networkingv1.NetworkPolicy
	webhookPort int32
}

// webhookConfig is the part of a validating or mutating webhook this test checks.
type webhookConfig struct {
	timeoutSeconds  *int32
	matchConditions []admissionregistrationv1.MatchCondition
}

func buildDefault(t *testing.T) kustomizeInstall {
	t.Helper()
	_, root := loadBundle(t)
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", "default"))
	require.NoError(t, err, "kustomize build config/default")
	out := kustomizeInstall{webhooks: map[string]webhookConfig{}}
	for _, r := range resources.Resources() {
		m, err := r.Map()
		require.NoError(t, err)
		into := func(typed any) {
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(m, typed), r.CurId().String())
		}
		switch r.GetKind() {
		case "ValidatingWebhookConfiguration":
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			into(&c)
			for _, w := range c.Webhooks {
				out.webhooks[w.Name] = webhookConfig{w.TimeoutSeconds, w.MatchConditions}
			}
		case "MutatingWebhookConfiguration":
			var c admissionregistrationv1.MutatingWebhookConfiguration
			into(&c)
			for _, w := range c.Webhooks {
				out.webhooks[w.Name] = webhookConfig{w.TimeoutSeconds, w.MatchConditions}
			}
		case "Deployment":
			require.Nil(t, out.deployment, "one Deployment")
			out.deployment = &appsv1.Deployment{}
			into(out.deployment)
		case "PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			into(&p)
			out.pdbs = append(out.pdbs, p)
		case "NetworkPolicy":
			var p networkingv1.NetworkPolicy
			into(&p)
			out.netpols = append(out.netpols, p)
		case "Service":
			var s corev1.Service
			into(&s)
			if s.Name == "flink-operator-webhook-service" {
				out.webhookPort = s.Spec.Ports[0].TargetPort.IntVal
			}
		}
	}
	require.NotNil(t, out.deployment)
	return out
}

// TestInstallSurvivesOperatorOutage checks the kustomize install (config/default) against an operator outage:
// every webhook gives up after 5 s and skips objects being deleted, two replicas spread over
// nodes serve the webhooks, a PodDisruptionBudget keeps one through drains, the grace period
// covers controller-runtime's shutdown, and the NetworkPolicy admits the webhook and metrics.
func TestInstallSurvivesOperatorOutage(t *testing.T) {
	in := buildDefault(t)
	_, root := loadBundle(t)
	names := webhookNames(t, filepath.Join(root, "config", "webhook", "manifests.yaml"))

	t.Run("webhooks time out and skip objects being deleted", func(t *testing.T) {
		require.Len(t, in.webhooks, len(names))
		for _, name := range names {
			w, ok := in.webhooks[name]
			require.True(t, ok, "webhook %s", name)
			if assert.NotNil(t, w.timeoutSeconds, "%s timeoutSeconds", name) {
				assert.Equal(t, int32(webhookTimeoutSeconds), *w.timeoutSeconds, "%s timeoutSeconds", name)
			}
			assert.Equal(t, []admissionregistrationv1.MatchCondition{notBeingDeleted}, w.matchConditions, "%s matchConditions", name)
		}
	})
	checkDeployment(t, in.deployment.Spec)

	t.Run("PodDisruptionBudget keeps one replica", func(t *testing.T) {
		checkPDBs(t, in.pdbs, in.deployment.Spec.Template.Labels)
	})

	t.Run("NetworkPolicy admits the webhook and metrics ports", func(t *testing.T) {
		require.Len(t, in.netpols, 1)
		p := in.netpols[0].Spec
		sel, err := metav1.LabelSelectorAsSelector(&p.PodSelector)
		require.NoError(t, err)
		assert.True(t, sel.Matches(labels.Set(in.deployment.Spec.Template.Labels)), "selects the operator's pods")
		var ports []int32
		for _, rule := range p.Ingress {
			assert.Empty(t, rule.From, "any source: the API server's address is not known")
			for _, port := range rule.Ports {
				ports = append(ports, port.Port.IntVal)
			}
		}
		require.NotZero(t, in.webhookPort)
		assert.ElementsMatch(t, []int32{in.webhookPort, 8443}, ports)
	})
}

// TestBundleSurvivesOperatorOutage checks the same of the OLM bundle, as far as OLM carries it:
// the CSV's webhook definitions have no matchConditions field (operator-framework/api up to
// v0.45.0), so there only the timeout, the replicas and the PodDisruptionBudget apply.
func TestBundleSurvivesOperatorOutage(t *testing.T) {
	b, _ := loadBundle(t)
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		if assert.NotNil(t, w.TimeoutSeconds, "%s timeoutSeconds", w.GenerateName) {
			assert.Equal(t, int32(webhookTimeoutSeconds), *w.TimeoutSeconds, "%s timeoutSeconds", w.GenerateName)
		}
	}
	specs := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	require.Len(t, specs, 1)
	checkDeployment(t, specs[0].Spec)

	t.Run("PodDisruptionBudget keeps one replica", func(t *testing.T) {
		var pdbs []policyv1.PodDisruptionBudget
		for _, obj := range b.Objects {
			if obj.GetKind() == "PodDisruptionBudget" {
				var p policyv1.PodDisruptionBudget
				require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &p))
				pdbs = append(pdbs, p)
			}
		}
		checkPDBs(t, pdbs, specs[0].Spec.Template.Labels)
	})
}

func checkDeployment(t *testing.T, spec appsv1.DeploymentSpec) {
	t.Run("two replicas spread over nodes", func(t *testing.T) {
		require.NotNil(t, spec.Replicas)
		assert.Equal(t, int32(2), *spec.Replicas)
		pod := spec.Template.Spec
		require.NotNil(t, pod.Affinity)
		require.NotNil(t, pod.Affinity.PodAntiAffinity)
		terms := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		require.Len(t, terms, 1)
		assert.Equal(t, corev1.LabelHostname, terms[0].PodAffinityTerm.TopologyKey)
		sel, err := metav1.LabelSelectorAsSelector(terms[0].PodAffinityTerm.LabelSelector)
		require.NoError(t, err)
		assert.True(t, sel.Matches(labels.Set(spec.Template.Labels)), "anti-affinity selects the operator's own pods")
		assert.Contains(t, pod.Containers[0].Args, "--leader-elect", "two replicas need leader election")
	})
	t.Run("grace period covers controller-runtime's shutdown", func(t *testing.T) {
		grace := spec.Template.Spec.TerminationGracePeriodSeconds
		require.NotNil(t, grace)
		assert.Greater(t, time.Duration(*grace)*time.Second, controllerRuntimeShutdown)
	})
	t.Run("ready only with the webhook server up", func(t *testing.T) {
		probe := spec.Template.Spec.Containers[0].ReadinessProbe
		require.NotNil(t, probe)
		require.NotNil(t, probe.HTTPGet)
		assert.Equal(t, "/readyz", probe.HTTPGet.Path)
	})
}

func checkPDBs(t *testing.T, pdbs []policyv1.PodDisruptionBudget, podLabels map[string]string) {
	require.Len(t, pdbs, 1)
	p := pdbs[0].Spec
	require.NotNil(t, p.MinAvailable)
	assert.Equal(t, int32(1), p.MinAvailable.IntVal)
	sel, err := metav1.LabelSelectorAsSelector(p.Selector)
	require.NoError(t, err)
	assert.True(t, sel.Matches(labels.Set(podLabels)), "selects the operator's pods")
}
