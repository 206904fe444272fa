package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JobState is the desired state of a Flink job.
// +kubebuilder:validation:Enum=running;suspended
type JobState string

const (
	// JobStateRunning asks for the job to run.
	JobStateRunning JobState = "running"
	// JobStateSuspended asks for the job to be stopped (according to its upgradeMode) and kept stopped.
	JobStateSuspended JobState = "suspended"
)

// UpgradeMode says how a running job is stopped and restored when its spec changes.
// +kubebuilder:validation:Enum=last-state;savepoint;stateless
type UpgradeMode string

const (
	// UpgradeModeStateless restarts the job from scratch (or from initialSavepointPath on first deploy).
	UpgradeModeStateless UpgradeMode = "stateless"
	// UpgradeModeSavepoint stops the job with a savepoint and restores from it.
	UpgradeModeSavepoint UpgradeMode = "savepoint"
	// UpgradeModeLastState restores from the latest checkpoint kept in the HA metadata.
	UpgradeModeLastState UpgradeMode = "last-state"
)

// JobSpec describes a Flink job, for application FlinkDeployments and for FlinkSessionJobs.
type JobSpec struct {
	// jarURI is the job jar. For application clusters usually local:///opt/flink/...;
	// for session jobs it is fetched by the operator (local://, file://, http(s)://).
	// +optional
	JarURI string `json:"jarURI,omitempty"`

	// parallelism of the job. 0 means: from the Flink configuration
	// (or replicas × task slots when taskManager.replicas is set).
	// +optional
	Parallelism int32 `json:"parallelism,omitempty"`

	// entryClass is the fully qualified main class of the job.
	// +optional
	EntryClass string `json:"entryClass,omitempty"`

	// args are passed to the job's main method.
	// +optional
	Args []string `json:"args,omitempty"`

	// state is the desired state of the job: running (default) or suspended.
	// +kubebuilder:default=running
	// +optional
	State JobState `json:"state,omitempty"`

	// upgradeMode says how the job is stopped and restored on upgrades and suspend:
	// stateless (default), savepoint or last-state.
	// +kubebuilder:default=stateless
	// +optional
	UpgradeMode UpgradeMode `json:"upgradeMode,omitempty"`

	// savepointTriggerNonce: changing it to a new non-null value triggers a manual savepoint.
	// Deprecated upstream in favour of FlinkStateSnapshot resources; still honoured.
	// +optional
	SavepointTriggerNonce *int64 `json:"savepointTriggerNonce,omitempty"`

	// checkpointTriggerNonce: changing it to a new non-null value triggers a manual checkpoint (Flink 1.17+).
	// Deprecated upstream in favour of FlinkStateSnapshot resources; still honoured.
	// +optional
	CheckpointTriggerNonce *int64 `json:"checkpointTriggerNonce,omitempty"`

	// initialSavepointPath is the savepoint the job starts from on its first deployment,
	// or on a savepoint redeploy (savepointRedeployNonce).
	// +optional
	InitialSavepointPath string `json:"initialSavepointPath,omitempty"`

	// allowNonRestoredState allows restoring from a savepoint with state that maps to no operator
	// (execution.savepoint.ignore-unclaimed-state).
	// +optional
	AllowNonRestoredState *bool `json:"allowNonRestoredState,omitempty"`

	// savepointRedeployNonce: changing it to a new non-null value redeploys the job from
	// initialSavepointPath, discarding the current state.
	// +optional
	SavepointRedeployNonce *int64 `json:"savepointRedeployNonce,omitempty"`

	// autoscalerResetNonce: changing it resets the autoscaler's state and parallelism overrides.
	// +optional
	AutoscalerResetNonce *int64 `json:"autoscalerResetNonce,omitempty"`
}

// JobStatusState is the state of a Flink job as Flink reports it, plus RECONCILING,
// which the operator uses while the job's state is unknown or being (re)deployed.
// +kubebuilder:validation:Enum=CANCELED;CANCELLING;CREATED;FAILED;FAILING;FINISHED;INITIALIZING;RECONCILING;RESTARTING;RUNNING;SUSPENDED
type JobStatusState string

