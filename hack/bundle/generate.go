package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

type bundleOptions struct {
	Package        string
	Version        string
	Replaces       string
	SkipRange      string
	Image          string
	Channels       []string
	DefaultChannel string
	OutputDir      string
	Dockerfile     string
}

// clusterScopedResources are the resources a ClusterRole rule may name that are not namespaced.
// Rules on them become the CSV's clusterPermissions; every other rule becomes permissions, which
// OLM grants only in the OperatorGroup's target namespaces (cluster-wide for AllNamespaces).
var clusterScopedResources = map[string]bool{
	"tokenreviews": true, "subjectaccessreviews": true, "selfsubjectaccessreviews": true,
	"namespaces": true, "nodes": true, "persistentvolumes": true, "customresourcedefinitions": true,
	"clusterroles": true, "clusterrolebindings": true, "storageclasses": true, "priorityclasses": true,
	"validatingwebhookconfigurations": true, "mutatingwebhookconfigurations": true,
}

// webhook is one webhook of a Validating- or MutatingWebhookConfiguration: its OLM description
// (all but where it is served) and its client configuration.
type webhook struct {
	desc   operatorsv1alpha1.WebhookDescription
	client admissionregistrationv1.WebhookClientConfig
}

// manifestStream is the kustomize output sorted by what the bundle does with each object.
type manifestStream struct {
	csv           *operatorsv1alpha1.ClusterServiceVersion
	crds          []*unstructured.Unstructured
	deployments   []appsv1.Deployment
	roles         map[string]rbacv1.Role
	clusterRoles  map[string]rbacv1.ClusterRole
	roleBindings  []rbacv1.RoleBinding
	crBindings    []rbacv1.ClusterRoleBinding
	services      []corev1.Service
	webhooks      []webhook
	samples       []*unstructured.Unstructured
	scorecard     *unstructured.Unstructured
	otherManifest []*unstructured.Unstructured
}

func readStream(r io.Reader) (*manifestStream, error) {
	s := &manifestStream{roles: map[string]rbacv1.Role{}, clusterRoles: map[string]rbacv1.ClusterRole{}}
	decoder := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := s.add(obj); err != nil {
			return nil, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if s.csv == nil {
		return nil, errors.New("no ClusterServiceVersion base in the input")
	}
	return s, nil
}

func (s *manifestStream) add(obj *unstructured.Unstructured) error {
	into := func(typed any) error {
		return runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed)
	}
	switch obj.GetKind() {
	case "ClusterServiceVersion":
		s.csv = &operatorsv1alpha1.ClusterServiceVersion{}
		return into(s.csv)
	case "CustomResourceDefinition":
		s.crds = append(s.crds, obj)
	case "Deployment":
		var d appsv1.Deployment
		if err := into(&d); err != nil {
			return err
		}
		s.deployments = append(s.deployments, d)
	case "Role":
		var r rbacv1.Role
		if err := into(&r); err != nil {
			return err
		}
		s.roles[r.Name] = r
	case "ClusterRole":
		var r rbacv1.ClusterRole
		if err := into(&r); err != nil {
			return err
		}
		s.clusterRoles[r.Name] = r
	case "RoleBinding":
		var b rbacv1.RoleBinding
		if err := into(&b); err != nil {
			return err
		}
		s.roleBindings = append(s.roleBindings, b)
	case "ClusterRoleBinding":
		var b rbacv1.ClusterRoleBinding
		if err := into(&b); err != nil {
			return err
		}
		s.crBindings = append(s.crBindings, b)
	case "Service":
		var svc corev1.Service
		if err := into(&svc); err != nil {
			return err
		}
		s.services = append(s.services, svc)
	case "ValidatingWebhookConfiguration":
		var c admissionregistrationv1.ValidatingWebhookConfiguration
		if err := into(&c); err != nil {
			return err
		}
		for _, w := range c.Webhooks {
			s.webhooks = append(s.webhooks, webhook{client: w.ClientConfig, desc: operatorsv1alpha1.WebhookDescription{
				GenerateName: w.Name, Type: operatorsv1alpha1.ValidatingAdmissionWebhook, Rules: w.Rules,
				FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy, ObjectSelector: w.ObjectSelector, SideEffects: w.SideEffects,
				TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions}})
		}
	case "MutatingWebhookConfiguration":
		var c admissionregistrationv1.MutatingWebhookConfiguration
		if err := into(&c); err != nil {
			return err
		}
		for _, w := range c.Webhooks {
			s.webhooks = append(s.webhooks, webhook{client: w.ClientConfig, desc: operatorsv1alpha1.WebhookDescription{
				GenerateName: w.Name, Type: operatorsv1alpha1.MutatingAdmissionWebhook, Rules: w.Rules,
				FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy, ObjectSelector: w.ObjectSelector, SideEffects: w.SideEffects,
				TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions, ReinvocationPolicy: w.ReinvocationPolicy}})
		}
	case "Configuration":
		s.scorecard = obj
	case "Namespace", "ServiceAccount":
		// OLM installs into the namespace the user picks and creates the ServiceAccounts the
		// install strategy names.
	default:
		if strings.HasSuffix(obj.GroupVersionKind().Group, "flink.apache.org") {
			s.samples = append(s.samples, obj)
		} else {
			s.otherManifest = append(s.otherManifest, obj)
		}
	}
	return nil
}

