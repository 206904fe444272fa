package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Creating a FlinkDeployment makes the operator create pods from the user's pod templates with
// the operator's permissions, so whoever may create FlinkDeployments may otherwise run privileged
// pods, mount host paths or join the host's network in that namespace. Policy lets the operator's
// administrator bound that, for every resource, by the Kubernetes Pod Security Standards
// (evaluated with the library the API server's Pod Security Admission uses), and bound the
// Ingress annotations a tenant may set (ingress-nginx snippet or auth-url annotations configure
// the shared ingress controller). The policy comes from the operator configuration only: a
// resource cannot relax it.

// Policy is the operator-wide admission policy.
type Policy struct {
	// PodSecurity is the Pod Security Standard level the cluster's pods must meet; privileged
	// (upstream's behaviour) allows anything.
	PodSecurity psaapi.Level
	// IngressAnnotations are the spec.ingress.annotations keys allowed: exact keys, or prefixes
	// written with a trailing '*'. nil allows every key (upstream's behaviour).
	IngressAnnotations []string
	// IngressHosts are the DNS domains an Ingress host may be, or be a subdomain of, lower case
	// and with {{namespace}} standing for the resource's namespace: an Ingress host claims
	// traffic on the shared ingress controller, so one namespace must not take another's (or
	// the cluster's) hosts. nil allows any host (upstream's behaviour).
	IngressHosts []string
}

// policyKeys are the options only the operator configuration may set.
var policyKeys = []string{options.PodSecurityLevel.Key, options.IngressAnnotationsAllowed.Key, options.IngressHostsAllowed.Key,
	// Where resources are sent (pkg/extension) is the administrator's decision too.
	options.ExtensionValidators.Key, options.ExtensionListeners.Key, options.ExtensionAllowedHosts.Key}

// PolicyFromOperatorConfig reads the policy from the operator configuration's operator options
// (flinkconf.Defaults.Operator). An invalid value is an error: the caller refuses everything rather
// than run without the policy the administrator asked for.
func PolicyFromOperatorConfig(conf map[string]string) (Policy, error) {
	p := Policy{PodSecurity: psaapi.LevelPrivileged}
	if err := options.PodSecurityLevel.Check(conf); err != nil {
		return Policy{}, fmt.Errorf("operator configuration %s: %w", options.PodSecurityLevel.Key, err)
	}
	p.PodSecurity = psaapi.Level(strings.ToLower(options.PodSecurityLevel.Get(conf)))
	if options.IngressAnnotationsAllowed.IsSet(conf) {
		p.IngressAnnotations = []string{}
		for _, k := range strings.FieldsFunc(options.IngressAnnotationsAllowed.Get(conf), func(r rune) bool { return r == ',' || r == ';' }) {
			if k = strings.TrimSpace(k); k != "" {
				p.IngressAnnotations = append(p.IngressAnnotations, k)
			}
		}
	}
	if options.IngressHostsAllowed.IsSet(conf) {
		hosts, err := parseIngressHosts(options.IngressHostsAllowed.Get(conf))
		if err != nil {
			return Policy{}, fmt.Errorf("operator configuration %s: %w", options.IngressHostsAllowed.Key, err)
		}
		p.IngressHosts = hosts
	}
	return p, nil
}

// namespacePlaceholder stands for the resource's namespace in an allowed Ingress domain.
const namespacePlaceholder = "{{namespace}}"

