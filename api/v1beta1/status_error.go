package v1beta1

import (
	"encoding/json"
	"strings"
)

// StatusErrorReason says, in a form code can branch on, why status.error is set. It travels in
// the error's additionalMetadata, so the status keeps upstream's format while the operator never
// has to match its own message text.
type StatusErrorReason string

// Reasons of status.error.
const (
	// ErrorReasonInvalidSpec: the spec breaks a validation rule; the last valid spec keeps running.
	ErrorReasonInvalidSpec StatusErrorReason = "InvalidSpec"
	// ErrorReasonManualRestoreRequired: the job's state cannot be carried over without a human
	// choosing where to restore from (job.initialSavepointPath with a savepointRedeployNonce).
	ErrorReasonManualRestoreRequired StatusErrorReason = "ManualRestoreRequired"
	// ErrorReasonUpgradeFailed: a step of an upgrade failed and is retried.
	ErrorReasonUpgradeFailed StatusErrorReason = "UpgradeFailed"
	// ErrorReasonDeploymentFailed: a JobManager container cannot start.
	ErrorReasonDeploymentFailed StatusErrorReason = "DeploymentFailed"
	// ErrorReasonMissingJobManager: the JobManager Deployment disappeared.
	ErrorReasonMissingJobManager StatusErrorReason = "MissingJobManager"
	// ErrorReasonRollbackFailed: a rollback is due but not possible.
	ErrorReasonRollbackFailed StatusErrorReason = "RollbackFailed"
	// ErrorReasonUnhealthyJob: the health check found the job unhealthy.
	ErrorReasonUnhealthyJob StatusErrorReason = "UnhealthyJob"
	// ErrorReasonSnapshotFailed: a savepoint or checkpoint failed.
	ErrorReasonSnapshotFailed StatusErrorReason = "SnapshotFailed"
	// ErrorReasonJobSubmissionFailed: a session job could not be submitted.
	ErrorReasonJobSubmissionFailed StatusErrorReason = "JobSubmissionFailed"
	// ErrorReasonJobNotFound: a stateful session job vanished from its session cluster.
	ErrorReasonJobNotFound StatusErrorReason = "JobNotFound"
	// ErrorReasonArtifactFailed: a session job's jar could not be fetched.
	ErrorReasonArtifactFailed StatusErrorReason = "ArtifactFailed"
	// ErrorReasonForeignObject: an object the cluster needs (its JobManager Deployment, a
	// Service, a ConfigMap, the Ingress) exists under its name and belongs to someone else; the
	// operator leaves it unchanged and deploys nothing until it is gone.
	ErrorReasonForeignObject StatusErrorReason = "ForeignObject"
	// ErrorReasonNoFinalSavepoint: the resource is being deleted without the savepoint on
	// deletion it was asked to take (it failed, or the JobManager could not be asked, until
	// kubernetes.operator.resource.cleanup.timeout): the job's state since its last savepoint
	// or retained checkpoint is not kept.
	ErrorReasonNoFinalSavepoint StatusErrorReason = "NoFinalSavepoint"
	// ErrorReasonReconcileFailed: any other error of a reconcile; retried.
	ErrorReasonReconcileFailed StatusErrorReason = "ReconcileFailed"
)

// Exception types of status.error (upstream's exception classes, which tools match on).
const (
	exceptionPackage            = "org.apache.flink.kubernetes.operator.exception."
	ExceptionValidation         = exceptionPackage + "ValidationException"
	ExceptionUpgradeFailure     = exceptionPackage + "UpgradeFailureException"
	ExceptionRecoveryFailure    = exceptionPackage + "RecoveryFailureException"
	ExceptionDeploymentFailed   = exceptionPackage + "DeploymentFailedException"
	ExceptionMissingJobManager  = exceptionPackage + "MissingJobManagerException"
	ExceptionReconciliation     = exceptionPackage + "ReconciliationException"
	ExceptionStatusConflict     = exceptionPackage + "StatusConflictException"
	ExceptionJobNotFound        = exceptionPackage + "JobNotFoundException"
	ExceptionSnapshot           = exceptionPackage + "SnapshotException"
	ExceptionFlinkResource      = exceptionPackage + "FlinkResourceException"
	ExceptionArtifact           = exceptionPackage + "ArtifactException"
	ExceptionJobSubmission      = exceptionPackage + "JobSubmissionException"
	ExceptionUnhealthyJob       = exceptionPackage + "UnhealthyJobException"
	ExceptionRollbackFailure    = exceptionPackage + "RollbackFailureException"
	statusErrorReasonMetadata   = "reason"
	statusErrorMaxLength        = 2048 // upstream's kubernetes.operator.exception.field.max.length
	statusErrorTruncationSuffix = "..."
)

