package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlinkSessionJobSpec is the desired state of a job on a session cluster.
type FlinkSessionJobSpec struct {
	// deploymentName is the session FlinkDeployment (same namespace) the job runs on. Immutable.
	// +optional
	DeploymentName string `json:"deploymentName,omitempty"`

	// flinkConfiguration for this job, merged over the session cluster's configuration.
	// +optional
	FlinkConfiguration FlinkConfiguration `json:"flinkConfiguration,omitzero"`

	// job to run.
	// +optional
	Job *JobSpec `json:"job,omitempty"`

	// restartNonce: changing it to a new non-null value restarts the job.
	// +optional
	RestartNonce *int64 `json:"restartNonce,omitempty"`
}

// FlinkSessionJobStatus is the observed state of a FlinkSessionJob.
type FlinkSessionJobStatus struct {
	CommonStatus `json:",inline"`
}

// FlinkSessionJob is a job submitted to a session cluster run by a FlinkDeployment without job.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sessionjob,categories=flink
// +kubebuilder:printcolumn:name="Job Status",type=string,JSONPath=`.status.jobStatus.state`
// +kubebuilder:printcolumn:name="Lifecycle State",type=string,JSONPath=`.status.lifecycleState`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FlinkSessionJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlinkSessionJobSpec   `json:"spec,omitempty"`
	Status FlinkSessionJobStatus `json:"status,omitempty"`
}

// FlinkSessionJobList is a list of FlinkSessionJobs.
//
// +kubebuilder:object:root=true
type FlinkSessionJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkSessionJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FlinkSessionJob{}, &FlinkSessionJobList{})
}