func generateBundle(in io.Reader, o bundleOptions) error {
	if o.Version == "" || o.Image == "" {
		return errors.New("-version and -image are required")
	}
	s, err := readStream(in)
	if err != nil {
		return err
	}
	csv, err := buildCSV(s, o)
	if err != nil {
		return err
	}

	manifests := filepath.Join(o.OutputDir, "manifests")
	for _, dir := range []string{manifests, filepath.Join(o.OutputDir, "metadata"), filepath.Join(o.OutputDir, "tests")} {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	files := map[string]any{
		filepath.Join(manifests, o.Package+".clusterserviceversion.yaml"): csv,
	}
	for _, crd := range s.crds {
		crd.SetNamespace("")
		spec := crd.Object["spec"].(map[string]any)
		plural, _, _ := unstructured.NestedString(spec, "names", "plural")
		files[filepath.Join(manifests, fmt.Sprintf("%s_%s.yaml", spec["group"], plural))] = crd.Object
	}
	webhookServices := webhookServiceNames(s)
	for _, svc := range s.services {
		if webhookServices[svc.Name] {
			continue // OLM creates the webhook Service (<deployment>-service) with its own certificate
		}
		svc.Namespace = ""
		files[filepath.Join(manifests, manifestFileName(svc.Name, "", "v1", "service"))] = withKind(&svc, "v1", "Service")
	}
	bound := boundClusterRoles(s)
	for _, name := range sortedKeys(s.clusterRoles) {
		if bound[name] {
			continue
		}
		// Not bound to the operator (for example the metrics reader): shipped as is for users to bind.
		files[filepath.Join(manifests, manifestFileName(name, "rbac.authorization.k8s.io", "v1", "clusterrole"))] =
			withKind(ptr(s.clusterRoles[name]), "rbac.authorization.k8s.io/v1", "ClusterRole")
	}
	for _, obj := range s.otherManifest {
		obj.SetNamespace("")
		gvk := obj.GroupVersionKind()
		files[filepath.Join(manifests, manifestFileName(obj.GetName(), gvk.Group, gvk.Version, strings.ToLower(gvk.Kind)))] = obj.Object
	}
	if s.scorecard != nil {
		files[filepath.Join(o.OutputDir, "tests", "scorecard", "config.yaml")] = s.scorecard.Object
	}
	files[filepath.Join(o.OutputDir, "metadata", "annotations.yaml")] = map[string]any{"annotations": bundleAnnotations(o, s.scorecard != nil)}
	for path, obj := range files {
		if err := writeYAML(path, obj); err != nil {
			return err
		}
	}
	return os.WriteFile(o.Dockerfile, []byte(dockerfile(o, s.scorecard != nil)), 0o644)
}

func buildCSV(s *manifestStream, o bundleOptions) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	csv := s.csv.DeepCopy()
	csv.Name = fmt.Sprintf("%s.v%s", o.Package, o.Version)
	csv.Namespace = ""
	v, err := semver.Parse(o.Version)
	if err != nil {
		return nil, fmt.Errorf("-version %q: %w", o.Version, err)
	}
	csv.Spec.Version = version.OperatorVersion{Version: v}
	if o.Replaces != "" {
		csv.Spec.Replaces = fmt.Sprintf("%s.v%s", o.Package, o.Replaces)
	}
	if csv.Annotations == nil {
		csv.Annotations = map[string]string{}
	}
	if o.SkipRange != "" {
		csv.Annotations["olm.skipRange"] = o.SkipRange
	}
	csv.Annotations["containerImage"] = o.Image

	examples, err := almExamples(s.samples)
	if err != nil {
		return nil, err
	}
	csv.Annotations["alm-examples"] = examples

	strategy := operatorsv1alpha1.StrategyDetailsDeployment{}
	related := map[string]string{}
	for _, d := range s.deployments {
		spec := d.Spec.DeepCopy()
		for i := range spec.Template.Spec.Containers {
			c := &spec.Template.Spec.Containers[i]
			related[c.Name] = c.Image
		}
		strategy.DeploymentSpecs = append(strategy.DeploymentSpecs, operatorsv1alpha1.StrategyDeploymentSpec{
			Name: d.Name, Spec: *spec, Label: labels.Set(d.Labels),
		})
	}
	strategy.Permissions, strategy.ClusterPermissions, err = permissions(s)
	if err != nil {
		return nil, err
	}
	csv.Spec.InstallStrategy = operatorsv1alpha1.NamedInstallStrategy{
		StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment, StrategySpec: strategy,
	}
	csv.Spec.RelatedImages = nil
	for _, name := range sortedKeys(related) {
		csv.Spec.RelatedImages = append(csv.Spec.RelatedImages, operatorsv1alpha1.RelatedImage{Name: name, Image: related[name]})
	}
	csv.Spec.WebhookDefinitions, err = webhookDefinitions(s)
	if err != nil {
		return nil, err
	}
	return csv, nil
}

