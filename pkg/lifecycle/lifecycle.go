// Package lifecycle holds the state machines of FlinkDeployment and FlinkSessionJob as pure
// functions of their status, written down once: the lifecycle state every status read shows,
// and the conditions derived from it.
package lifecycle

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/options"
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
	// or rollback in flight, a JobManager coming up, a job being submitted. It is what
	// kstatus-based tools (Flux, Argo CD) read; it always equals Progressing.
	ConditionReconciling = "Reconciling"
	// ConditionProgressing is Reconciling under the name most operators use: the same status,
	// reason and message, computed from the same decision (assess).
	ConditionProgressing = "Progressing"
	// ConditionStalled is true when the resource needs a human: an invalid spec, a failed job
	// or deployment, state that cannot be restored without help.
	ConditionStalled = "Stalled"
	// ConditionDegraded is true when something is wrong, whether the operator is handling it
	// (a job restarting, a lost JobManager being recovered, a failed savepoint) or a human must
	// (the cases of Stalled, a rolled-back change).
	ConditionDegraded = "Degraded"
)

// Reason is a condition reason: typed, so that the decisions below name each one once and
// tools can match on them.
type Reason string

// Reasons of Progressing and Reconciling. True: what the operator is doing; False: why it is
// doing nothing.
const (
	ReasonDeploying      Reason = "Deploying"      // a JobManager is starting
	ReasonJobStarting    Reason = "JobStarting"    // the job is being submitted or scheduled
	ReasonUpgrading      Reason = "Upgrading"      // a spec change is being applied
	ReasonSavepointing   Reason = "Savepointing"   // the upgrade's stop takes a savepoint
	ReasonSuspending     Reason = "Suspending"     // the job is being suspended
	ReasonRollingBack    Reason = "RollingBack"    // the last stable spec is being deployed again
	ReasonDeleting       Reason = "Deleting"       // the job and cluster are being removed
	ReasonScaling        Reason = "Scaling"        // the running job is rescaled in place (status.rescale)
	ReasonSettled        Reason = "Settled"        // nothing in flight
	ReasonSuspended      Reason = "Suspended"      // suspended as the spec asks
	ReasonRolledBack     Reason = "RolledBack"     // a change was rolled back; a new spec is awaited
	ReasonWaitingForUser Reason = "WaitingForUser" // nothing happens until a human acts (Stalled)
)

// Reasons of Degraded. The reasons of status.error name themselves (InvalidSpec, UpgradeFailed,
// ...): see errorReasons.
const (
	ReasonHealthy          Reason = "Healthy"          // False: nothing wrong observed
	ReasonJobFailed        Reason = "JobFailed"        // the job is FAILED
	ReasonJobRestarting    Reason = "JobRestarting"    // Flink restarts the job after a failure
	ReasonDeploymentFailed Reason = "DeploymentFailed" // the JobManager Deployment is in ERROR
	ReasonError            Reason = "Error"            // status.error with a reason this version does not know (a newer operator wrote it)
	ReasonScaleTimedOut    Reason = "ScaleTimedOut"    // Flink did not reach an in-place rescale's parallelism in time
)

// errorReasons are the typed reasons of status.error, each a Degraded reason of the same name.
var errorReasons = map[flinkv1beta1.StatusErrorReason]Reason{
	flinkv1beta1.ErrorReasonInvalidSpec:           "InvalidSpec",
	flinkv1beta1.ErrorReasonManualRestoreRequired: "ManualRestoreRequired",
	flinkv1beta1.ErrorReasonUpgradeFailed:         "UpgradeFailed",
	flinkv1beta1.ErrorReasonDeploymentFailed:      ReasonDeploymentFailed,
	flinkv1beta1.ErrorReasonMissingJobManager:     "MissingJobManager",
	flinkv1beta1.ErrorReasonRollbackFailed:        "RollbackFailed",
	flinkv1beta1.ErrorReasonUnhealthyJob:          "UnhealthyJob",
	flinkv1beta1.ErrorReasonSnapshotFailed:        "SnapshotFailed",
	flinkv1beta1.ErrorReasonJobSubmissionFailed:   "JobSubmissionFailed",
	flinkv1beta1.ErrorReasonJobNotFound:           "JobNotFound",
	flinkv1beta1.ErrorReasonArtifactFailed:        "ArtifactFailed",
	flinkv1beta1.ErrorReasonForeignObject:         "ForeignObject",
	flinkv1beta1.ErrorReasonReconcileFailed:       "ReconcileFailed",
	flinkv1beta1.ErrorReasonNoFinalSavepoint:      "NoFinalSavepoint",
}

