package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlinkVersion is the Flink line a deployment runs.
// v1_13 and v1_14 are accepted by the schema (as upstream) but rejected by validation.
// +kubebuilder:validation:Enum=v1_13;v1_14;v1_15;v1_16;v1_17;v1_18;v1_19;v1_20;v2_0;v2_1;v2_2;v2_3;v2_4
type FlinkVersion string

// Flink versions.
const (
	FlinkVersion1_13 FlinkVersion = "v1_13"
	FlinkVersion1_14 FlinkVersion = "v1_14"
	FlinkVersion1_15 FlinkVersion = "v1_15"
	FlinkVersion1_16 FlinkVersion = "v1_16"
	FlinkVersion1_17 FlinkVersion = "v1_17"
	FlinkVersion1_18 FlinkVersion = "v1_18"
	FlinkVersion1_19 FlinkVersion = "v1_19"
	FlinkVersion1_20 FlinkVersion = "v1_20"
	FlinkVersion2_0  FlinkVersion = "v2_0"
	FlinkVersion2_1  FlinkVersion = "v2_1"
	FlinkVersion2_2  FlinkVersion = "v2_2"
	FlinkVersion2_3  FlinkVersion = "v2_3"
	FlinkVersion2_4  FlinkVersion = "v2_4"
)

// KubernetesDeploymentMode says who creates the TaskManagers.
// +kubebuilder:validation:Enum=native;standalone
type KubernetesDeploymentMode string

const (
	// DeploymentModeNative lets the JobManager create TaskManager pods itself (the default when unset).
	DeploymentModeNative KubernetesDeploymentMode = "native"
	// DeploymentModeStandalone has the operator create a TaskManager Deployment.
	DeploymentModeStandalone KubernetesDeploymentMode = "standalone"
)

// IngressSpec asks for an Ingress in front of the JobManager's REST endpoint.
type IngressSpec struct {
	// template of the ingress address: a host form ("{{name}}.{{namespace}}.flink.example.com")
	// or a path form ("example.com/{{namespace}}/{{name}}"), with optional scheme.
	// +kubebuilder:validation:Required
	Template string `json:"template"`
	// className is the IngressClass to use.
	// +optional
	ClassName string `json:"className,omitempty"`
	// annotations added to the Ingress.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// labels added to the Ingress.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// tls configuration of the Ingress.
	// +optional
	TLS []networkingv1.IngressTLS `json:"tls,omitempty"`
}

// JobManagerSpec sizes and shapes the JobManager.
type JobManagerSpec struct {
	// resource is the legacy sizing (cpu, memory, ephemeralStorage); prefer resources.
	// +optional
	Resource *Resource `json:"resource,omitempty"`
	// resources are Kubernetes resource requirements for the JobManager container
	// (memory and cpu taken from requests, else limits).
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// replicas of the JobManager; more than one needs high availability.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// podTemplate for the JobManager pod, merged over spec.podTemplate.
	// +optional
	PodTemplate *corev1.Pod `json:"podTemplate,omitempty"`
}

// TaskManagerSpec sizes and shapes the TaskManagers.
type TaskManagerSpec struct {
	// resource is the legacy sizing (cpu, memory, ephemeralStorage); prefer resources.
	// +optional
	Resource *Resource `json:"resource,omitempty"`
	// resources are Kubernetes resource requirements for TaskManager containers.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// replicas of the TaskManager. When set, job parallelism = replicas × taskmanager.numberOfTaskSlots.
	// Target of the scale subresource (kubectl scale, HPA).
	// +kubebuilder:validation:Minimum=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// podTemplate for TaskManager pods, merged over spec.podTemplate.
	// +optional
	PodTemplate *corev1.Pod `json:"podTemplate,omitempty"`
}

// FlinkDeploymentSpec is the desired state of a Flink cluster and, with job set, its application job.
type FlinkDeploymentSpec struct {
	// job makes this an application cluster running that job; without it this is a session cluster.
	// +optional
	Job *JobSpec `json:"job,omitempty"`

	// restartNonce: changing it to a new non-null value restarts the cluster (an upgrade).
	// +optional
	RestartNonce *int64 `json:"restartNonce,omitempty"`

	// flinkConfiguration overrides the Flink configuration; flat keys ("a.b.c": "v") and nested
	// YAML maps are both accepted, values may be any scalar.
	// +optional
	FlinkConfiguration FlinkConfiguration `json:"flinkConfiguration,omitzero"`

	// image of the Flink containers.
	// +optional
	Image string `json:"image,omitempty"`

	// imagePullPolicy of the Flink containers.
	// +optional
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`

	// serviceAccount the Flink pods run as (needed by native mode to create TaskManagers).
	// +optional
	ServiceAccount string `json:"serviceAccount,omitempty"`

	// flinkVersion of the image.
	// +optional
	FlinkVersion FlinkVersion `json:"flinkVersion,omitempty"`

	// ingress exposes the Flink web UI / REST endpoint.
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`

	// podTemplate is the base pod template for JobManager and TaskManager pods.
	// +optional
	PodTemplate *corev1.Pod `json:"podTemplate,omitempty"`

	// jobManager sizing and template.
	// +optional
	JobManager *JobManagerSpec `json:"jobManager,omitempty"`

	// taskManager sizing and template.
	// +optional
	TaskManager *TaskManagerSpec `json:"taskManager,omitempty"`

	// logConfiguration replaces the default logging configuration; keys
	// "log4j-console.properties" and "logback-console.xml".
	// +optional
	LogConfiguration map[string]string `json:"logConfiguration,omitempty"`

	// mode is native (default) or standalone; it cannot change after the first deployment.
	// +optional
	Mode KubernetesDeploymentMode `json:"mode,omitempty"`
}

