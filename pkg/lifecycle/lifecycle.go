// Package lifecycle holds the state machines of FlinkDeployment and FlinkSessionJob as pure
// functions of their status, written down once: the lifecycle state every status read shows,
// and the conditions derived from it.
package lifecycle

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// State computes the lifecycle state, in upstream's order:
//
//	deleting                                   → DELETING
//	nothing reconciled yet                     → FAILED if an error is recorded, else CREATED
//	reconciliation UPGRADING / ROLLING_BACK    → UPGRADING / ROLLING_BACK
//	last reconciled job suspended              → SUSPENDED
//	job FAILED                                 → FAILED
//	JobManager MISSING/ERROR, unrecoverable    → FAILED
//	reconciliation ROLLED_BACK                 → ROLLED_BACK
//	last reconciled spec == last stable spec   → STABLE
//	otherwise                                  → DEPLOYED
func State(s *flinkv1beta1.CommonStatus, jm flinkv1beta1.JobManagerDeploymentStatus, deleting bool, lastReconciledJobState flinkv1beta1.JobState) flinkv1beta1.LifecycleState {
	rs := s.ReconciliationStatus
	switch {
	case deleting:
		return flinkv1beta1.LifecycleDeleting
	case rs.LastReconciledSpec == "":
		if s.Error != "" {
			return flinkv1beta1.LifecycleFailed
		}
		return flinkv1beta1.LifecycleCreated
	case rs.State == flinkv1beta1.ReconciliationUpgrading:
		return flinkv1beta1.LifecycleUpgrading
	case rs.State == flinkv1beta1.ReconciliationRollingBack:
		return flinkv1beta1.LifecycleRollingBack
	case lastReconciledJobState == flinkv1beta1.JobStateSuspended:
		return flinkv1beta1.LifecycleSuspended
	case s.JobStatus.State == flinkv1beta1.JobStatusFailed:
		return flinkv1beta1.LifecycleFailed
	case (jm == flinkv1beta1.JobManagerMissing || jm == flinkv1beta1.JobManagerError) &&
		flinkv1beta1.ErrorReason(s.Error) == flinkv1beta1.ErrorReasonManualRestoreRequired:
		return flinkv1beta1.LifecycleFailed
	case rs.State == flinkv1beta1.ReconciliationRolledBack:
		return flinkv1beta1.LifecycleRolledBack
	case rs.LastReconciledSpec == rs.LastStableSpec:
		return flinkv1beta1.LifecycleStable
	default:
		return flinkv1beta1.LifecycleDeployed
	}
}

// Condition types.
const (
	// ConditionRunning is upstream's condition: for an application cluster, whether the job runs;
	// for a session cluster, whether the JobManager is ready.
	ConditionRunning = "Running"
	// ConditionReady is true when the resource is STABLE or DEPLOYED and running: what
	// `kubectl wait --for=condition=Ready` should wait for.
	ConditionReady = "Ready"
	// ConditionReconciling is true while the operator is acting: an upgrade, suspend, resume
	// or rollback in flight, a JobManager coming up, a job being submitted.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is true when the resource needs a human: an invalid spec, a failed job
	// or deployment, state that cannot be restored without help.
	ConditionStalled = "Stalled"
)

// progress computes Reconciling and Stalled from the common status, the JobManager status
// ("" for session jobs) and whether a job is expected to run.
func progress(s *flinkv1beta1.CommonStatus, jm flinkv1beta1.JobManagerDeploymentStatus, withJob bool, generation int64) []metav1.Condition {
	reconciling := metav1.Condition{Type: ConditionReconciling, ObservedGeneration: generation, Status: metav1.ConditionFalse,
		Reason: "Settled", Message: "No action in flight"}
	switch {
	case s.ReconciliationStatus.State == flinkv1beta1.ReconciliationUpgrading:
		reconciling.Status, reconciling.Reason, reconciling.Message = metav1.ConditionTrue, "Upgrading", "Applying the last spec change"
	case s.ReconciliationStatus.State == flinkv1beta1.ReconciliationRollingBack:
		reconciling.Status, reconciling.Reason, reconciling.Message = metav1.ConditionTrue, "RollingBack", "Rolling back to the last stable spec"
	case jm == flinkv1beta1.JobManagerDeploying || jm == flinkv1beta1.JobManagerDeployedNotReady:
		reconciling.Status, reconciling.Reason, reconciling.Message = metav1.ConditionTrue, "JobManagerStarting", "The JobManager is starting"
	case withJob && s.LifecycleState != flinkv1beta1.LifecycleSuspended && (s.JobStatus.State == flinkv1beta1.JobStatusReconciling ||
		s.JobStatus.State == flinkv1beta1.JobStatusCreated || s.JobStatus.State == flinkv1beta1.JobStatusInitializing):
		reconciling.Status, reconciling.Reason, reconciling.Message = metav1.ConditionTrue, "JobStarting", "The job is being submitted or scheduled"
	}

	stalled := metav1.Condition{Type: ConditionStalled, ObservedGeneration: generation, Status: metav1.ConditionFalse,
		Reason: "NotStalled", Message: "No human action needed"}
	switch reason := flinkv1beta1.ErrorReason(s.Error); {
	case reason == flinkv1beta1.ErrorReasonInvalidSpec, reason == flinkv1beta1.ErrorReasonManualRestoreRequired,
		reason == flinkv1beta1.ErrorReasonJobNotFound, reason == flinkv1beta1.ErrorReasonForeignObject:
		stalled.Status, stalled.Reason, stalled.Message = metav1.ConditionTrue, string(reason), errorMessage(s.Error)
	case s.LifecycleState == flinkv1beta1.LifecycleFailed:
		stalled.Status, stalled.Reason, stalled.Message = metav1.ConditionTrue, "Failed", "Lifecycle state FAILED: "+errorMessage(s.Error)
	case jm == flinkv1beta1.JobManagerError:
		stalled.Status, stalled.Reason, stalled.Message = metav1.ConditionTrue, "DeploymentFailed", errorMessage(s.Error)
	}
	return []metav1.Condition{reconciling, stalled}
}