// parseIngressHosts reads the allowed Ingress domains: DNS names, possibly with {{namespace}}.
// Wildcards are not entries: a domain allows its subdomains already.
func parseIngressHosts(list string) ([]string, error) {
	hosts := []string{}
	for _, h := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ';' }) {
		h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		if h == "" {
			continue
		}
		// A namespace name is a DNS label, so any namespace makes a valid name when a sample does.
		if errs := k8svalidation.IsDNS1123Subdomain(strings.ReplaceAll(h, namespacePlaceholder, "ns")); len(errs) > 0 {
			return nil, fmt.Errorf("%q is not a DNS domain (optionally with %s): %s", h, namespacePlaceholder, strings.Join(errs, "; "))
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// policy is the policy in force: read from the operator configuration at every validation.
func (v *Validator) policy() (Policy, error) {
	conf := v.Defaults.Operator
	if v.OperatorConfig != nil {
		conf = v.OperatorConfig()
	}
	return PolicyFromOperatorConfig(conf)
}

// validatePolicy applies the operator-wide policy to a FlinkDeployment.
func (v *Validator) validatePolicy(dep *flinkv1beta1.FlinkDeployment) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if own, err := dep.Spec.FlinkConfiguration.Flatten(); err == nil {
		for _, k := range sortedKeys(own) {
			if contains(policyKeys, flinkconf.TrimKey(k)) {
				errs = append(errs, field.Forbidden(spec.Child("flinkConfiguration").Key(k), "an operator-wide policy, set in the operator configuration only"))
			}
		}
	}
	p, err := v.policy()
	if err != nil {
		return append(errs, field.InternalError(spec, err))
	}
	errs = append(errs, ingressPolicy(spec.Child("ingress"), dep, p)...)
	if p.PodSecurity != psaapi.LevelPrivileged {
		errs = append(errs, v.validatePodSecurity(dep, p.PodSecurity)...)
	}
	return errs
}

// ingressPolicy applies the Ingress part of the policy to the Ingress dep's spec.ingress
// becomes (at path): its annotations and its hosts.
func ingressPolicy(path *field.Path, dep *flinkv1beta1.FlinkDeployment, p Policy) field.ErrorList {
	in := dep.Spec.Ingress
	if in == nil {
		return nil
	}
	var errs field.ErrorList
	if p.IngressAnnotations != nil {
		for _, k := range sortedKeys(in.Annotations) {
			if !annotationAllowed(p.IngressAnnotations, k) {
				errs = append(errs, field.Forbidden(path.Child("annotations").Key(k),
					fmt.Sprintf("not allowed by the operator's %s (allowed: %s)", options.IngressAnnotationsAllowed.Key, strings.Join(p.IngressAnnotations, ", "))))
			}
		}
	}
	if p.IngressHosts == nil {
		return errs
	}
	domains := make([]string, len(p.IngressHosts))
	for i, h := range p.IngressHosts {
		domains[i] = strings.ReplaceAll(h, namespacePlaceholder, dep.Namespace)
	}
	allowed := fmt.Sprintf("in namespace %s (allowed: %s and their subdomains)", dep.Namespace, strings.Join(domains, ", "))
	refuse := func(at *field.Path, host string) {
		errs = append(errs, field.Forbidden(at, fmt.Sprintf("host %q not allowed by the operator's %s %s", host, options.IngressHostsAllowed.Key, allowed)))
	}
	// The host the operator writes into the rule: an unbuildable template is reported by the
	// other rules, and nothing is deployed from it.
	if ing, err := native.BuildIngress(dep, flinkconf.DefaultRESTPort); err == nil {
		for _, r := range ing.Spec.Rules {
			switch {
			case r.Host == "":
				errs = append(errs, field.Forbidden(path.Child("template"), fmt.Sprintf(
					"the Ingress rule has no host, so it serves every host; the operator's %s asks for a host %s", options.IngressHostsAllowed.Key, allowed)))
			case !hostAllowed(domains, r.Host):
				refuse(path.Child("template"), r.Host)
			}
		}
	}
	for i, tls := range in.TLS {
		for j, h := range tls.Hosts {
			if !hostAllowed(domains, h) {
				refuse(path.Child("tls").Index(i).Child("hosts").Index(j), h)
			}
		}
	}
	return errs
}

// hostAllowed: host is one of domains or a subdomain of one ("*.d" included), compared as DNS
// names are: without case and without a trailing dot.
func hostAllowed(domains []string, host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, d := range domains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// annotationAllowed: key is listed, or starts with a listed prefix ("nginx.ingress.kubernetes.io/ssl-*").
func annotationAllowed(allowed []string, key string) bool {
	for _, a := range allowed {
		if prefix, ok := strings.CutSuffix(a, "*"); ok && strings.HasPrefix(key, prefix) || a == key {
			return true
		}
	}
	return false
}

// podSecurityEvaluator runs the Pod Security Standards' checks of the Kubernetes version this
// operator is built against.
var podSecurityEvaluator = func() psapolicy.Evaluator {
	e, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil) // nil: no older version emulated
	if err != nil {
		panic(fmt.Sprintf("pod security checks: %v", err)) // the library's own check list: cannot fail
	}
	return e
}()

// componentPod is one kind of pod the cluster runs, and the user's templates it is made from.
type componentPod struct {
	name      string
	pod       *corev1.Pod
	templates []*field.Path // the templates set that went into it, spec.podTemplate first
}

// validatePodSecurity evaluates the pods the operator (JobManager) and Flink (native
// TaskManagers) would create, as pkg/native builds them, against level. A violation is reported
// at the user template that carries it (the component's, then spec.podTemplate), or at
// spec.podTemplate when it is a setting none of them makes (e.g. runAsNonRoot under restricted).
func (v *Validator) validatePodSecurity(dep *flinkv1beta1.FlinkDeployment, level psaapi.Level) field.ErrorList {
	pods, err := clusterPods(dep, v.Defaults)
	if err != nil {
		return nil // the cluster cannot be built: reported by the other rules, and nothing is deployed
	}
	spec := field.NewPath("spec")
	lv := psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}
	var errs field.ErrorList
	for _, c := range pods {
		res := psapolicy.AggregateCheckResults(podSecurityEvaluator.EvaluatePod(lv, &c.pod.ObjectMeta, &c.pod.Spec))
		if res.Allowed {
			continue
		}
		path := spec.Child("podTemplate")
		if len(c.templates) > 0 {
			path = c.templates[len(c.templates)-1]
			if len(c.templates) > 1 && carries(dep, c.templates[0], lv, res) {
				path = c.templates[0]
			}
		}
		errs = append(errs, field.Forbidden(path, fmt.Sprintf("the %s pod violates the pod security level %q the operator enforces (%s): %s",
			c.name, level, options.PodSecurityLevel.Key, res.ForbiddenDetail())))
	}
	return errs
}