// waitsForUser are the reasons of status.error the operator cannot get past alone, with what a
// person does about each.
var waitsForUser = map[flinkv1beta1.StatusErrorReason]string{
	flinkv1beta1.ErrorReasonInvalidSpec: "fix the spec; the last valid spec keeps running meanwhile",
	flinkv1beta1.ErrorReasonManualRestoreRequired: "choose the state to restore: set spec.job.initialSavepointPath with a new " +
		"spec.job.savepointRedeployNonce",
	flinkv1beta1.ErrorReasonJobNotFound:   "change the spec to submit the job again from its last recorded state",
	flinkv1beta1.ErrorReasonForeignObject: "delete or rename the object named, which belongs to someone else; nothing is deployed until it is gone",
}

// verdict is what assess decides: whether and why the operator is acting (Progressing,
// Reconciling), and whether and why something is wrong (Degraded).
type verdict struct {
	progressing        bool
	progressingReason  Reason
	progressingMessage string
	degraded           bool
	degradedReason     Reason
	degradedMessage    string
}

// input is what assess reads: the status, the JobManager status ("" for session jobs), whether
// a job is expected to run, and the job state of the last reconciled spec (the target of an
// upgrade in flight).
type input struct {
	s       *flinkv1beta1.CommonStatus
	jm      flinkv1beta1.JobManagerDeploymentStatus
	withJob bool
	target  flinkv1beta1.JobState
	// rescale is a FlinkDeployment's in-place rescale in flight (nil for none, and for session jobs).
	rescale *flinkv1beta1.Rescale
}