// almExamples renders the samples as the JSON array OperatorHub shows as "create" templates.
func almExamples(samples []*unstructured.Unstructured) (string, error) {
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].GetKind() < samples[j].GetKind() })
	objs := make([]map[string]any, 0, len(samples))
	for _, s := range samples {
		s.SetNamespace("")
		objs = append(objs, s.Object)
	}
	out, err := json.MarshalIndent(objs, "", "  ")
	if err != nil {
		return "", fmt.Errorf("alm-examples: %w", err)
	}
	return string(out), nil
}

// permissions turns the RBAC bound to each ServiceAccount into the CSV's permissions (namespace
// scope) and clusterPermissions. ClusterRoles bound cluster-wide for the plain kustomize install are
// split by resource scope, so that in OwnNamespace/SingleNamespace/MultiNamespace installs the
// operator gets rights on Flink objects only in the namespaces it watches.
func permissions(s *manifestStream) (ns, cluster []operatorsv1alpha1.StrategyDeploymentPermissions, err error) {
	nsRules := map[string][]rbacv1.PolicyRule{}
	clusterRules := map[string][]rbacv1.PolicyRule{}
	for _, b := range s.roleBindings {
		for _, sa := range serviceAccounts(b.Subjects) {
			switch b.RoleRef.Kind {
			case "Role":
				role, ok := s.roles[b.RoleRef.Name]
				if !ok {
					return nil, nil, fmt.Errorf("RoleBinding %s: Role %s not in the manifests", b.Name, b.RoleRef.Name)
				}
				nsRules[sa] = append(nsRules[sa], role.Rules...)
			case "ClusterRole":
				role, ok := s.clusterRoles[b.RoleRef.Name]
				if !ok {
					return nil, nil, fmt.Errorf("RoleBinding %s: ClusterRole %s not in the manifests", b.Name, b.RoleRef.Name)
				}
				nsRules[sa] = append(nsRules[sa], role.Rules...)
			}
		}
	}
	for _, b := range s.crBindings {
		if err := s.splitClusterRoleBinding(b, nsRules, clusterRules); err != nil {
			return nil, nil, err
		}
	}
	for _, sa := range sortedKeys(nsRules) {
		ns = append(ns, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: nsRules[sa]})
	}
	for _, sa := range sortedKeys(clusterRules) {
		cluster = append(cluster, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: clusterRules[sa]})
	}
	return ns, cluster, nil
}