// carries reports whether the template at path alone breaks a rule the merged pod breaks.
func carries(dep *flinkv1beta1.FlinkDeployment, path *field.Path, lv psaapi.LevelVersion, merged psapolicy.AggregateCheckResult) bool {
	t := dep.Spec.PodTemplate
	if path.String() != "spec.podTemplate" || t == nil {
		return false
	}
	alone := psapolicy.AggregateCheckResults(podSecurityEvaluator.EvaluatePod(lv, &t.ObjectMeta, &t.Spec))
	for _, r := range alone.ForbiddenReasons {
		if contains(merged.ForbiddenReasons, r) {
			return true
		}
	}
	return false
}

// clusterPods are the JobManager and TaskManager pods of the cluster dep describes.
func clusterPods(dep *flinkv1beta1.FlinkDeployment, defaults flinkconf.Defaults) ([]componentPod, error) {
	cluster, err := native.Build(dep, defaults, flinkconf.BuildOptions{ResultStoreID: "policy-check"})
	if err != nil {
		return nil, err
	}
	spec := field.NewPath("spec")
	templates := func(component string, own *corev1.Pod) []*field.Path {
		var out []*field.Path
		if dep.Spec.PodTemplate != nil {
			out = append(out, spec.Child("podTemplate"))
		}
		if own != nil {
			out = append(out, spec.Child(component, "podTemplate"))
		}
		return out
	}
	var jmTemplate, tmTemplate *corev1.Pod
	if dep.Spec.JobManager != nil {
		jmTemplate = dep.Spec.JobManager.PodTemplate
	}
	if dep.Spec.TaskManager != nil {
		tmTemplate = dep.Spec.TaskManager.PodTemplate
	}
	jm := cluster.JobManager.Spec.Template
	out := []componentPod{{name: "JobManager", pod: &corev1.Pod{ObjectMeta: jm.ObjectMeta, Spec: jm.Spec},
		templates: templates("jobManager", jmTemplate)}}
	tm, err := taskManagerPod(cluster)
	if err != nil {
		return nil, err
	}
	return append(out, componentPod{name: "TaskManager", pod: tm, templates: templates("taskManager", tmTemplate)}), nil
}

// taskManagerPod is a TaskManager pod: the standalone Deployment's template, or the template a
// native JobManager creates TaskManager pods from, with Flink's main container in it.
func taskManagerPod(cluster *native.Cluster) (*corev1.Pod, error) {
	if cluster.TaskManager != nil {
		t := cluster.TaskManager.Spec.Template
		return &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}, nil
	}
	pod := &corev1.Pod{}
	if cluster.PodTemplate != nil {
		if err := yaml.Unmarshal([]byte(cluster.PodTemplate.Data[flinkconf.TaskManagerPodFile]), pod); err != nil {
			return nil, fmt.Errorf("TaskManager pod template: %w", err)
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == native.MainContainer {
			return pod, nil
		}
	}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: native.MainContainer})
	return pod, nil
}
