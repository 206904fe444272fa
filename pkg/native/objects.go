package native

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Cluster holds the Kubernetes objects of one Flink cluster.
type Cluster struct {
	// Owner is the FlinkDeployment's UID; objects of the cluster's names that it does not own
	// are never applied to nor deleted (ownership.go).
	Owner types.UID
	// Config is the effective Flink configuration written into ConfigMap.
	Config flinkconf.Config
	// ResultStoreID names the result stores of this deployment (BuildOptions.ResultStoreID, or
	// the random one Build chose); empty when the cluster has none (no HA storage, a session).
	ResultStoreID string

	// JobManager is the JobManager Deployment; it owns every other object below except the
	// Ingress, so deleting it removes the cluster (HA ConfigMaps excepted, as upstream).
	JobManager *appsv1.Deployment
	// TaskManager is the TaskManager Deployment of a standalone cluster; nil in native mode,
	// where the JobManager creates TaskManager pods itself.
	TaskManager *appsv1.Deployment
	// ConfigMap holds the Flink configuration and logging files.
	ConfigMap *corev1.ConfigMap
	// PodTemplate holds the TaskManager pod template of a native cluster, when there is one.
	PodTemplate *corev1.ConfigMap
	// RESTService fronts the JobManager's REST endpoint.
	RESTService *corev1.Service
	// InternalService is how TaskManagers reach the JobManager without HA; nil with HA.
	InternalService *corev1.Service
	// Ingress, when spec.ingress is set; owned by the FlinkDeployment.
	Ingress *networkingv1.Ingress
	// IngressUnmanaged: the operator configuration sets kubernetes.operator.ingress.manage to
	// false, so no Ingress is created, updated or deleted (Ingress is then nil).
	IngressUnmanaged bool
}

// Dependents are the objects owned by the JobManager Deployment, in apply order.
func (c *Cluster) Dependents() []client.Object {
	var out []client.Object
	for _, o := range []client.Object{c.ConfigMap, c.PodTemplate, c.RESTService, c.InternalService, c.TaskManager} {
		if !isNil(o) {
			out = append(out, o)
		}
	}
	return out
}

// Objects are all objects of the cluster, JobManager Deployment first.
func (c *Cluster) Objects() []client.Object {
	out := append([]client.Object{c.JobManager}, c.Dependents()...)
	if c.Ingress != nil {
		out = append(out, c.Ingress)
	}
	return out
}

func isNil(o client.Object) bool {
	switch v := o.(type) {
	case *corev1.ConfigMap:
		return v == nil
	case *corev1.Service:
		return v == nil
	case *appsv1.Deployment:
		return v == nil
	case *networkingv1.Ingress:
		return v == nil
	}
	return o == nil
}

// Build computes the objects of the cluster a FlinkDeployment describes. Errors name the
// spec field at fault.
//
// A cluster to deploy always gets result stores of its own: without opts.ResultStoreID, Build
// picks a random one (fresh per call, so a caller that retries a deployment and must keep its
// stores passes the id it recorded).
func Build(dep *flinkv1beta1.FlinkDeployment, defaults flinkconf.Defaults, opts flinkconf.BuildOptions) (*Cluster, error) {
	if opts.ResultStoreID == "" {
		opts.ResultStoreID = string(uuid.NewUUID())
	}
	conf, err := flinkconf.EffectiveConfig(dep, defaults, opts)
	if err != nil {
		return nil, err
	}
	b := builder{dep: dep, conf: conf, clusterType: TypeNative}
	if dep.Spec.Mode == flinkv1beta1.DeploymentModeStandalone {
		b.clusterType = TypeStandalone
	}
	if b.templates, err = templateOptionsOf(dep, defaults); err != nil {
		return nil, err
	}
	ports, err := flinkconf.Ports(conf)
	if err != nil {
		return nil, err
	}
	b.restPort, b.rpcPort, b.blobPort, b.tmRPCPort = ports[0], ports[1], ports[2], ports[3]

	c := &Cluster{Config: conf, Owner: dep.UID}
	if dep.Spec.Job != nil && flinkconf.HAStorageDir(conf) != "" {
		c.ResultStoreID = opts.ResultStoreID // the condition resultStores wrote the stores under
	}
	if c.PodTemplate, err = b.taskManagerPodTemplate(); err != nil {
		return nil, err
	}
	if c.PodTemplate == nil {
		delete(conf, "kubernetes.pod-template-file.taskmanager")
	}
	if c.ConfigMap, err = b.configMap(); err != nil {
		return nil, err
	}
	if c.JobManager, err = b.jobManager(c.PodTemplate != nil); err != nil {
		return nil, err
	}
	if opts.Attempt != "" {
		c.JobManager.Annotations[AnnotationDeployAttempt] = opts.Attempt
	}
	if b.clusterType == TypeStandalone {
		if c.TaskManager, err = b.taskManager(); err != nil {
			return nil, err
		}
	}
	if c.RESTService, err = b.restService(); err != nil {
		return nil, err
	}
	if !conf.HAEnabled() {
		c.InternalService = b.internalService()
	}
	c.IngressUnmanaged = !options.ManageIngress.Get(defaults.Operator)
	if dep.Spec.Ingress != nil && !c.IngressUnmanaged {
		if c.Ingress, err = BuildIngress(dep, b.restPort); err != nil {
			return nil, err
		}
	}
	return c, nil
}

