package deploy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/operatorconfig"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// multiTenant is the hardened profile `make deploy-multi-tenant` applies.
const multiTenant = "profiles/multi-tenant"

// renderObjects builds the kustomization in config/<dir> as `kustomize build` does.
func renderObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	res, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", dir))
	require.NoError(t, err, "kustomize build config/%s", dir)
	var out []*unstructured.Unstructured
	for _, r := range res.Resources() {
		data, err := r.MarshalJSON()
		require.NoError(t, err)
		o := &unstructured.Unstructured{}
		require.NoError(t, json.Unmarshal(data, &o.Object), r.CurId().String())
		out = append(out, o)
	}
	return out
}

// operatorConfig is the parsed operator configuration of an install (the ConfigMap its
// --config-map flag names).
func operatorConfig(t *testing.T, in install) map[string]string {
	t.Helper()
	cm := in.Get("ConfigMap", in.Flags["config-map"])
	require.NotNil(t, cm, "the ConfigMap of --config-map=%s is part of the install", in.Flags["config-map"])
	data, _, err := unstructured.NestedStringMap(cm.Object, "data")
	require.NoError(t, err)
	conf, err := operatorconfig.Parse(data)
	require.NoError(t, err)
	return conf
}

// typed converts o into out, refusing fields out does not have (a misspelt field would
// otherwise be dropped by the API server's pruning and leave the rule wider than written).
func typed(t *testing.T, o *unstructured.Unstructured, out any) {
	t.Helper()
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, out, true), "%s %s", o.GetKind(), o.GetName())
}