// Flink job states.
const (
	JobStatusCanceled     JobStatusState = "CANCELED"
	JobStatusCancelling   JobStatusState = "CANCELLING"
	JobStatusCreated      JobStatusState = "CREATED"
	JobStatusFailed       JobStatusState = "FAILED"
	JobStatusFailing      JobStatusState = "FAILING"
	JobStatusFinished     JobStatusState = "FINISHED"
	JobStatusInitializing JobStatusState = "INITIALIZING"
	JobStatusReconciling  JobStatusState = "RECONCILING"
	JobStatusRestarting   JobStatusState = "RESTARTING"
	JobStatusRunning      JobStatusState = "RUNNING"
	JobStatusSuspended    JobStatusState = "SUSPENDED"
)

// SnapshotTriggerType says why a snapshot was taken.
// +kubebuilder:validation:Enum=MANUAL;PERIODIC;UNKNOWN;UPGRADE
type SnapshotTriggerType string

// Snapshot trigger types.
const (
	SnapshotTriggerManual   SnapshotTriggerType = "MANUAL"
	SnapshotTriggerPeriodic SnapshotTriggerType = "PERIODIC"
	SnapshotTriggerUnknown  SnapshotTriggerType = "UNKNOWN"
	SnapshotTriggerUpgrade  SnapshotTriggerType = "UPGRADE"
)

// SavepointFormatType is the binary format of a savepoint.
// +kubebuilder:validation:Enum=CANONICAL;NATIVE;UNKNOWN
type SavepointFormatType string

// Savepoint formats.
const (
	SavepointFormatCanonical SavepointFormatType = "CANONICAL"
	SavepointFormatNative    SavepointFormatType = "NATIVE"
	SavepointFormatUnknown   SavepointFormatType = "UNKNOWN"
)

// CheckpointType is the kind of a checkpoint.
// +kubebuilder:validation:Enum=FULL;INCREMENTAL;UNKNOWN
type CheckpointType string

// Checkpoint types.
const (
	CheckpointTypeFull        CheckpointType = "FULL"
	CheckpointTypeIncremental CheckpointType = "INCREMENTAL"
	CheckpointTypeUnknown     CheckpointType = "UNKNOWN"
)

// Savepoint is one savepoint recorded in the (legacy) status-based savepoint bookkeeping.
type Savepoint struct {
	// timeStamp in epoch milliseconds.
	// +optional
	TimeStamp int64 `json:"timeStamp,omitempty"`
	// location (path) of the savepoint.
	// +optional
	Location string `json:"location,omitempty"`
	// triggerType says why the savepoint was taken.
	// +optional
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`
	// formatType of the savepoint.
	// +optional
	FormatType SavepointFormatType `json:"formatType,omitempty"`
	// triggerNonce is the savepointTriggerNonce that asked for it, for manual savepoints.
	// +optional
	TriggerNonce *int64 `json:"triggerNonce,omitempty"`
}

// SavepointInfo is the legacy status-based savepoint bookkeeping, used when
// FlinkStateSnapshot resources are disabled.
type SavepointInfo struct {
	// lastSavepoint is the last completed savepoint.
	// +optional
	LastSavepoint *Savepoint `json:"lastSavepoint,omitempty"`
	// triggerId of the savepoint in progress.
	// +optional
	TriggerID string `json:"triggerId,omitempty"`
	// triggerTimestamp of the savepoint in progress, epoch milliseconds.
	// +optional
	TriggerTimestamp *int64 `json:"triggerTimestamp,omitempty"`
	// triggerType of the savepoint in progress.
	// +optional
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`
	// formatType of the savepoint in progress.
	// +optional
	FormatType SavepointFormatType `json:"formatType,omitempty"`
	// savepointHistory lists the completed savepoints still retained.
	// +optional
	SavepointHistory []Savepoint `json:"savepointHistory,omitempty"`
	// lastPeriodicSavepointTimestamp in epoch milliseconds.
	// +optional
	LastPeriodicSavepointTimestamp int64 `json:"lastPeriodicSavepointTimestamp,omitempty"`
}