type builder struct {
	dep                                    *flinkv1beta1.FlinkDeployment
	conf                                   flinkconf.Config
	clusterType                            string
	restPort, rpcPort, blobPort, tmRPCPort int32
	templates                              templateOptions
}

func (b *builder) name() string { return b.dep.Name }

func (b *builder) meta(name string, component string) metav1.ObjectMeta {
	labels := map[string]string{LabelApp: b.name(), LabelType: b.clusterType}
	if component != "" {
		labels[LabelComponent] = component
	}
	return metav1.ObjectMeta{Name: name, Namespace: b.dep.Namespace, Labels: labels}
}

func (b *builder) configMap() (*corev1.ConfigMap, error) {
	file, err := flinkconf.RenderConfigFile(b.conf, b.dep.Spec.FlinkVersion)
	if err != nil {
		return nil, err
	}
	data := LoggingFiles(&b.dep.Spec)
	data[flinkconf.ConfigFileName(b.dep.Spec.FlinkVersion)] = file
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: b.meta(ConfigMapName(b.name()), ""),
		Data:       data,
	}, nil
}

// userPod merges spec.podTemplate with the component's template, as upstream.
func (b *builder) userPod(component *corev1.Pod) (*corev1.Pod, error) {
	return MergeTemplates(b.dep.Spec.PodTemplate, component, b.templates.mergeByName)
}

// taskManagerPodTemplate is the TaskManager template a native JobManager creates pods from.
func (b *builder) taskManagerPodTemplate() (*corev1.ConfigMap, error) {
	if b.clusterType != TypeNative {
		return nil, nil
	}
	var tmTemplate *corev1.Pod
	tm := b.dep.Spec.TaskManager
	if tm != nil {
		tmTemplate = tm.PodTemplate
	}
	if b.dep.Spec.PodTemplate == nil && tmTemplate == nil && extraResources(tm) == nil {
		return nil, nil
	}
	pod, err := b.userPod(tmTemplate)
	if err != nil {
		return nil, fmt.Errorf("spec.taskManager.podTemplate: %w", err)
	}
	if extra := extraResources(tm); extra != nil {
		pod, err = MergePods(pod, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: MainContainer, Resources: *extra}}}})
		if err != nil {
			return nil, err
		}
	}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	out, err := yaml.Marshal(pod)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: b.meta(PodTemplateConfigMapName(b.name()), ""),
		Data:       map[string]string{flinkconf.TaskManagerPodFile: string(out)},
	}, nil
}

// extraResources are a native TaskManager's resources Flink does not set itself (cpu and
// memory come from the configuration), e.g. ephemeral-storage.
func extraResources(tm *flinkv1beta1.TaskManagerSpec) *corev1.ResourceRequirements {
	if tm == nil {
		return nil
	}
	full := containerResources(tm.Resources, tm.Resource)
	extra := corev1.ResourceRequirements{}
	for name, q := range full.Requests {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			if extra.Requests == nil {
				extra.Requests = corev1.ResourceList{}
			}
			extra.Requests[name] = q
		}
	}
	for name, q := range full.Limits {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			if extra.Limits == nil {
				extra.Limits = corev1.ResourceList{}
			}
			extra.Limits[name] = q
		}
	}
	if extra.Requests == nil && extra.Limits == nil {
		return nil
	}
	return &extra
}

