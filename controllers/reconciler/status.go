package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
)

// ErrorJSON renders status.error from an upstream exception class name, with the typed
// reason that class stands for. New code names the reason itself (flinkv1beta1.NewStatusError).
func ErrorJSON(kind, message string) string {
	reasons := map[string]flinkv1beta1.StatusErrorReason{
		"ValidationError": flinkv1beta1.ErrorReasonInvalidSpec, "ReconcileError": flinkv1beta1.ErrorReasonReconcileFailed,
		"UpgradeFailureException": flinkv1beta1.ErrorReasonUpgradeFailed, "ArtifactException": flinkv1beta1.ErrorReasonArtifactFailed,
		"JobSubmissionException": flinkv1beta1.ErrorReasonJobSubmissionFailed, "JobNotFoundException": flinkv1beta1.ErrorReasonJobNotFound,
	}
	types := map[string]string{"ValidationError": flinkv1beta1.ExceptionValidation, "ReconcileError": flinkv1beta1.ExceptionReconciliation}
	exception, ok := types[kind]
	if !ok {
		exception = "org.apache.flink.kubernetes.operator.exception." + kind
	}
	reason, ok := reasons[kind]
	if !ok {
		reason = flinkv1beta1.ErrorReasonReconcileFailed
	}
	return flinkv1beta1.NewStatusError(exception, reason, message)
}

// IsValidationError: status.error records an invalid spec.
func IsValidationError(statusError string) bool {
	return flinkv1beta1.ErrorReason(statusError) == flinkv1beta1.ErrorReasonInvalidSpec
}

// PatchStatus writes obj's status as a merge patch against original, with optimistic locking:
// a status computed from a stale cached object must not overwrite a newer one (it could drop a
// trigger id written ahead); the conflict makes the reconcile start again with fresh state. A
// resource deleted meanwhile is not an error.
func PatchStatus(ctx context.Context, c client.Client, obj, original client.Object) error {
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}

func EqualStatus(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }

// LogUnknownOutcome says why a pending Flink operation's outcome is not known yet, when the
// JobManager could not be asked (transport trouble is never the operation's outcome).
func LogUnknownOutcome(ctx context.Context, op flink.Operation, p flink.Progress) {
	if p.Unreachable != nil {
		log.FromContext(ctx).Info("outcome not known yet", "operation", op.Kind, "job", op.JobID, "trigger", op.TriggerID, "reason", p.Unreachable.Error())
	}
}

// DeterministicJobID derives a job id from the resource and the upgrade it belongs to, so a
// deployment retried after an operator crash submits the same job id as the first attempt.
func DeterministicJobID(uid string, upgradeTimestamp int64) string {
	sum := sha256.Sum256([]byte(uid + "/" + strconv.FormatInt(upgradeTimestamp, 10)))
	return hex.EncodeToString(sum[:16])
}