// splitClusterRoleBinding adds the rules of the ClusterRole that b binds cluster-wide to each of
// its ServiceAccounts: cluster-scoped rules to clusterRules, the others to nsRules.
func (s *manifestStream) splitClusterRoleBinding(b rbacv1.ClusterRoleBinding, nsRules, clusterRules map[string][]rbacv1.PolicyRule) error {
	role, ok := s.clusterRoles[b.RoleRef.Name]
	if !ok {
		return fmt.Errorf("ClusterRoleBinding %s: ClusterRole %s not in the manifests", b.Name, b.RoleRef.Name)
	}
	for _, sa := range serviceAccounts(b.Subjects) {
		for _, rule := range role.Rules {
			scoped, err := clusterScoped(rule)
			if err != nil {
				return fmt.Errorf("ClusterRole %s: %w", role.Name, err)
			}
			if scoped {
				clusterRules[sa] = append(clusterRules[sa], rule)
			} else {
				nsRules[sa] = append(nsRules[sa], rule)
			}
		}
	}
	return nil
}

func clusterScoped(rule rbacv1.PolicyRule) (bool, error) {
	if len(rule.NonResourceURLs) > 0 {
		return true, nil
	}
	var cluster, namespaced int
	for _, r := range rule.Resources {
		if clusterScopedResources[strings.SplitN(r, "/", 2)[0]] {
			cluster++
		} else {
			namespaced++
		}
	}
	if cluster > 0 && namespaced > 0 {
		return false, fmt.Errorf("rule on %v mixes cluster-scoped and namespaced resources; split it", rule.Resources)
	}
	return cluster > 0, nil
}

func serviceAccounts(subjects []rbacv1.Subject) []string {
	var out []string
	for _, s := range subjects {
		if s.Kind == rbacv1.ServiceAccountKind {
			out = append(out, s.Name)
		}
	}
	return out
}

func boundClusterRoles(s *manifestStream) map[string]bool {
	bound := map[string]bool{}
	for _, b := range s.crBindings {
		bound[b.RoleRef.Name] = true
	}
	for _, b := range s.roleBindings {
		if b.RoleRef.Kind == "ClusterRole" {
			bound[b.RoleRef.Name] = true
		}
	}
	return bound
}

func webhookServiceNames(s *manifestStream) map[string]bool {
	names := map[string]bool{}
	for _, w := range s.webhooks {
		if w.client.Service != nil {
			names[w.client.Service.Name] = true
		}
	}
	return names
}