// assess is the one decision behind Progressing, Reconciling and Degraded, first match wins
// in each column (the table in lifecycle_test.go, TestAssess, is its specification):
//
//	Progressing / Reconciling                          Degraded
//	deleting                          → Deleting       error waiting for a user     → its reason
//	UPGRADING to a suspended job      → Suspending     job FAILED                   → JobFailed
//	UPGRADING, upgrade savepoint      → Savepointing   JobManager ERROR             → DeploymentFailed
//	UPGRADING                         → Upgrading      job FAILING / RESTARTING     → JobRestarting
//	ROLLING_BACK                      → RollingBack    (not while rescaling: RESTARTING
//	JobManager DEPLOYING / NOT_READY  → Deploying       is how Flink rescales)
//	rescale in flight, not timed out  → Scaling        rescale timed out            → ScaleTimedOut
//	job CREATED / INITIALIZING / ...  → JobStarting    ROLLED_BACK                  → RolledBack
//	                                                   any other error recorded     → its reason
//	                                                   otherwise                    → Healthy (False)
//	(False) error waiting for a user,
//	        FAILED, JobManager ERROR  → WaitingForUser
//	(False) SUSPENDED                 → Suspended
//	(False) ROLLED_BACK               → RolledBack
//	(False) otherwise                 → Settled
//
// A recorded error stands for a current fault: the operator clears status.error once the
// resource runs healthy again.
func assess(in input) verdict {
	s := in.s
	rs := s.ReconciliationStatus
	errReason := flinkv1beta1.ErrorReason(s.Error)
	jobState := s.JobStatus.State
	var v verdict
	act := func(r Reason, msg string) { v.progressing, v.progressingReason, v.progressingMessage = true, r, msg }
	switch {
	case s.LifecycleState == flinkv1beta1.LifecycleDeleting:
		act(ReasonDeleting, "The resource is being deleted: its job is stopped and its cluster removed before the finalizer goes")
	case rs.State == flinkv1beta1.ReconciliationUpgrading && in.target == flinkv1beta1.JobStateSuspended:
		msg := "Suspending the job as spec.job.state asks, keeping the state its upgrade mode keeps"
		if upgradeSavepoint(s) {
			msg += ": taking a savepoint first (trigger " + s.JobStatus.SavepointInfo.TriggerID + ")"
		}
		act(ReasonSuspending, msg)
	case rs.State == flinkv1beta1.ReconciliationUpgrading && upgradeSavepoint(s):
		act(ReasonSavepointing, "Taking a savepoint of the job before the upgrade (trigger "+s.JobStatus.SavepointInfo.TriggerID+
			"); the job is stopped once it completes")
	case rs.State == flinkv1beta1.ReconciliationUpgrading:
		act(ReasonUpgrading, "Applying the last spec change: the job is stopped as its upgrade mode says and deployed again")
	case rs.State == flinkv1beta1.ReconciliationRollingBack:
		act(ReasonRollingBack, "Rolling back to the last stable spec: the change did not become healthy within "+
			options.ReadinessTimeout.Key)
	case in.jm == flinkv1beta1.JobManagerDeploying || in.jm == flinkv1beta1.JobManagerDeployedNotReady:
		act(ReasonDeploying, "The JobManager is starting (JobManager deployment "+string(in.jm)+")")
	case rescaling(in):
		// Before JobStarting: Flink's adaptive scheduler takes the job through RESTARTING and
		// CREATED to rescale it, which is the rescale, not a new start.
		act(ReasonScaling, rescaleMessage(in.rescale))
	case in.withJob && s.LifecycleState != flinkv1beta1.LifecycleSuspended && (jobState == flinkv1beta1.JobStatusReconciling ||
		jobState == flinkv1beta1.JobStatusCreated || jobState == flinkv1beta1.JobStatusInitializing):
		act(ReasonJobStarting, "The job is being submitted or scheduled (job status "+string(jobState)+")")
	default:
		v.progressingReason, v.progressingMessage = ReasonSettled, "No action in flight"
		switch {
		case stalled(s, in.jm):
			v.progressingReason, v.progressingMessage = ReasonWaitingForUser, "Nothing is done until a person acts: "+stalledMessage(s, in.jm)
		case s.LifecycleState == flinkv1beta1.LifecycleSuspended:
			v.progressingReason, v.progressingMessage = ReasonSuspended, "The job is suspended as spec.job.state asks; set it to running to resume"
		case s.LifecycleState == flinkv1beta1.LifecycleRolledBack:
			v.progressingReason, v.progressingMessage = ReasonRolledBack, rolledBackMessage
		}
	}

	degrade := func(r Reason, msg string) { v.degraded, v.degradedReason, v.degradedMessage = true, r, msg }
	_, waiting := waitsForUser[errReason]
	switch {
	case waiting:
		degrade(errorReasons[errReason], stalledMessage(s, in.jm))
	case jobState == flinkv1beta1.JobStatusFailed:
		degrade(ReasonJobFailed, "The job FAILED: its exceptions are the JobException events (kubectl describe). With "+
			options.RestartFailed.Key+" it is deployed again; otherwise a spec change (such as spec.restartNonce) runs it again")
	case in.jm == flinkv1beta1.JobManagerError:
		degrade(ReasonDeploymentFailed, "The JobManager cannot start: "+errorMessage(s.Error))
	case jobState == flinkv1beta1.JobStatusFailing || (jobState == flinkv1beta1.JobStatusRestarting && !rescaling(in)):
		degrade(ReasonJobRestarting, "Flink is restarting the job after a failure (job status "+string(jobState)+
			"): its exceptions are the JobException events")
	case in.rescale != nil && in.rescale.TimedOut:
		degrade(ReasonScaleTimedOut, "Flink did not reach the parallelism asked for within "+options.ReadinessTimeout.Key+": asked for "+
			in.rescale.To+", Flink reports "+orUnknown(in.rescale.Reported)+". The adaptive scheduler runs the job with the task slots "+
			"it has: add TaskManagers or slots, or lower "+overridesKey+"; this clears once Flink reports the parallelism asked for")
	case s.LifecycleState == flinkv1beta1.LifecycleRolledBack:
		degrade(ReasonRolledBack, rolledBackMessage)
	case s.Error != "":
		reason, ok := errorReasons[errReason]
		if !ok {
			reason = ReasonError
		}
		degrade(reason, errorMessage(s.Error))
	default:
		v.degradedReason, v.degradedMessage = ReasonHealthy, "Nothing wrong observed"
	}
	return v
}