func key(o *unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// TestMultiTenantProfile checks config/profiles/multi-tenant as built: config/default's install
// unchanged but for the operator configuration's admission policy, plus an egress NetworkPolicy
// for the operator's pods that admits only DNS, the API server and JobManagers' REST ports.
func TestMultiTenantProfile(t *testing.T) {
	def := build(t, "default")
	in := build(t, multiTenant)

	t.Run("config/default's install, the egress policy added", func(t *testing.T) {
		byKey := map[string]*unstructured.Unstructured{}
		for _, o := range in.Objects {
			byKey[key(o)] = o
		}
		for _, o := range def.Objects {
			got := byKey[key(o)]
			require.NotNil(t, got, "%s of config/default is part of the profile", key(o))
			delete(byKey, key(o))
			if o.GetKind() == "ConfigMap" && o.GetName() == in.Flags["config-map"] {
				continue
			}
			assert.True(t, equality.Semantic.DeepEqual(o.Object, got.Object), "%s as in config/default", key(o))
		}
		var added []string
		for k := range byKey {
			added = append(added, k)
		}
		assert.Equal(t, []string{"NetworkPolicy/flink-operator-system/flink-operator-controller-manager-egress"}, added)
	})

	t.Run("operator configuration", func(t *testing.T) {
		conf := operatorConfig(t, in)
		for k, v := range operatorConfig(t, def) {
			assert.Equal(t, v, conf[k], "%s keeps config/default's value", k)
		}
		for _, o := range options.All() {
			assert.NoError(t, o.Check(conf), o.Key)
		}
		_, err := operatorconfig.Build(conf, operatorconfig.Settings{}, nil)
		require.NoError(t, err)
		policy, err := validation.PolicyFromOperatorConfig(conf)
		require.NoError(t, err)
		assert.Equal(t, "baseline", string(policy.PodSecurity))
		assert.Contains(t, policy.IngressAnnotations, "cert-manager.io/*")
		for _, a := range policy.IngressAnnotations {
			assert.NotContains(t, a, "snippet", "no annotation that configures the shared ingress controller")
			assert.NotEqual(t, "*", a)
		}

		// config/default keeps upstream's permissive defaults.
		permissive, err := validation.PolicyFromOperatorConfig(operatorConfig(t, def))
		require.NoError(t, err)
		assert.Equal(t, "privileged", string(permissive.PodSecurity))
		assert.Nil(t, permissive.IngressAnnotations, "config/default allows every annotation")
	})

	t.Run("the webhook's rules under the profile's configuration", func(t *testing.T) {
		profile := validatorFor(t, operatorConfig(t, in))
		upstream := validatorFor(t, operatorConfig(t, def))
		for _, c := range hostileDeployments(t) {
			errs := profile.ValidateDeployment(c.dep, nil)
			require.NotEmpty(t, errs, "%s: refused under the profile", c.name)
			assert.Contains(t, errs.ToAggregate().Error(), c.field, c.name)
			assert.Contains(t, errs.ToAggregate().Error(), c.detail, c.name)
			assert.Empty(t, upstream.ValidateDeployment(c.dep, nil), "%s: admitted by config/default (upstream's behaviour)", c.name)
		}
		assert.Empty(t, profile.ValidateDeployment(wellBehaved(t), nil), "a well-behaved FlinkDeployment is admitted")
	})

	t.Run("egress NetworkPolicy", func(t *testing.T) {
		o := in.Get("NetworkPolicy", "flink-operator-controller-manager-egress")
		require.NotNil(t, o)
		var np networkingv1.NetworkPolicy
		typed(t, o, &np)
		assert.Equal(t, in.Namespace(), np.Namespace)
		assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes, "egress only: ingress stays config/manager's policy")
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		require.NoError(t, err)
		assert.True(t, sel.Matches(labels.Set(in.Deployment.Spec.Template.Labels)), "selects the operator's pods")
		require.Len(t, np.Spec.Egress, 3, "DNS, the API server, JobManagers")
		for i, r := range np.Spec.Egress {
			assert.NotEmpty(t, r.To, "rule %d names its destinations", i)
			assert.NotEmpty(t, r.Ports, "rule %d names its ports", i)
		}

		dns := np.Spec.Egress[0]
		assert.ElementsMatch(t, []string{"UDP/53", "TCP/53"}, ports(dns.Ports))
		require.Len(t, dns.To, 1)
		assert.True(t, peerMatches(t, dns.To[0], map[string]string{corev1.LabelMetadataName: "kube-system"}, map[string]string{"k8s-app": "kube-dns"}))
		assert.False(t, peerMatches(t, dns.To[0], map[string]string{corev1.LabelMetadataName: "team-a"}, map[string]string{"k8s-app": "kube-dns"}),
			"a tenant's pod labelled kube-dns is not the cluster's DNS")

		api := np.Spec.Egress[1]
		assert.ElementsMatch(t, []string{"TCP/443", "TCP/6443"}, ports(api.Ports))
		for _, p := range api.To {
			require.NotNil(t, p.IPBlock, "the API server is addressed by IP")
		}

		jm := np.Spec.Egress[2]
		assert.ElementsMatch(t, []string{"TCP/rest", "TCP/8081"}, ports(jm.Ports))
		require.Len(t, jm.To, 1)
		assert.NotNil(t, jm.To[0].NamespaceSelector, "JobManagers of every namespace")
		for _, mode := range []flinkv1beta1.KubernetesDeploymentMode{flinkv1beta1.DeploymentModeNative, flinkv1beta1.DeploymentModeStandalone} {
			dep := wellBehaved(t)
			dep.Spec.Mode = mode
			dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{"rest.port": "9091"})
			cluster, err := native.Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
			require.NoError(t, err)
			pod := cluster.JobManager.Spec.Template
			assert.True(t, peerMatches(t, jm.To[0], map[string]string{corev1.LabelMetadataName: dep.Namespace}, pod.Labels), "%s JobManager pods", mode)
			var restPort *corev1.ContainerPort
			for _, c := range pod.Spec.Containers {
				for _, p := range c.Ports {
					if p.ContainerPort == 9091 {
						restPort = &p
					}
				}
			}
			require.NotNil(t, restPort, "%s: the JobManager serves rest.port", mode)
			assert.Equal(t, "rest", restPort.Name, "%s: the rule's named port covers a configured rest.port", mode)
			if cluster.TaskManager != nil {
				assert.False(t, peerMatches(t, jm.To[0], map[string]string{corev1.LabelMetadataName: dep.Namespace}, cluster.TaskManager.Spec.Template.Labels),
					"TaskManagers are not JobManagers")
			}
		}
		assert.False(t, peerMatches(t, jm.To[0], map[string]string{corev1.LabelMetadataName: "kafka"}, map[string]string{"app": "zookeeper"}))
	})

	t.Run("tenant ResourceQuota", func(t *testing.T) {
		objs := renderObjects(t, multiTenant+"/tenant")
		require.Len(t, objs, 1)
		require.Equal(t, "ResourceQuota", objs[0].GetKind())
		assert.Empty(t, objs[0].GetNamespace(), "applied to a tenant namespace with kubectl apply -n")
		var q corev1.ResourceQuota
		typed(t, objs[0], &q)
		for _, r := range []corev1.ResourceName{"configmaps", "pods", "count/flinkdeployments.flink.apache.org", "count/flinksessionjobs.flink.apache.org"} {
			require.Contains(t, q.Spec.Hard, r)
			n := q.Spec.Hard[r]
			assert.Positive(t, n.Value(), r)
		}
		// A count/ of a resource that does not exist is accepted by the API server and never
		// enforced: every count/<plural>.<group> must name a resource of the install or a
		// built-in one.
		crds := map[string]bool{"ingresses.networking.k8s.io": true}
		for _, crd := range in.All("CustomResourceDefinition") {
			crds[crd.GetName()] = true
		}
		for r := range q.Spec.Hard {
			if name, ok := strings.CutPrefix(string(r), "count/"); ok {
				assert.True(t, crds[name], "%s counts a resource that exists", r)
			}
		}
	})
}

