package v1beta1

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzStatusError: whatever a message holds (a tenant's exception text, a Flink REST body),
// status.error is valid JSON of upstream's shape, at most upstream's 2048 bytes, and reads back
// with its reason and a message that is the original or a prefix of it marked "...". Reading
// any status.error text (also one written by hand or by the Apache operator) never panics.
// Run longer with: go test ./api/v1beta1 -run '^$' -fuzz FuzzStatusError -fuzztime 60s
func FuzzStatusError(f *testing.F) {
	f.Add(ExceptionValidation, string(ErrorReasonInvalidSpec), "spec.job.parallelism: Invalid value: -1")
	f.Add(ExceptionUpgradeFailure, string(ErrorReasonUpgradeFailed), strings.Repeat(`"\<>&`, 600))
	f.Add(ExceptionReconciliation, "", strings.Repeat("é\u2028\x01", 900))
	f.Add(ExceptionReconciliation, string(ErrorReasonReconcileFailed), "\xff\xfe invalid UTF-8 \xc3")
	f.Add("", "", `{"type":"x","message":"Manual restore required","additionalMetadata":{"reason":7}}`)
	f.Add(ExceptionJobNotFound, "", `{"type":"org.apache.flink.kubernetes.operator.exception.ValidationError"}`)
	f.Add(ExceptionValidation, string(ErrorReasonInvalidSpec), "null")
	f.Fuzz(func(t *testing.T, exception, reason, message string) {
		// Reading: any text, never a panic; a reason only when there is text.
		for _, raw := range []string{message, exception} {
			r := ErrorReason(raw)
			_ = ErrorMessage(raw)
			if (raw == "") != (r == "") {
				t.Fatalf("ErrorReason(%q) = %q", raw, r)
			}
		}

		if len(exception) > 200 || len(reason) > 100 {
			t.Skip() // the type and reason are the operator's constants; only the message is capped
		}
		raw := NewStatusError(exception, StatusErrorReason(reason), message)
		if !json.Valid([]byte(raw)) {
			t.Fatalf("not JSON: %s", raw)
		}
		if len(raw) > statusErrorMaxLength {
			t.Fatalf("%d bytes, more than %d", len(raw), statusErrorMaxLength)
		}
		e, ok := ParseStatusError(raw)
		if !ok {
			t.Fatalf("does not parse: %s", raw)
		}
		if e.Type != jsonString(exception) || e.ThrowableList == nil {
			t.Fatalf("type %q, throwableList %v: %s", e.Type, e.ThrowableList, raw)
		}
		if want := StatusErrorReason(jsonString(reason)); reason != "" && ErrorReason(raw) != want {
			t.Fatalf("reason %q, want %q", ErrorReason(raw), want)
		}
		got, full := ErrorMessage(raw), jsonString(message)
		if got != full {
			prefix, cut := strings.CutSuffix(got, statusErrorTruncationSuffix)
			if !cut || !strings.HasPrefix(full, prefix) {
				t.Fatalf("message %q is neither %q nor a prefix of it with %q", got, full, statusErrorTruncationSuffix)
			}
			// The cut keeps as much as fits: a rendering one character longer would not.
			if next := nextRune(full, len(prefix)); utf8.ValidString(message) && next > len(prefix) && len(renderUncapped(exception, reason, full[:next]+statusErrorTruncationSuffix)) <= statusErrorMaxLength {
				t.Fatalf("message cut at %d bytes, but %d fit", len(prefix), next)
			}
		}
	})
}

// jsonString is s as it reads back from JSON (invalid UTF-8 becomes U+FFFD).
func jsonString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

func nextRune(s string, i int) int {
	if i >= len(s) {
		return i
	}
	_, n := utf8.DecodeRuneInString(s[i:])
	return i + n
}

// renderUncapped renders without truncation, to measure a candidate message.
func renderUncapped(exception, reason, message string) string {
	b, _ := json.Marshal(StatusError{Type: exception, Message: message,
		AdditionalMetadata: map[string]any{statusErrorReasonMetadata: reason}, ThrowableList: []any{}})
	return string(b)
}
