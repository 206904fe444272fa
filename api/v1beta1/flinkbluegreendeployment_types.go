package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlinkBlueGreenDeploymentState is the step of the blue/green state machine a
// FlinkBlueGreenDeployment is in. ACTIVE_BLUE and ACTIVE_GREEN are the resting states;
// the others are steps of the first deployment or of a switch between the two children.
// +kubebuilder:validation:Enum=ACTIVE_BLUE;ACTIVE_GREEN;INITIALIZING_BLUE;SAVEPOINTING_BLUE;SAVEPOINTING_GREEN;TRANSITIONING_TO_BLUE;TRANSITIONING_TO_GREEN
type FlinkBlueGreenDeploymentState string

// Blue/green states, with upstream's names.
const (
	BlueGreenInitializingBlue     FlinkBlueGreenDeploymentState = "INITIALIZING_BLUE"
	BlueGreenActiveBlue           FlinkBlueGreenDeploymentState = "ACTIVE_BLUE"
	BlueGreenActiveGreen          FlinkBlueGreenDeploymentState = "ACTIVE_GREEN"
	BlueGreenSavepointingBlue     FlinkBlueGreenDeploymentState = "SAVEPOINTING_BLUE"
	BlueGreenSavepointingGreen    FlinkBlueGreenDeploymentState = "SAVEPOINTING_GREEN"
	BlueGreenTransitioningToBlue  FlinkBlueGreenDeploymentState = "TRANSITIONING_TO_BLUE"
	BlueGreenTransitioningToGreen FlinkBlueGreenDeploymentState = "TRANSITIONING_TO_GREEN"
)

// BlueGreenDeploymentTypeLabel marks a child FlinkDeployment as the BLUE or GREEN one
// (upstream's label key and values, so children created by either operator are recognised).
const BlueGreenDeploymentTypeLabel = "flink/blue-green-deployment-type"

// FlinkDeploymentTemplateSpec is the FlinkDeployment a blue/green child is made from.
type FlinkDeploymentTemplateSpec struct {
	// metadata of the child FlinkDeployments (labels, annotations).
	// +optional
	ObjectMeta metav1.ObjectMeta `json:"metadata,omitempty"`
	// spec of the child FlinkDeployments.
	// +optional
	Spec FlinkDeploymentSpec `json:"spec,omitempty"`
}

// FlinkBlueGreenDeploymentSpec is the desired state of a FlinkBlueGreenDeployment.
type FlinkBlueGreenDeploymentSpec struct {
	// configuration of the blue/green switch: kubernetes.operator.bluegreen.abort.grace-period
	// (default 10 min), kubernetes.operator.bluegreen.reconciliation.reschedule-interval
	// (default 15 s), kubernetes.operator.bluegreen.deployment-deletion.delay (default 0 ms).
	// +optional
	Configuration map[string]string `json:"configuration,omitempty"`
	// ingress in front of the active child's REST endpoint; it is switched with the traffic.
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`
	// template of the child FlinkDeployments.
	// +optional
	Template FlinkDeploymentTemplateSpec `json:"template,omitempty"`
}

// FlinkBlueGreenDeploymentStatus is the observed state of a FlinkBlueGreenDeployment. The
// operator writes the next step here before it acts, so a restarted operator resumes the switch.
type FlinkBlueGreenDeploymentStatus struct {
	// jobStatus summarises the active child's job (RECONCILING while a child is being deployed,
	// FAILING after an aborted switch, SUSPENDED while suspended).
	// +optional
	JobStatus JobStatus `json:"jobStatus,omitempty"`
	// blueGreenState is the step of the blue/green state machine.
	// +optional
	BlueGreenState FlinkBlueGreenDeploymentState `json:"blueGreenState,omitempty"`
	// lastReconciledSpec is the JSON of the spec last acted upon ({"spec":{...}}).
	// +optional
	LastReconciledSpec string `json:"lastReconciledSpec,omitempty"`
	// lastReconciledTimestamp is when the status was last written (RFC 3339).
	// +optional
	LastReconciledTimestamp string `json:"lastReconciledTimestamp,omitempty"`
	// abortTimestamp is when a switch in progress is aborted unless the new child is ready (RFC 3339).
	// +optional
	AbortTimestamp string `json:"abortTimestamp,omitempty"`
	// deploymentReadyTimestamp is when the new child was first seen ready (RFC 3339); the old
	// child is deleted deployment-deletion.delay after it.
	// +optional
	DeploymentReadyTimestamp string `json:"deploymentReadyTimestamp,omitempty"`
	// savepointTriggerId identifies the savepoint taken of the active child for a switch.
	// +optional
	SavepointTriggerID string `json:"savepointTriggerId,omitempty"`
	// error is the last error, for example why a switch was aborted.
	// +optional
	Error string `json:"error,omitempty"`
	// observedGeneration is the generation whose spec was last acted upon.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are standard Kubernetes conditions (Ready, Progressing, Degraded) with
	// observedGeneration. Progressing's reason says what is under way: Deploying (the first
	// child), Savepointing and Switching (a switch), the active child's own reason (a suspend,
	// resume or change applied to it in place), else Suspended, WaitingForUser or Settled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// operations is what the operator did to the resource, oldest first, the last 10 kept: the
	// first child's deployment, each switch (an Upgrade; Failed when it was aborted), and each
	// suspend, resume or in-place change of the active child, with the generation it was for,
	// when it started and ended, its outcome, the savepoint the new child started from, and its
	// last message. This operator's own field: the Apache operator's schema prunes it.
	// +listType=atomic
	// +optional
	Operations []Operation `json:"operations,omitempty"`
}

// FlinkBlueGreenDeployment runs a Flink application as two child FlinkDeployments, <name>-blue
// and <name>-green, one of them active: a spec change starts the other one from a savepoint of
// the active one, switches over when it is ready and deletes the old one.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=flinkbgdep,categories=flink
// +kubebuilder:printcolumn:name="Job Status",type=string,JSONPath=`.status.jobStatus.state`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.blueGreenState`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FlinkBlueGreenDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlinkBlueGreenDeploymentSpec   `json:"spec,omitempty"`
	Status FlinkBlueGreenDeploymentStatus `json:"status,omitempty"`
}

// FlinkBlueGreenDeploymentList is a list of FlinkBlueGreenDeployments.
//
// +kubebuilder:object:root=true
type FlinkBlueGreenDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkBlueGreenDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FlinkBlueGreenDeployment{}, &FlinkBlueGreenDeploymentList{})
}