// Checkpoint is one checkpoint recorded in the (legacy) status-based checkpoint bookkeeping.
type Checkpoint struct {
	// timeStamp in epoch milliseconds.
	// +optional
	TimeStamp int64 `json:"timeStamp,omitempty"`
	// triggerType says why the checkpoint was taken.
	// +optional
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`
	// formatType of the checkpoint.
	// +optional
	FormatType CheckpointType `json:"formatType,omitempty"`
	// triggerNonce is the checkpointTriggerNonce that asked for it, for manual checkpoints.
	// +optional
	TriggerNonce *int64 `json:"triggerNonce,omitempty"`
}

// CheckpointInfo is the legacy status-based checkpoint bookkeeping.
type CheckpointInfo struct {
	// lastCheckpoint is the last completed checkpoint the operator triggered.
	// +optional
	LastCheckpoint *Checkpoint `json:"lastCheckpoint,omitempty"`
	// triggerId of the checkpoint in progress.
	// +optional
	TriggerID string `json:"triggerId,omitempty"`
	// triggerTimestamp of the checkpoint in progress, epoch milliseconds.
	// +optional
	TriggerTimestamp *int64 `json:"triggerTimestamp,omitempty"`
	// triggerType of the checkpoint in progress.
	// +optional
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`
	// formatType of the checkpoint in progress.
	// +optional
	FormatType CheckpointType `json:"formatType,omitempty"`
	// lastPeriodicCheckpointTimestamp in epoch milliseconds.
	// +optional
	LastPeriodicCheckpointTimestamp int64 `json:"lastPeriodicCheckpointTimestamp,omitempty"`
}

// JobStatus is the observed state of the Flink job.
type JobStatus struct {
	// jobName as Flink reports it.
	// +optional
	JobName string `json:"jobName,omitempty"`
	// jobId is the Flink job id (32 hex characters), assigned by the operator before submission.
	// +optional
	JobID string `json:"jobId,omitempty"`
	// state of the job.
	// +optional
	State JobStatusState `json:"state,omitempty"`
	// startTime of the job, epoch milliseconds as a string.
	// +optional
	StartTime string `json:"startTime,omitempty"`
	// updateTime is when the state last changed, epoch milliseconds as a string.
	// +optional
	UpdateTime string `json:"updateTime,omitempty"`
	// upgradeSavepointPath is the savepoint or checkpoint the next deployment restores from.
	// +optional
	UpgradeSavepointPath string `json:"upgradeSavepointPath,omitempty"`
	// savepointInfo is the legacy savepoint bookkeeping (deprecated upstream).
	// +optional
	SavepointInfo *SavepointInfo `json:"savepointInfo,omitempty"`
	// checkpointInfo is the legacy checkpoint bookkeeping (deprecated upstream).
	// +optional
	CheckpointInfo *CheckpointInfo `json:"checkpointInfo,omitempty"`
}

// ReconciliationState is where the operator is in applying a spec.
// +kubebuilder:validation:Enum=DEPLOYED;ROLLED_BACK;ROLLING_BACK;UPGRADING
type ReconciliationState string

// Reconciliation states.
const (
	ReconciliationDeployed    ReconciliationState = "DEPLOYED"
	ReconciliationRolledBack  ReconciliationState = "ROLLED_BACK"
	ReconciliationRollingBack ReconciliationState = "ROLLING_BACK"
	ReconciliationUpgrading   ReconciliationState = "UPGRADING"
)

// ReconciliationStatus is the operator's write-ahead log: the spec it is applying or has
// applied, written before any action on the cluster.
type ReconciliationStatus struct {
	// reconciliationTimestamp is when lastReconciledSpec was last written, epoch milliseconds.
	// +optional
	ReconciliationTimestamp int64 `json:"reconciliationTimestamp,omitempty"`
	// lastReconciledSpec is the JSON of the spec last applied (or being applied), in upstream's
	// format {"spec":{...},"resource_metadata":{...}}.
	// +optional
	LastReconciledSpec string `json:"lastReconciledSpec,omitempty"`
	// lastStableSpec is the JSON of the last spec observed healthy; the rollback target.
	// +optional
	LastStableSpec string `json:"lastStableSpec,omitempty"`
	// state of the reconciliation.
	// +optional
	State ReconciliationState `json:"state,omitempty"`
}