// containerResources: resources as given, or the legacy resource as equal requests and limits.
func containerResources(res *corev1.ResourceRequirements, legacy *flinkv1beta1.Resource) corev1.ResourceRequirements {
	if res != nil {
		out := *res.DeepCopy()
		normalizeMemory(out.Requests)
		normalizeMemory(out.Limits)
		return out
	}
	out := corev1.ResourceRequirements{}
	if legacy == nil {
		return out
	}
	list := corev1.ResourceList{}
	if legacy.CPU != nil && *legacy.CPU > 0 {
		list[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(*legacy.CPU*1000), resource.DecimalSI)
	}
	if legacy.Memory != "" {
		if bytes, err := flinkconf.MemoryBytes(legacy.Memory); err == nil {
			list[corev1.ResourceMemory] = *resource.NewQuantity(bytes, resource.BinarySI)
		}
	}
	if legacy.EphemeralStorage != "" {
		if q, err := resource.ParseQuantity(legacy.EphemeralStorage); err == nil {
			list[corev1.ResourceEphemeralStorage] = q
		}
	}
	if len(list) > 0 {
		out.Requests, out.Limits = list, list.DeepCopy()
	}
	return out
}

// Flink's options naming environment variables of the JobManager's and TaskManagers' main
// containers: containerized.master.env.NAME and containerized.taskmanager.env.NAME.
const (
	jobManagerEnvPrefix  = "containerized.master.env."
	taskManagerEnvPrefix = "containerized.taskmanager.env."
)

// containerEnv is a main container's environment as Flink's Kubernetes decorators set it: the
// pod's IP, and a variable for each configuration key under prefix (the image's entrypoint
// reads some, such as ENABLE_BUILT_IN_PLUGINS), sorted by name so that the rendering is stable.
func (b *builder) containerEnv(prefix string) []corev1.EnvVar {
	env := []corev1.EnvVar{b.podIPEnv()}
	var names []string
	for k := range b.conf {
		if name, ok := strings.CutPrefix(k, prefix); ok && name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		env = append(env, corev1.EnvVar{Name: name, Value: b.conf[prefix+name]})
	}
	return env
}

func (b *builder) podIPEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: "_POD_IP_ADDRESS", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}}
}

func (b *builder) configVolume() (corev1.Volume, corev1.VolumeMount) {
	return corev1.Volume{Name: configVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(b.name())}}}},
		corev1.VolumeMount{Name: configVolume, MountPath: FlinkConfDir}
}

// secretVolumes mount the Secrets of kubernetes.secrets ("name:/path,...") into the main
// container, as Flink's MountSecretsDecorator does for the pods it builds (a native cluster's
// TaskManagers get them from Flink itself): upstream's basic-secure example mounts its
// keystores this way.
func (b *builder) secretVolumes() ([]corev1.Volume, []corev1.VolumeMount, error) {
	secrets, err := parseMap(b.conf, "kubernetes.secrets")
	if err != nil {
		return nil, nil, err
	}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		path := secrets[name]
		if path == "" {
			return nil, nil, fmt.Errorf("flinkConfiguration kubernetes.secrets: secret %q has no mount path (want name:/path)", name)
		}
		volume := name + "-volume"
		volumes = append(volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}})
		mounts = append(mounts, corev1.VolumeMount{Name: volume, MountPath: path})
	}
	return volumes, mounts, nil
}

// jobManagerArgs is what the Flink image's entrypoint runs.
func (b *builder) jobManagerArgs() []string {
	job := b.dep.Spec.Job
	if b.clusterType == TypeNative {
		target := "kubernetes-session"
		if job != nil {
			target = "kubernetes-application"
		}
		cmd := "kubernetes-jobmanager.sh " + target
		if b.conf.HAEnabled() {
			cmd += " -Djobmanager.rpc.address=$(_POD_IP_ADDRESS)"
		}
		return []string{"bash", "-c", cmd}
	}
	if job == nil {
		args := []string{"jobmanager"}
		if b.conf.HAEnabled() {
			args = append(args, "-Djobmanager.rpc.address=$(_POD_IP_ADDRESS)")
		}
		return args
	}
	args := []string{"standalone-job"}
	if job.EntryClass != "" {
		args = append(args, "--job-classname", job.EntryClass)
	}
	if id := b.conf["$internal.pipeline.job-id"]; id != "" {
		args = append(args, "--job-id", id)
	}
	// The application entrypoint resets allow-non-restored-state from its command line, so
	// it must be given there (the restore path itself is read from the configuration).
	if b.conf["execution.state-recovery.ignore-unclaimed-state"] == "true" || b.conf["execution.savepoint.ignore-unclaimed-state"] == "true" {
		args = append(args, "--allowNonRestoredState")
	}
	if b.conf.HAEnabled() {
		args = append(args, "-Djobmanager.rpc.address=$(_POD_IP_ADDRESS)")
	}
	return append(args, job.Args...)
}