// rescaling: an in-place rescale is in flight and has not timed out.
func rescaling(in input) bool { return in.rescale != nil && !in.rescale.TimedOut }

// overridesKey is Flink's per-vertex parallelism option, which an in-place rescale applies.
const overridesKey = "pipeline.jobvertex-parallelism-overrides"

// rescaleMessage says what an in-place rescale in flight is waiting for.
func rescaleMessage(r *flinkv1beta1.Rescale) string {
	msg := "Rescaling the running job in place, without a restart of its cluster: from " + orUnknown(r.From) + " to " + r.To +
		" (vertex:parallelism)"
	if r.Reported != "" {
		msg += "; Flink reports " + r.Reported + " so far"
	}
	return msg
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

const rolledBackMessage = "The last spec change was rolled back to the last stable spec, which runs; it is not tried again: " +
	"change the spec to fix it"

// upgradeSavepoint: the upgrade's stop has a savepoint in flight.
func upgradeSavepoint(s *flinkv1beta1.CommonStatus) bool {
	info := s.JobStatus.SavepointInfo
	return info != nil && info.TriggerID != "" && info.TriggerType == flinkv1beta1.SnapshotTriggerUpgrade
}

// stalled: the operator cannot get further without a person (the Stalled condition).
func stalled(s *flinkv1beta1.CommonStatus, jm flinkv1beta1.JobManagerDeploymentStatus) bool {
	_, waiting := waitsForUser[flinkv1beta1.ErrorReason(s.Error)]
	return waiting || s.LifecycleState == flinkv1beta1.LifecycleFailed || jm == flinkv1beta1.JobManagerError
}

// stalledMessage says what is wrong and, where the reason says it, what to do.
func stalledMessage(s *flinkv1beta1.CommonStatus, jm flinkv1beta1.JobManagerDeploymentStatus) string {
	reason := flinkv1beta1.ErrorReason(s.Error)
	if todo, ok := waitsForUser[reason]; ok {
		return errorMessage(s.Error) + ": " + todo
	}
	if s.LifecycleState == flinkv1beta1.LifecycleFailed {
		return "lifecycle state FAILED: " + errorMessage(s.Error)
	}
	if jm == flinkv1beta1.JobManagerError {
		return "the JobManager cannot start: " + errorMessage(s.Error)
	}
	return "no error recorded"
}

// progress computes Reconciling, Progressing, Stalled and Degraded.
func progress(in input, generation int64) []metav1.Condition {
	v := assess(in)
	reconciling := metav1.Condition{Type: ConditionReconciling, ObservedGeneration: generation, Status: boolStatus(v.progressing),
		Reason: string(v.progressingReason), Message: v.progressingMessage}
	progressing := reconciling
	progressing.Type = ConditionProgressing

	s := in.s
	stalledCond := metav1.Condition{Type: ConditionStalled, ObservedGeneration: generation, Status: metav1.ConditionFalse,
		Reason: "NotStalled", Message: "No human action needed"}
	switch reason := flinkv1beta1.ErrorReason(s.Error); {
	case waitsForUser[reason] != "":
		stalledCond.Status, stalledCond.Reason, stalledCond.Message = metav1.ConditionTrue, string(reason), errorMessage(s.Error)
	case s.LifecycleState == flinkv1beta1.LifecycleFailed:
		stalledCond.Status, stalledCond.Reason, stalledCond.Message = metav1.ConditionTrue, "Failed", "Lifecycle state FAILED: "+errorMessage(s.Error)
	case in.jm == flinkv1beta1.JobManagerError:
		stalledCond.Status, stalledCond.Reason, stalledCond.Message = metav1.ConditionTrue, "DeploymentFailed", errorMessage(s.Error)
	}

	degraded := metav1.Condition{Type: ConditionDegraded, ObservedGeneration: generation, Status: boolStatus(v.degraded),
		Reason: string(v.degradedReason), Message: v.degradedMessage}
	return []metav1.Condition{reconciling, progressing, stalledCond, degraded}
}

// readyMessage says why a resource is not Ready, from what is wrong first, then what is
// being done, else what Running says (a FINISHED job, a session's JobManager not ready).
func readyMessage(state flinkv1beta1.LifecycleState, ready bool, observed, generation int64, v verdict, running metav1.Condition) string {
	msg := "Lifecycle state " + string(state)
	switch {
	case ready:
		return msg
	case observed != generation:
		return fmt.Sprintf("%s: generation %d is not reconciled yet (observed %d)", msg, generation, observed)
	case v.degraded:
		return msg + ": " + v.degradedMessage
	case v.progressing:
		return msg + ": " + v.progressingMessage
	case v.progressingReason != ReasonSettled:
		return msg + ": " + v.progressingMessage
	}
	return msg + ": " + running.Message
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

// Conditions returns the conditions of a FlinkDeployment's status for its generation; target
// is the job state of the last reconciled spec ("" for a session cluster).
func Conditions(s *flinkv1beta1.FlinkDeploymentStatus, application bool, generation int64, target flinkv1beta1.JobState) []metav1.Condition {
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
	in := input{s: &s.CommonStatus, jm: s.JobManagerDeploymentStatus, withJob: application, target: target, rescale: s.Rescale}
	return append([]metav1.Condition{running, readyCondition(in, running, generation)}, progress(in, generation)...)
}

// readyCondition is Ready: STABLE or DEPLOYED, running, for this generation.
func readyCondition(in input, running metav1.Condition, generation int64) metav1.Condition {
	s := in.s
	ready := metav1.Condition{Type: ConditionReady, ObservedGeneration: generation, Reason: camel(string(s.LifecycleState))}
	stable := s.LifecycleState == flinkv1beta1.LifecycleStable || s.LifecycleState == flinkv1beta1.LifecycleDeployed
	isReady := stable && running.Status == metav1.ConditionTrue && s.ObservedGeneration == generation
	ready.Status = boolStatus(isReady)
	ready.Message = readyMessage(s.LifecycleState, isReady, s.ObservedGeneration, generation, assess(in), running)
	if ready.Reason == "" {
		ready.Reason = "Created"
	}
	return ready
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
// its job runs, Ready when it is also STABLE or DEPLOYED for this generation; target is the job
// state of the last reconciled spec.
func SessionJobConditions(s *flinkv1beta1.CommonStatus, generation int64, target flinkv1beta1.JobState) []metav1.Condition {
	state := s.JobStatus.State
	if state == "" {
		state = flinkv1beta1.JobStatusReconciling
	}
	running := metav1.Condition{Type: ConditionRunning, ObservedGeneration: generation, Reason: camel(string(state)),
		Message: "Job status " + string(state), Status: boolStatus(state == flinkv1beta1.JobStatusRunning)}
	in := input{s: s, withJob: true, target: target}
	return append([]metav1.Condition{running, readyCondition(in, running, generation)}, progress(in, generation)...)
}
