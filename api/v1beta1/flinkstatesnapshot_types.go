package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JobKind is the kind of resource a snapshot belongs to.
// +kubebuilder:validation:Enum=FlinkDeployment;FlinkSessionJob
type JobKind string

// Job kinds a snapshot can reference.
const (
	JobKindFlinkDeployment JobKind = "FlinkDeployment"
	JobKindFlinkSessionJob JobKind = "FlinkSessionJob"
)

// JobReference names the FlinkDeployment or FlinkSessionJob (same namespace) a snapshot is of.
type JobReference struct {
	// kind of the referenced resource.
	// +optional
	Kind JobKind `json:"kind,omitempty"`
	// name of the referenced resource.
	// +optional
	Name string `json:"name,omitempty"`
}

// SavepointSpec asks for a savepoint.
type SavepointSpec struct {
	// path (directory) to write the savepoint to; defaults to the job's savepoint directory
	// (execution.checkpointing.savepoint-dir / state.savepoints.dir). With alreadyExists, the savepoint's path.
	// +optional
	Path string `json:"path,omitempty"`
	// formatType of the savepoint: CANONICAL (default) or NATIVE.
	// +kubebuilder:default=CANONICAL
	// +optional
	FormatType SavepointFormatType `json:"formatType,omitempty"`
	// disposeOnDelete disposes the savepoint data when this resource is deleted (default true).
	// +kubebuilder:default=true
	// +optional
	DisposeOnDelete *bool `json:"disposeOnDelete,omitempty"`
	// alreadyExists records an existing savepoint at path without triggering one.
	// +kubebuilder:default=false
	// +optional
	AlreadyExists *bool `json:"alreadyExists,omitempty"`
}

// CheckpointSpec asks for a (full) checkpoint. It has no fields.
type CheckpointSpec struct{}

// FlinkStateSnapshotSpec is the desired snapshot.
type FlinkStateSnapshotSpec struct {
	// jobReference is the job to snapshot; required unless savepoint.alreadyExists.
	// +optional
	JobReference *JobReference `json:"jobReference,omitempty"`
	// savepoint asks for a savepoint. Exactly one of savepoint and checkpoint is set.
	// +optional
	Savepoint *SavepointSpec `json:"savepoint,omitempty"`
	// checkpoint asks for a checkpoint. Exactly one of savepoint and checkpoint is set.
	// +optional
	Checkpoint *CheckpointSpec `json:"checkpoint,omitempty"`
	// backoffLimit is how many times a failed snapshot is retried: -1 (default) without limit, 0 never.
	// Retries back off exponentially (10s, 20s, 40s, ...).
	// +kubebuilder:default=-1
	// +kubebuilder:validation:Minimum=-1
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
}

// SnapshotState is the state of a snapshot.
// +kubebuilder:validation:Enum=ABANDONED;COMPLETED;FAILED;IN_PROGRESS;TRIGGER_PENDING
type SnapshotState string

// Snapshot states.
const (
	SnapshotAbandoned      SnapshotState = "ABANDONED"
	SnapshotCompleted      SnapshotState = "COMPLETED"
	SnapshotFailed         SnapshotState = "FAILED"
	SnapshotInProgress     SnapshotState = "IN_PROGRESS"
	SnapshotTriggerPending SnapshotState = "TRIGGER_PENDING"
)

// FlinkStateSnapshotStatus is the observed state of a snapshot.
type FlinkStateSnapshotStatus struct {
	// state of the snapshot.
	// +optional
	State SnapshotState `json:"state,omitempty"`
	// triggerId of the Flink asynchronous operation.
	// +optional
	TriggerID string `json:"triggerId,omitempty"`
	// triggerTimestamp, when the snapshot was triggered (RFC 3339).
	// +optional
	TriggerTimestamp string `json:"triggerTimestamp,omitempty"`
	// resultTimestamp, when the snapshot completed or failed (RFC 3339).
	// +optional
	ResultTimestamp string `json:"resultTimestamp,omitempty"`
	// path of the completed savepoint or checkpoint.
	// +optional
	Path string `json:"path,omitempty"`
	// error of the last failed attempt.
	// +optional
	Error string `json:"error,omitempty"`
	// failures counts failed attempts.
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// conditions are standard Kubernetes conditions (Ready, Progressing, Degraded) with observedGeneration.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FlinkStateSnapshot is a savepoint or checkpoint of a FlinkDeployment's or FlinkSessionJob's job.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=flinksnp,categories=flink
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.status.path`
// +kubebuilder:printcolumn:name="Result Timestamp",type=string,JSONPath=`.status.resultTimestamp`
// +kubebuilder:printcolumn:name="Snapshot State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FlinkStateSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlinkStateSnapshotSpec   `json:"spec,omitempty"`
	Status FlinkStateSnapshotStatus `json:"status,omitempty"`
}

// FlinkStateSnapshotList is a list of FlinkStateSnapshots.
//
// +kubebuilder:object:root=true
type FlinkStateSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkStateSnapshot `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FlinkStateSnapshot{}, &FlinkStateSnapshotList{})
}
