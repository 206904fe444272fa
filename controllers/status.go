package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errorJSON renders status.error in upstream's format, which tools parse:
// {"type":...,"message":...,"additionalMetadata":{},"throwableList":[]}. Capped at 2048
// characters as upstream (kubernetes.operator.exception.field.max.length).
func errorJSON(kind, message string) string {
	const max = 2048
	out, _ := json.Marshal(map[string]any{
		"type": "org.apache.flink.kubernetes.operator.exception." + kind, "message": message,
		"additionalMetadata": map[string]any{}, "throwableList": []any{},
	})
	if len(out) > max {
		return errorJSON(kind, message[:max/2]+"...")
	}
	return string(out)
}

func isValidationError(statusError string) bool {
	return strings.Contains(statusError, "exception.ValidationError")
}

// patchStatus writes obj's status as a merge patch against original, with optimistic locking:
// a status computed from a stale cached object must not overwrite a newer one (it could drop a
// trigger id written ahead); the conflict makes the reconcile start again with fresh state. A
// resource deleted meanwhile is not an error.
func patchStatus(ctx context.Context, c client.Client, obj, original client.Object) error {
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}

func equalStatus(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }

// deterministicJobID derives a job id from the resource and the upgrade it belongs to, so a
// deployment retried after an operator crash submits the same job id as the first attempt.
func deterministicJobID(uid string, upgradeTimestamp int64) string {
	sum := sha256.Sum256([]byte(uid + "/" + strconv.FormatInt(upgradeTimestamp, 10)))
	return hex.EncodeToString(sum[:16])
}

func sortStrings(s []string) []string {
	sort.Strings(s)
	return s
}