// LifecycleState is the lifecycle of a resource as computed from its status.
// +kubebuilder:validation:Enum=CREATED;DELETED;DELETING;DEPLOYED;FAILED;ROLLED_BACK;ROLLING_BACK;STABLE;SUSPENDED;UPGRADING
type LifecycleState string

// Lifecycle states.
const (
	LifecycleCreated     LifecycleState = "CREATED"
	LifecycleDeleted     LifecycleState = "DELETED"
	LifecycleDeleting    LifecycleState = "DELETING"
	LifecycleDeployed    LifecycleState = "DEPLOYED"
	LifecycleFailed      LifecycleState = "FAILED"
	LifecycleRolledBack  LifecycleState = "ROLLED_BACK"
	LifecycleRollingBack LifecycleState = "ROLLING_BACK"
	LifecycleStable      LifecycleState = "STABLE"
	LifecycleSuspended   LifecycleState = "SUSPENDED"
	LifecycleUpgrading   LifecycleState = "UPGRADING"
)

// CommonStatus is the status shared by FlinkDeployment and FlinkSessionJob.
type CommonStatus struct {
	// jobStatus is the observed state of the job.
	// +optional
	JobStatus JobStatus `json:"jobStatus,omitempty"`
	// error is the last error, as upstream's JSON-serialized exception
	// {"type":...,"message":...,"additionalMetadata":{},"throwableList":[...]}.
	// +optional
	Error string `json:"error,omitempty"`
	// observedGeneration is the generation whose spec was last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// lifecycleState is computed from the rest of the status.
	// +optional
	LifecycleState LifecycleState `json:"lifecycleState,omitempty"`
	// reconciliationStatus is the operator's record of the spec it applies.
	// +optional
	ReconciliationStatus ReconciliationStatus `json:"reconciliationStatus,omitempty"`
	// conditions are standard Kubernetes conditions with observedGeneration, usable with
	// `kubectl wait --for=condition=...`: Running (upstream's), Ready, Progressing and Reconciling
	// (the operator is acting; the reason says how), Degraded (something is wrong; the reason says
	// what) and Stalled (a person must act).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// operations is what the operator did to the resource, oldest first, the last 10 kept: each
	// deployment, upgrade, suspend, resume, rollback, deletion and in-place rescale, with the generation it was
	// for, when it started and ended, its outcome, the savepoint or checkpoint it restored or
	// kept, and its last message. This operator's own field: the Apache operator's schema
	// prunes it and reads the rest of the status as before.
	// +listType=atomic
	// +optional
	Operations []Operation `json:"operations,omitempty"`
	// scaling is the job autoscaler's last decision that applied, recommended or held back a
	// change of parallelism, explained per vertex, so that it can be read without decoding the
	// autoscaler's ConfigMap. It is kept until a decision that differs replaces it and removed
	// when the autoscaler is disabled or reset. This operator's own field: the Apache operator's
	// schema prunes it.
	// +optional
	Scaling *ScalingDecision `json:"scaling,omitempty"`
}

// ScalingOutcome is what the autoscaler did with the parallelism it decided.
// +kubebuilder:validation:Enum=Applied;Recommended;Held
type ScalingOutcome string

// Scaling outcomes.
const (
	// ScalingApplied: the new parallelism was handed to the reconcile, which applies it (in place
	// where Flink can, else as an upgrade; status.operations records it).
	ScalingApplied ScalingOutcome = "Applied"
	// ScalingRecommended: job.autoscaler.scaling.enabled is false or the time is within
	// job.autoscaler.excluded.periods; nothing is changed.
	ScalingRecommended ScalingOutcome = "Recommended"
	// ScalingHeld: a vertex's load is outside the utilization band, but the change is held back:
	// a scale-down waiting for job.autoscaler.scale-down.interval, a scale-up blocked as
	// ineffective, memory pressure, or the parallelism limits keeping the vertex where it is.
	// newParallelism is what would be applied once the hold lifts.
	ScalingHeld ScalingOutcome = "Held"
)

// ScalingBound is a limit that made a vertex's new parallelism differ from what its load asks for.
// +kubebuilder:validation:Enum=MaxFactor;MinParallelism;MaxParallelism;KeyGroups;ScaleDownInterval;IneffectiveScaling;Memory;Excluded
type ScalingBound string