// TestMultiTenantProfileAppliesToAPIServer applies the profile and the tenant quota to a real
// API server, which validates them as `make deploy-multi-tenant` and kubectl apply would.
func TestMultiTenantProfileAppliesToAPIServer(t *testing.T) {
	in := build(t, multiTenant)
	env := kubeenv.Start(t)
	ctx := context.Background()
	for _, o := range in.Objects {
		require.NoError(t, env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("kubectl"), client.ForceOwnership),
			"apply %s %s", o.GetKind(), o.GetName())
	}
	var np networkingv1.NetworkPolicy
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: in.Namespace(), Name: "flink-operator-controller-manager-egress"}, &np))
	assert.Equal(t, intstr.FromString("rest"), *np.Spec.Egress[2].Ports[0].Port, "stored as written")

	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}))
	for _, o := range renderObjects(t, multiTenant+"/tenant") {
		o.SetNamespace("team-a") // kubectl apply -n team-a
		require.NoError(t, env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("kubectl"), client.ForceOwnership),
			"apply %s %s", o.GetKind(), o.GetName())
	}
	var q corev1.ResourceQuota
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "flink-tenant"}, &q))
	assert.Contains(t, q.Spec.Hard, corev1.ResourceName("count/flinkdeployments.flink.apache.org"))
}

// validatorFor is the webhook's validator under an operator configuration.
func validatorFor(t *testing.T, conf map[string]string) *validation.Validator {
	t.Helper()
	d, err := flinkconf.DefaultsFromOperatorConfig(conf)
	require.NoError(t, err)
	return &validation.Validator{Defaults: d}
}

// hostileCase is a FlinkDeployment the profile refuses, the field the refusal names and a
// word of its reason.
type hostileCase struct {
	name, field, detail string
	dep                 *flinkv1beta1.FlinkDeployment
}

// wellBehaved is the shipped sample, suspended (so an e2e run deploys no Flink cluster), with
// an Ingress requesting a certificate from cert-manager.
func wellBehaved(t *testing.T) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", "flink_v1beta1_flinkdeployment.yaml"))
	require.NoError(t, err)
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict(data, dep))
	dep.Namespace = "team-a"
	dep.Spec.Job.State = flinkv1beta1.JobStateSuspended
	dep.Spec.Ingress = &flinkv1beta1.IngressSpec{Template: "{{name}}.{{namespace}}.flink.example.com",
		Annotations: map[string]string{"cert-manager.io/cluster-issuer": "letsencrypt"}}
	return dep
}

func hostileDeployments(t *testing.T) []hostileCase {
	t.Helper()
	hostNetwork := wellBehaved(t)
	hostNetwork.Name = "host-network"
	hostNetwork.Spec.PodTemplate.Spec.HostNetwork = true

	privileged := wellBehaved(t)
	privileged.Name = "privileged"
	yes := true
	privileged.Spec.TaskManager.PodTemplate = &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: native.MainContainer, SecurityContext: &corev1.SecurityContext{Privileged: &yes}}}}}

	snippet := wellBehaved(t)
	snippet.Name = "ingress-snippet"
	snippet.Spec.Ingress.Annotations["nginx.ingress.kubernetes.io/configuration-snippet"] = "more_set_headers \"X: y\";"

	return []hostileCase{
		{name: "hostNetwork in spec.podTemplate", field: "spec.podTemplate", detail: "hostNetwork=true", dep: hostNetwork},
		{name: "privileged TaskManager container", field: "spec.taskManager.podTemplate", detail: "privileged", dep: privileged},
		{name: "Ingress annotation outside the allowlist", field: "spec.ingress.annotations[nginx.ingress.kubernetes.io/configuration-snippet]",
			detail: options.IngressAnnotationsAllowed.Key, dep: snippet},
	}
}

// ports renders a rule's ports as PROTOCOL/port.
func ports(ps []networkingv1.NetworkPolicyPort) []string {
	var out []string
	for _, p := range ps {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		out = append(out, string(proto)+"/"+p.Port.String())
	}
	slices.Sort(out)
	return out
}

// peerMatches reports whether a pod with podLabels in a namespace with nsLabels is the peer.
func peerMatches(t *testing.T, p networkingv1.NetworkPolicyPeer, nsLabels, podLabels map[string]string) bool {
	t.Helper()
	require.Nil(t, p.IPBlock)
	if p.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(p.NamespaceSelector)
		require.NoError(t, err)
		if !s.Matches(labels.Set(nsLabels)) {
			return false
		}
	}
	if p.PodSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(p.PodSelector)
		require.NoError(t, err)
		if !s.Matches(labels.Set(podLabels)) {
			return false
		}
	}
	return true
}
