package v1beta1

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FormatSnapshotTime renders a FlinkStateSnapshot status timestamp (triggerTimestamp,
// resultTimestamp) as upstream writes it: ISO-8601 in UTC as Java's Instant prints it, the
// fraction of a second in groups of three digits and left out when zero
// ("2026-11-23T16:39:00.070935700Z"). Tools that sort or parse these strings see the same
// values from either operator.
func FormatSnapshotTime(t time.Time) string {
	t = t.UTC()
	out := t.Format("2006-01-02T15:04:05")
	switch ns := t.Nanosecond(); {
	case ns == 0:
	case ns%1_000_000 == 0:
		out += fmt.Sprintf(".%03d", ns/1_000_000)
	case ns%1_000 == 0:
		out += fmt.Sprintf(".%06d", ns/1_000)
	default:
		out += fmt.Sprintf(".%09d", ns)
	}
	return out + "Z"
}

// ParseSnapshotTime reads a FlinkStateSnapshot status timestamp: ISO-8601 (upstream's format,
// written by this operator too) or epoch milliseconds (written by earlier versions of this
// operator, still found on snapshots they recorded).
func ParseSnapshotTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("snapshot timestamp %q is neither ISO-8601 nor epoch milliseconds", s)
	}
	return t, nil
}