// Scaling bounds. A bound is listed only when the result would differ without it.
const (
	// ScalingBoundMaxFactor: job.autoscaler.scale-up.max-factor or scale-down.max-factor.
	ScalingBoundMaxFactor ScalingBound = "MaxFactor"
	// ScalingBoundMinParallelism: job.autoscaler.vertex.min-parallelism.
	ScalingBoundMinParallelism ScalingBound = "MinParallelism"
	// ScalingBoundMaxParallelism: job.autoscaler.vertex.max-parallelism.
	ScalingBoundMaxParallelism ScalingBound = "MaxParallelism"
	// ScalingBoundKeyGroups: the vertex's max parallelism (its number of key groups), or the
	// alignment of the parallelism to key groups or source partitions
	// (job.autoscaler.scaling.parallelism-alignment.mode).
	ScalingBoundKeyGroups ScalingBound = "KeyGroups"
	// ScalingBoundScaleDownInterval: a scale-down waits for job.autoscaler.scale-down.interval,
	// or takes the highest parallelism recommended within it.
	ScalingBoundScaleDownInterval ScalingBound = "ScaleDownInterval"
	// ScalingBoundIneffectiveScaling: job.autoscaler.scaling.effectiveness.detection blocked a
	// scale-up because the last one achieved too little.
	ScalingBoundIneffectiveScaling ScalingBound = "IneffectiveScaling"
	// ScalingBoundMemory: heap usage or GC time above job.autoscaler.memory.* thresholds holds
	// every change back.
	ScalingBoundMemory ScalingBound = "Memory"
	// ScalingBoundExcluded: job.autoscaler.vertex.exclude.ids leaves the vertex alone.
	ScalingBoundExcluded ScalingBound = "Excluded"
)

// Bounds of status.scaling. A job graph rarely has more than a few dozen vertices; the list is
// bounded so that a large graph cannot grow the status without end (omittedVertices counts the
// rest), and names, which Flink builds from whole operator chains, are cut.
const (
	MaxScalingVertices     = 64
	MaxScalingMessageBytes = 1024
	MaxVertexNameBytes     = 256
	// MaxVertexIDBytes bounds a vertex id (Flink's are 32 hex characters); the JobManager that
	// reports them runs the user's code, and an id over the schema's bound would fail the whole
	// status write.
	MaxVertexIDBytes = 64
)

// ScalingDecision is one decision of the job autoscaler, explained per vertex.
type ScalingDecision struct {
	// evaluatedAt is when the autoscaler first reached this decision.
	EvaluatedAt metav1.Time `json:"evaluatedAt"`
	// generation is the resource's metadata.generation at the decision.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// outcome says whether the decision was applied, only recommended, or held back.
	Outcome ScalingOutcome `json:"outcome"`
	// message says what was decided and, when it was not applied, why.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// vertices are the job's vertices in topological order (those that change first when there
	// are more than 64). Numbers are strings, as CRDs avoid floats: ratios with two decimals,
	// rates in records per second with one, lag in records, durations as "45s"; "Infinity"
	// where a rate is unbounded; left out where unknown.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Vertices []VertexScaling `json:"vertices,omitempty"`
	// omittedVertices is how many vertices were left out of vertices.
	// +optional
	OmittedVertices int32 `json:"omittedVertices,omitempty"`
}