// JobManagerDeploymentStatus is the observed state of the JobManager deployment.
// +kubebuilder:validation:Enum=DEPLOYED_NOT_READY;DEPLOYING;ERROR;MISSING;READY
type JobManagerDeploymentStatus string

// JobManager deployment states.
const (
	JobManagerDeployedNotReady JobManagerDeploymentStatus = "DEPLOYED_NOT_READY"
	JobManagerDeploying        JobManagerDeploymentStatus = "DEPLOYING"
	JobManagerError            JobManagerDeploymentStatus = "ERROR"
	JobManagerMissing          JobManagerDeploymentStatus = "MISSING"
	JobManagerReady            JobManagerDeploymentStatus = "READY"
)

// TaskManagerInfo backs the scale subresource.
type TaskManagerInfo struct {
	// labelSelector of the TaskManager pods ("component=taskmanager,app=<name>").
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// replicas of the TaskManager currently needed by the running job.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}

// FlinkDeploymentStatus is the observed state of a FlinkDeployment.
type FlinkDeploymentStatus struct {
	CommonStatus `json:",inline"`

	// clusterInfo: flink-version, flink-revision, total-cpu, total-memory, state-size, ...
	// +optional
	ClusterInfo map[string]string `json:"clusterInfo,omitempty"`

	// jobManagerDeploymentStatus is the state of the JobManager deployment.
	// +optional
	JobManagerDeploymentStatus JobManagerDeploymentStatus `json:"jobManagerDeploymentStatus,omitempty"`

	// taskManager replicas and selector, for the scale subresource.
	// +optional
	TaskManager *TaskManagerInfo `json:"taskManager,omitempty"`

	// rescale is the in-place rescale of the running job that Flink was asked for and has not
	// shown yet: set when the operator changes the job's resource requirements, cleared once
	// Flink's REST reports the new parallelism of every vertex, the job stops running or another
	// spec is applied. This operator's own field: the Apache operator's schema prunes it.
	// +optional
	Rescale *Rescale `json:"rescale,omitempty"`
}

// Rescale is an in-place rescale in flight (status.rescale): the per-vertex parallelism asked
// for and what Flink reports, recorded in the status so that an operator restarted meanwhile
// goes on following it.
type Rescale struct {
	// generation is the resource's metadata.generation whose spec asked for the rescale.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// requestedAt is when Flink was asked for the new parallelism.
	RequestedAt metav1.Time `json:"requestedAt"`
	// from is the parallelism of each rescaled vertex before, as Flink's resource requirements
	// said (vertexId:parallelism pairs, comma-separated).
	// +optional
	From string `json:"from,omitempty"`
	// to is the parallelism asked for (vertexId:parallelism pairs, comma-separated).
	To string `json:"to"`
	// reported is the parallelism Flink's REST last reported for these vertices, while it
	// differs from to.
	// +optional
	Reported string `json:"reported,omitempty"`
	// timedOut: Flink did not report the parallelism asked for within
	// kubernetes.operator.deployment.readiness.timeout; the resource is Degraded (ScaleTimedOut)
	// until it does.
	// +optional
	TimedOut bool `json:"timedOut,omitempty"`
}

// FlinkDeployment is a Flink cluster: an application cluster running one job, or a session
// cluster that FlinkSessionJobs submit to.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.taskManager.replicas,statuspath=.status.taskManager.replicas,selectorpath=.status.taskManager.labelSelector
// +kubebuilder:resource:shortName=flinkdep,categories=flink
// +kubebuilder:printcolumn:name="Job Status",type=string,JSONPath=`.status.jobStatus.state`
// +kubebuilder:printcolumn:name="Lifecycle State",type=string,JSONPath=`.status.lifecycleState`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FlinkDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlinkDeploymentSpec   `json:"spec,omitempty"`
	Status FlinkDeploymentStatus `json:"status,omitempty"`
}

// FlinkDeploymentList is a list of FlinkDeployments.
//
// +kubebuilder:object:root=true
type FlinkDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FlinkDeployment{}, &FlinkDeploymentList{})
}