// webhookDefinitions describes each webhook for OLM, which creates the configurations, the Service
// and the serving certificate (mounted into the operator's pod at
// /tmp/k8s-webhook-server/serving-certs, controller-runtime's default certificate directory).
func webhookDefinitions(s *manifestStream) ([]operatorsv1alpha1.WebhookDescription, error) {
	var out []operatorsv1alpha1.WebhookDescription
	for _, w := range s.webhooks {
		d := w.desc
		if w.client.Service == nil {
			return nil, fmt.Errorf("webhook %s: OLM needs a service reference", d.GenerateName)
		}
		svc, deployment, err := s.serviceBackend(w.client.Service.Name)
		if err != nil {
			return nil, fmt.Errorf("webhook %s: %w", d.GenerateName, err)
		}
		port := svc.Spec.Ports[0]
		target := port.TargetPort
		if target == (intstr.IntOrString{}) {
			target = intstr.FromInt32(port.Port)
		}
		d.DeploymentName, d.ContainerPort, d.TargetPort, d.WebhookPath = deployment, port.Port, &target, w.client.Service.Path
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].GenerateName < out[j].GenerateName })
	return out, nil
}

// serviceBackend finds a Service and the Deployment whose pods it selects.
func (s *manifestStream) serviceBackend(name string) (corev1.Service, string, error) {
	for _, svc := range s.services {
		if svc.Name != name {
			continue
		}
		if len(svc.Spec.Ports) == 0 {
			return svc, "", fmt.Errorf("service %s has no port", name)
		}
		selector := labels.SelectorFromSet(svc.Spec.Selector)
		for _, d := range s.deployments {
			if selector.Matches(labels.Set(d.Spec.Template.Labels)) {
				return svc, d.Name, nil
			}
		}
		return svc, "", fmt.Errorf("no Deployment's pods match Service %s", name)
	}
	return corev1.Service{}, "", fmt.Errorf("service %s not in the manifests", name)
}

func bundleAnnotations(o bundleOptions, scorecard bool) map[string]string {
	a := map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         o.Package,
		"operators.operatorframework.io.bundle.channels.v1":        strings.Join(o.Channels, ","),
		"operators.operatorframework.io.bundle.channel.default.v1": o.DefaultChannel,
		"operators.operatorframework.io.metrics.mediatype.v1":      "metrics+v1",
		"operators.operatorframework.io.metrics.builder":           "flink-operator-hack-bundle",
		"operators.operatorframework.io.metrics.project_layout":    "go.kubebuilder.io/v4",
	}
	if scorecard {
		a["operators.operatorframework.io.test.mediatype.v1"] = "scorecard+v1"
		a["operators.operatorframework.io.test.config.v1"] = "tests/scorecard/"
	}
	return a
}

func dockerfile(o bundleOptions, scorecard bool) string {
	var b strings.Builder
	b.WriteString("# Generated by make bundle (hack/bundle); do not edit.\nFROM scratch\n\n")
	annotations := bundleAnnotations(o, scorecard)
	for _, k := range sortedKeys(annotations) {
		fmt.Fprintf(&b, "LABEL %s=%s\n", k, annotations[k])
	}
	fmt.Fprintf(&b, "\nCOPY %s/manifests /manifests/\nCOPY %s/metadata /metadata/\n", o.OutputDir, o.OutputDir)
	if scorecard {
		fmt.Fprintf(&b, "COPY %s/tests/scorecard /tests/scorecard/\n", o.OutputDir)
	}
	return b.String()
}

// manifestFileName follows operator-sdk: <name>_<group>_<version>_<kind>.yaml (core group: <name>_v1_<kind>).
func manifestFileName(name, group, version, kind string) string {
	if group == "" {
		return fmt.Sprintf("%s_%s_%s.yaml", name, version, kind)
	}
	return fmt.Sprintf("%s_%s_%s_%s.yaml", name, group, version, kind)
}

func withKind(obj any, apiVersion, kind string) map[string]any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err) // typed API objects always convert
	}
	u["apiVersion"], u["kind"] = apiVersion, kind
	delete(u, "status")
	return u
}

func writeYAML(path string, obj any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := writeYAMLTo(f, obj); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func writeYAMLTo(w io.Writer, obj any) error {
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = w.Write(append(bytes.TrimSpace(out), '\n'))
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ptr[T any](v T) *T { return &v }