// VertexScaling is one vertex's part of a scaling decision.
type VertexScaling struct {
	// vertexId is Flink's job vertex id.
	// +kubebuilder:validation:MaxLength=64
	VertexID string `json:"vertexId"`
	// name is the vertex's name, cut to 256 bytes.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Name string `json:"name,omitempty"`
	// currentParallelism is the parallelism the vertex ran with when evaluated.
	CurrentParallelism int32 `json:"currentParallelism"`
	// newParallelism is the parallelism decided: applied, recommended, or (Held) the one that
	// would be applied once the hold lifts.
	NewParallelism int32 `json:"newParallelism"`
	// busyRatio is the share of time the vertex was busy over the metric window ("0.83").
	// +optional
	BusyRatio string `json:"busyRatio,omitempty"`
	// trueProcessingRate is the records per second the vertex processes at its current
	// parallelism when busy all the time ("1520.4").
	// +optional
	TrueProcessingRate string `json:"trueProcessingRate,omitempty"`
	// targetRate is the records per second the vertex must process: what arrives at the sources,
	// propagated through the graph.
	// +optional
	TargetRate string `json:"targetRate,omitempty"`
	// lag is a source's pending records ("12000"); sources only.
	// +optional
	Lag string `json:"lag,omitempty"`
	// expectedCatchUp is how long a source takes to work off its lag at newParallelism,
	// restart included when it changes ("45s"), or "Never" when its processing rate would not
	// exceed the target rate; sources only.
	// +optional
	ExpectedCatchUp string `json:"expectedCatchUp,omitempty"`
	// boundBy are the limits that made newParallelism differ from what the load asks for, in
	// the order they were applied.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	BoundBy []ScalingBound `json:"boundBy,omitempty"`
}

// OperationType is what an operation in status.operations did.
// +kubebuilder:validation:Enum=Deploy;Upgrade;Suspend;Resume;Rollback;Delete;Scale
type OperationType string

// Operation types.
const (
	// OperationDeploy: a JobManager or job started without a spec change (the first
	// deployment, a recovery, a failed job run again).
	OperationDeploy   OperationType = "Deploy"
	OperationUpgrade  OperationType = "Upgrade"
	OperationSuspend  OperationType = "Suspend"
	OperationResume   OperationType = "Resume"
	OperationRollback OperationType = "Rollback"
	OperationDelete   OperationType = "Delete"
	// OperationScale: the running job rescaled in place (FlinkDeployment's status.rescale),
	// from the request to Flink's REST reporting the new parallelism.
	OperationScale OperationType = "Scale"
)

// OperationOutcome is how an operation in status.operations ended.
// +kubebuilder:validation:Enum=InProgress;Succeeded;Failed;Superseded
type OperationOutcome string

// Operation outcomes.
const (
	OperationInProgress OperationOutcome = "InProgress"
	OperationSucceeded  OperationOutcome = "Succeeded"
	// OperationFailed: it ended without reaching its target (rolled back, or waiting for a
	// person); message says why.
	OperationFailed OperationOutcome = "Failed"
	// OperationSuperseded: a newer operation (a newer spec, a deletion) took its place.
	OperationSuperseded OperationOutcome = "Superseded"
)

// Operation is one entry of status.operations.
type Operation struct {
	// type is what the operation did.
	Type OperationType `json:"type"`
	// generation is the resource's metadata.generation when the operation started.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// startedAt is when the operator started it.
	StartedAt metav1.Time `json:"startedAt"`
	// endedAt is when it ended; unset while it is in progress.
	// +optional
	EndedAt *metav1.Time `json:"endedAt,omitempty"`
	// outcome is InProgress until it ends.
	Outcome OperationOutcome `json:"outcome"`
	// snapshot is the savepoint or checkpoint the operation restored from, or took to keep the
	// job's state (an upgrade's or a suspend's stop).
	// +optional
	Snapshot string `json:"snapshot,omitempty"`
	// message is the last thing the operator said of it: what it was doing, or why it failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// Resource is the legacy (deprecated upstream) way to size a Flink component.
type Resource struct {
	// cpu cores, fractional allowed.
	// +optional
	CPU *float64 `json:"cpu,omitempty"`
	// memory, Flink memory syntax ("2048m", "1g") or Kubernetes quantity ("2Gi").
	// +optional
	Memory string `json:"memory,omitempty"`
	// ephemeralStorage, as a Kubernetes quantity.
	// +optional
	EphemeralStorage string `json:"ephemeralStorage,omitempty"`
}

// LastStateSentinelPath is the restore path of a last-state deployment (upstream's
// KUBERNETES_OPERATOR_LAST_STATE): Flink restores from its HA metadata, and a job whose HA
// metadata vanished fails to start from this non-existent path instead of starting empty. The
// Apache operator also leaves it in status.jobStatus.upgradeSavepointPath.
const LastStateSentinelPath = "KUBERNETES_OPERATOR_LAST_STATE"
