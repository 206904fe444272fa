package v1beta1

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusErrorRoundTrip(t *testing.T) {
	raw := NewStatusError(ExceptionUpgradeFailure, ErrorReasonManualRestoreRequired, "the job is FAILED")
	e, ok := ParseStatusError(raw)
	require.True(t, ok)
	assert.Equal(t, ExceptionUpgradeFailure, e.Type)
	assert.Equal(t, "the job is FAILED", e.Message)
	assert.Equal(t, ErrorReasonManualRestoreRequired, ErrorReason(raw))
	assert.Equal(t, "the job is FAILED", ErrorMessage(raw))
}

// Messages full of characters JSON escapes (a tenant's exception text) are capped at upstream's
// length and stay valid JSON; the earlier recursive truncation never ended on them.
func TestStatusErrorIsCapped(t *testing.T) {
	for name, msg := range map[string]string{
		"quotes":  strings.Repeat(`"`, 100000),
		"angles":  strings.Repeat("<", 100000),
		"unicode": strings.Repeat("é", 100000),
		"control": strings.Repeat("\x01", 5000),
		"plain":   strings.Repeat("a", 5000),
	} {
		raw := NewStatusError(ExceptionReconciliation, ErrorReasonReconcileFailed, msg)
		assert.LessOrEqual(t, len(raw), statusErrorMaxLength, name)
		var e StatusError
		require.NoError(t, json.Unmarshal([]byte(raw), &e), name)
		assert.True(t, strings.HasSuffix(e.Message, "..."), name)
		assert.Equal(t, ErrorReasonReconcileFailed, ErrorReason(raw), name)
	}
}

func TestErrorReasonOfErrorsTheApacheOperatorWrote(t *testing.T) {
	for raw, want := range map[string]StatusErrorReason{
		"": "",
		`{"type":"org.apache.flink.kubernetes.operator.exception.UpgradeFailureException","message":"Job is not running and HA metadata is not available","additionalMetadata":{},"throwableList":[]}`: ErrorReasonManualRestoreRequired,
		`{"type":"org.apache.flink.kubernetes.operator.exception.RecoveryFailureException","message":"... Manual restore required.","additionalMetadata":{},"throwableList":[]}`:                       ErrorReasonManualRestoreRequired,
		`{"type":"org.apache.flink.kubernetes.operator.exception.ValidationException","message":"jarURI scheme 'http' is not in the allowlist","additionalMetadata":{},"throwableList":[]}`:            ErrorReasonInvalidSpec,
		`{"type":"org.apache.flink.kubernetes.operator.exception.DeploymentFailedException","message":"ImagePullBackOff","additionalMetadata":{},"throwableList":[]}`:                                  ErrorReasonDeploymentFailed,
		"not json": ErrorReasonReconcileFailed,
	} {
		assert.Equal(t, want, ErrorReason(raw), raw)
	}
}
