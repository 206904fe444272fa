package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCronNext(t *testing.T) {
	base := time.Date(2026, 11, 22, 10, 17, 30, 0, time.UTC) // a Sunday
	tests := []struct {
		expr string
		want time.Time
	}{
		{"0 0 * * * ?", time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)},
		{"0 */15 * * * ?", time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)},
		{"30 17 10 * * ?", time.Date(2026, 11, 23, 10, 17, 30, 0, time.UTC)},
		{"0 0 2 ? * MON-FRI", time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)},
		{"0 0 0 1 JAN ?", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"0 0 12 ? * SUN", time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)},
		{"0 0,30 9-17 * * ? 2027", time.Date(2027, 1, 1, 9, 0, 0, 0, time.UTC)},
		{"*/10 * * * * ?", time.Date(2026, 11, 22, 10, 17, 40, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			c, err := ParseCron(tt.expr)
			require.NoError(t, err)
			assert.Equal(t, tt.want, c.Next(base))
		})
	}
}

func TestCronErrors(t *testing.T) {
	for expr, msg := range map[string]string{
		"* * * *":         "want 6 or 7 fields",
		"0 0 0 L * ?":     "L, W and # are not supported",
		"0 61 * * * ?":    "outside 0-59",
		"0 0 0 ? * FOO":   "is not a number",
		"0 0/0 * * * ?":   "not a positive number",
		"0 0 12 ? * 2#1":  "L, W and # are not supported",
		"0 0 25-26 * * ?": "outside 0-23",
	} {
		_, err := ParseCron(expr)
		require.Error(t, err, expr)
		assert.Contains(t, err.Error(), msg, expr)
	}
}

// TestCronHugeStep: a step near the int limit wrapped v+step around below the field's maximum,
// adding values outside the field (found by FuzzPeriodic).
func TestCronHugeStep(t *testing.T) {
	c, err := ParseCron("1/9223372036854775807 * * * * ? 2199/9223372036854775807")
	require.NoError(t, err)
	assert.Equal(t, map[int]bool{1: true}, c.fields[0])
	assert.Equal(t, map[int]bool{2199: true}, c.fields[6])
}