func (b *builder) jobManager(hasTMTemplate bool) (*appsv1.Deployment, error) {
	spec := &b.dep.Spec
	var jmTemplate *corev1.Pod
	var res *corev1.ResourceRequirements
	var legacy *flinkv1beta1.Resource
	replicas := int32(1)
	if jm := spec.JobManager; jm != nil {
		jmTemplate, res, legacy = jm.PodTemplate, jm.Resources, jm.Resource
		if jm.Replicas > 0 {
			replicas = jm.Replicas
		}
	}
	user, err := b.userPod(jmTemplate)
	if err != nil {
		return nil, fmt.Errorf("spec.jobManager.podTemplate: %w", err)
	}
	vol, mount := b.configVolume()
	secretVolumes, secretMounts, err := b.secretVolumes()
	if err != nil {
		return nil, err
	}
	container := corev1.Container{
		Name:            MainContainer,
		Image:           spec.Image,
		ImagePullPolicy: corev1.PullPolicy(spec.ImagePullPolicy),
		Args:            b.jobManagerArgs(),
		Env:             b.containerEnv(jobManagerEnvPrefix),
		Ports: []corev1.ContainerPort{
			{Name: PortNameREST, ContainerPort: b.restPort, Protocol: corev1.ProtocolTCP},
			{Name: PortNameRPC, ContainerPort: b.rpcPort, Protocol: corev1.ProtocolTCP},
			{Name: PortNameBlob, ContainerPort: b.blobPort, Protocol: corev1.ProtocolTCP},
		},
		Resources:    containerResources(res, legacy),
		VolumeMounts: append([]corev1.VolumeMount{mount}, secretMounts...),
	}
	if b.templates.startupProbe && !hasStartupProbe(user) {
		container.StartupProbe = b.startupProbe()
	}
	podSpec := corev1.PodSpec{
		ServiceAccountName: spec.ServiceAccount,
		Containers:         []corev1.Container{container},
		Volumes:            append([]corev1.Volume{vol}, secretVolumes...),
	}
	if hasTMTemplate {
		podSpec.Volumes = append(podSpec.Volumes, corev1.Volume{Name: podTemplateVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: PodTemplateConfigMapName(b.name())}}}})
		podSpec.Containers[0].VolumeMounts = append(podSpec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: podTemplateVolume, MountPath: flinkconf.PodTemplateDir})
	}
	return b.deployment(JobManagerDeploymentName(b.name()), ComponentJobManager, replicas, user, podSpec,
		"kubernetes.jobmanager.labels", "kubernetes.jobmanager.annotations")
}

func (b *builder) taskManager() (*appsv1.Deployment, error) {
	spec := &b.dep.Spec
	var tmTemplate *corev1.Pod
	var res *corev1.ResourceRequirements
	var legacy *flinkv1beta1.Resource
	if tm := spec.TaskManager; tm != nil {
		tmTemplate, res, legacy = tm.PodTemplate, tm.Resources, tm.Resource
	}
	replicas, err := flinkconf.TaskManagerReplicas(b.conf, spec)
	if err != nil {
		return nil, err
	}
	user, err := b.userPod(tmTemplate)
	if err != nil {
		return nil, fmt.Errorf("spec.taskManager.podTemplate: %w", err)
	}
	vol, mount := b.configVolume()
	secretVolumes, secretMounts, err := b.secretVolumes()
	if err != nil {
		return nil, err
	}
	podSpec := corev1.PodSpec{
		ServiceAccountName: spec.ServiceAccount,
		Containers: []corev1.Container{{
			Name:            MainContainer,
			Image:           spec.Image,
			ImagePullPolicy: corev1.PullPolicy(spec.ImagePullPolicy),
			Args:            []string{"taskmanager"},
			Env:             b.containerEnv(taskManagerEnvPrefix),
			Ports:           []corev1.ContainerPort{{Name: PortNameTMRPC, ContainerPort: b.tmRPCPort, Protocol: corev1.ProtocolTCP}},
			Resources:       containerResources(res, legacy),
			VolumeMounts:    append([]corev1.VolumeMount{mount}, secretMounts...),
		}},
		Volumes: append([]corev1.Volume{vol}, secretVolumes...),
	}
	return b.deployment(TaskManagerDeploymentName(b.name()), ComponentTaskManager, replicas, user, podSpec,
		"kubernetes.taskmanager.labels", "kubernetes.taskmanager.annotations")
}