// StatusError is the content of status.error: upstream's serialised exception
// {"type":...,"message":...,"additionalMetadata":{...},"throwableList":[]}, with the typed
// reason in additionalMetadata.
//
// +kubebuilder:object:generate=false
type StatusError struct {
	Type               string         `json:"type"`
	Message            string         `json:"message"`
	AdditionalMetadata map[string]any `json:"additionalMetadata"`
	ThrowableList      []any          `json:"throwableList"`
}

// NewStatusError renders status.error for a reason, with upstream's exception type, capped at
// upstream's 2048 characters (the message is shortened; the result is always valid JSON).
func NewStatusError(exception string, reason StatusErrorReason, message string) string {
	e := StatusError{Type: exception, Message: message,
		AdditionalMetadata: map[string]any{statusErrorReasonMetadata: string(reason)}, ThrowableList: []any{}}
	out, _ := json.Marshal(e)
	if len(out) <= statusErrorMaxLength {
		return string(out)
	}
	// Escaping makes the JSON longer than the text by a factor that depends on the text, so the
	// longest prefix that fits is searched for (a few dozen renderings at most).
	full := message
	fits := func(n int) ([]byte, bool) {
		e.Message = truncateUTF8(full, n) + statusErrorTruncationSuffix
		b, _ := json.Marshal(e)
		return b, len(b) <= statusErrorMaxLength
	}
	lo, hi := 0, min(len(full), statusErrorMaxLength)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if _, ok := fits(mid); ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	out, _ = fits(lo)
	return string(out)
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// ParseStatusError reads status.error; ok is false when it is empty or not upstream's JSON.
func ParseStatusError(raw string) (StatusError, bool) {
	var e StatusError
	if strings.TrimSpace(raw) == "" || json.Unmarshal([]byte(raw), &e) != nil {
		return StatusError{}, false
	}
	return e, true
}

// upstreamUnrecoverable are the messages the Apache operator writes when a job's state cannot be
// restored without help. Only errors it wrote (adopted resources, which carry no reason) are
// read this way.
var upstreamUnrecoverable = []string{
	"Manual restore required",
	"It is possible that the job has finished or terminally failed, or the configmaps have been deleted",
	"HA metadata is not available",
}

// ErrorReason is the reason of a status.error ("" when none is set). Errors written by this
// operator carry it; for errors written by the Apache operator before a migration it is derived
// from the exception type and upstream's own messages.
func ErrorReason(raw string) StatusErrorReason {
	e, ok := ParseStatusError(raw)
	if !ok {
		if raw != "" {
			return ErrorReasonReconcileFailed
		}
		return ""
	}
	if r, ok := e.AdditionalMetadata[statusErrorReasonMetadata].(string); ok && r != "" {
		return StatusErrorReason(r)
	}
	for _, m := range upstreamUnrecoverable {
		if strings.Contains(e.Message, m) {
			return ErrorReasonManualRestoreRequired
		}
	}
	switch e.Type {
	case ExceptionValidation, exceptionPackage + "ValidationError": // the latter: this operator's releases before 0.3
		return ErrorReasonInvalidSpec
	case ExceptionDeploymentFailed:
		return ErrorReasonDeploymentFailed
	case ExceptionMissingJobManager:
		return ErrorReasonMissingJobManager
	case ExceptionUpgradeFailure:
		return ErrorReasonUpgradeFailed
	}
	return ErrorReasonReconcileFailed
}

// ErrorMessage is the message of a status.error, or the text itself when it is not JSON.
func ErrorMessage(raw string) string {
	if e, ok := ParseStatusError(raw); ok {
		return e.Message
	}
	return raw
}