// errorMessage extracts the message of status.error (upstream's JSON), or returns it as is.
func errorMessage(statusError string) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(statusError), &e) == nil && e.Message != "" {
		return e.Message
	}
	if statusError == "" {
		return "no error recorded"
	}
	return statusError
}

// Conditions returns the conditions of a FlinkDeployment's status for its generation.
func Conditions(s *flinkv1beta1.FlinkDeploymentStatus, application bool, generation int64) []metav1.Condition {
	running := metav1.Condition{Type: ConditionRunning, ObservedGeneration: generation}
	if application {
		state := s.JobStatus.State
		if state == "" {
			state = flinkv1beta1.JobStatusReconciling
		}
		running.Reason = camel(string(state))
		running.Message = "Job status " + string(state)
		running.Status = boolStatus(state == flinkv1beta1.JobStatusRunning)
	} else {
		running.Status = boolStatus(s.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady)
		running.Reason, running.Message = sessionReason(s.JobManagerDeploymentStatus)
	}
	ready := metav1.Condition{Type: ConditionReady, ObservedGeneration: generation, Reason: camel(string(s.LifecycleState))}
	stable := s.LifecycleState == flinkv1beta1.LifecycleStable || s.LifecycleState == flinkv1beta1.LifecycleDeployed
	ready.Status = boolStatus(stable && running.Status == metav1.ConditionTrue && s.ObservedGeneration == generation)
	ready.Message = "Lifecycle state " + string(s.LifecycleState)
	if ready.Reason == "" {
		ready.Reason = "Created"
	}
	return append([]metav1.Condition{running, ready}, progress(&s.CommonStatus, s.JobManagerDeploymentStatus, application, generation)...)
}

func sessionReason(jm flinkv1beta1.JobManagerDeploymentStatus) (string, string) {
	switch jm {
	case flinkv1beta1.JobManagerReady:
		return "JobManagerReady", "JobManager is running and ready"
	case flinkv1beta1.JobManagerDeployedNotReady:
		return "DeployedNotReady", "JobManager is running but not ready yet"
	case flinkv1beta1.JobManagerDeploying:
		return "JobManagerIsDeploying", "JobManager process is starting up"
	case flinkv1beta1.JobManagerError:
		return "Error", "JobManager deployment failed"
	default:
		return "JobManagerDeploymentMissing", "JobManager deployment not found"
	}
}

func boolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// camel turns RUNNING into Running and ROLLED_BACK into RolledBack.
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(strings.ToLower(s), "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// SessionJobConditions returns the conditions of a FlinkSessionJob's status: Running when
// its job runs, Ready when it is also STABLE or DEPLOYED for this generation.
func SessionJobConditions(s *flinkv1beta1.CommonStatus, generation int64) []metav1.Condition {
	state := s.JobStatus.State
	if state == "" {
		state = flinkv1beta1.JobStatusReconciling
	}
	running := metav1.Condition{Type: ConditionRunning, ObservedGeneration: generation, Reason: camel(string(state)),
		Message: "Job status " + string(state), Status: boolStatus(state == flinkv1beta1.JobStatusRunning)}
	stable := s.LifecycleState == flinkv1beta1.LifecycleStable || s.LifecycleState == flinkv1beta1.LifecycleDeployed
	ready := metav1.Condition{Type: ConditionReady, ObservedGeneration: generation, Reason: camel(string(s.LifecycleState)),
		Message: "Lifecycle state " + string(s.LifecycleState),
		Status:  boolStatus(stable && running.Status == metav1.ConditionTrue && s.ObservedGeneration == generation)}
	if ready.Reason == "" {
		ready.Reason = "Created"
	}
	return append([]metav1.Condition{running, ready}, progress(s, "", true, generation)...)
}