// deployment lays the operator's pod over the user's template: the operator's fields win,
// the user's sidecars, init containers, volumes, env and the rest are kept.
func (b *builder) deployment(name, component string, replicas int32, user *corev1.Pod, podSpec corev1.PodSpec, labelsKey, annotationsKey string) (*appsv1.Deployment, error) {
	selector := SelectorLabels(b.name(), component, b.clusterType)
	extraLabels, err := parseMap(b.conf, labelsKey)
	if err != nil {
		return nil, err
	}
	extraAnnotations, err := parseMap(b.conf, annotationsKey)
	if err != nil {
		return nil, err
	}
	generated := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: mergeStrings(extraLabels, selector), Annotations: extraAnnotations}, Spec: podSpec}
	pod, err := OverlayPod(user, generated)
	if err != nil {
		return nil, err
	}
	meta := b.meta(name, component)
	meta.Annotations = map[string]string{AnnotationGeneration: strconv.FormatInt(b.dep.Generation, 10)}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations}, Spec: pod.Spec},
		},
	}
	if component == ComponentJobManager {
		// Never two JobManagers of one cluster at once (without HA they would both run the job).
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		d.OwnerReferences = []metav1.OwnerReference{ownerRef(b.dep)}
	}
	return d, nil
}

func (b *builder) restService() (*corev1.Service, error) {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: b.meta(flinkconf.RESTServiceName(b.name()), ComponentJobManager),
		Spec: corev1.ServiceSpec{
			Selector: SelectorLabels(b.name(), ComponentJobManager, b.clusterType),
			Ports: []corev1.ServicePort{{Name: PortNameREST, Port: b.restPort, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromString(PortNameREST)}},
		},
	}
	switch t := b.conf.Get("kubernetes.rest-service.exposed.type", "ClusterIP"); strings.ToLower(t) {
	case "clusterip":
		svc.Spec.Type = corev1.ServiceTypeClusterIP
	case "nodeport":
		svc.Spec.Type = corev1.ServiceTypeNodePort
	case "loadbalancer":
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	case "headless_clusterip":
		svc.Spec.Type = corev1.ServiceTypeClusterIP
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	default:
		return nil, fmt.Errorf("flinkConfiguration kubernetes.rest-service.exposed.type: %q, allowed: ClusterIP, NodePort, LoadBalancer, Headless_ClusterIP", t)
	}
	return svc, nil
}

func (b *builder) internalService() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: b.meta(flinkconf.InternalServiceName(b.name()), ComponentJobManager),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  SelectorLabels(b.name(), ComponentJobManager, b.clusterType),
			Ports: []corev1.ServicePort{
				{Name: PortNameRPC, Port: b.rpcPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString(PortNameRPC)},
				{Name: PortNameBlob, Port: b.blobPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString(PortNameBlob)},
			},
		},
	}
}

// startupProbe is upstream's JobManager startup probe (FlinkUtils.addStartupProbe): Flink's
// /config on the REST port, every second, never giving up (a JobManager that does not start is
// reported by the deployment state machine, not restarted by kubelet). Without readiness or
// liveness probes, as upstream, the pod is Ready once the REST endpoint has answered.
//
// It asks over http even when the REST endpoint speaks TLS, as upstream's: Flink answers a
// plain request with a redirect to https://<rest.address> (RedirectingSslHandler), which kubelet
// counts as success, while an https probe would fail where kubelet cannot handshake: client
// certificates required (security.ssl.rest.authentication-enabled), or Flink 1.x's default
// cipher suite (TLS_RSA_WITH_AES_128_CBC_SHA), which kubelets built with Go 1.22 or newer no
// longer offer.
func (b *builder) startupProbe() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/config", Port: intstr.FromString(PortNameREST)}},
		PeriodSeconds:    1,
		FailureThreshold: math.MaxInt32,
	}
}

// hasStartupProbe: the user's template gives the main container a startup probe of its own,
// which upstream keeps instead of adding its own.
func hasStartupProbe(user *corev1.Pod) bool {
	if user == nil {
		return false
	}
	for _, c := range user.Spec.Containers {
		if c.Name == MainContainer && c.StartupProbe != nil {
			return true
		}
	}
	return false
}

func ownerRef(dep *flinkv1beta1.FlinkDeployment) metav1.OwnerReference {
	t, f := true, true
	return metav1.OwnerReference{APIVersion: flinkv1beta1.GroupVersion.String(), Kind: "FlinkDeployment",
		Name: dep.Name, UID: dep.UID, Controller: &t, BlockOwnerDeletion: &f}
}

// parseMap reads Flink's map syntax "k1:v1,k2:v2" from a configuration key.
func parseMap(conf flinkconf.Config, key string) (map[string]string, error) {
	return ParseMap(conf[key], key)
}

// ParseMap reads Flink's map syntax "k1:v1,k2:v2"; key names the option in errors.
func ParseMap(raw, key string) (map[string]string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, pair := range strings.Split(raw, ",") {
		k, v, ok := strings.Cut(pair, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("flinkConfiguration %s: %q is not key:value", key, pair)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

func mergeStrings(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
