package schedule

import (
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/pkg/options"
)

// FuzzPeriodic reads a periodic snapshot option as validation and the controllers do: a Flink
// duration, else a Quartz cron expression. Never a panic; a duration is exactly the number
// times its unit (no overflow into a negative or short interval); a parsed cron holds only
// values inside each field's range, and Next is strictly later, matches every field, and is
// its own next firing when asked from one second before.
// Run longer with: go test ./pkg/schedule -run '^$' -fuzz FuzzPeriodic -fuzztime 60s
func FuzzPeriodic(f *testing.F) {
	for _, seed := range []string{
		"1 h", "30 min", "0", "106751 d", "9223372036854775807 ms", "200000 d",
		"0 0 * * * ?", "0 */15 * * * ?", "0 0 2 ? * MON-FRI", "0 0,30 9-17 * * ? 2027",
		"0 0 0 31 2 ?", "0 0 0 1 JAN ? 2199/9223372036854775807", "59 59 23 31 DEC ? 2199",
		"1/9223372036854775807 * * * * ?", "0 0 12 ? * 2#1", "* * * * * * *",
	} {
		f.Add(seed, int64(1795000000))
	}
	f.Fuzz(func(t *testing.T, expr string, unix int64) {
		if d, err := options.ParseDuration(expr); err == nil {
			checkDuration(t, expr, d)
			return
		}
		c, err := ParseCron(expr)
		if err != nil {
			return
		}
		for i, set := range c.fields {
			for v := range set {
				if v < fieldRanges[i][0] || v > fieldRanges[i][1] {
					t.Fatalf("%q: field %d holds %d, outside %v", expr, i+1, v, fieldRanges[i])
				}
			}
		}
		// Times the operator asks about: now, give or take a century.
		from := time.Unix(1700000000+(unix%(100*365*86400)+100*365*86400)%(100*365*86400), 0).UTC()
		next := c.Next(from)
		if next.IsZero() {
			return // never fires within 200 years (e.g. 31 February)
		}
		if !next.After(from) {
			t.Fatalf("%q: Next(%v) = %v, not later", expr, from, next)
		}
		if !c.match(0, next.Second()) || !c.match(1, next.Minute()) || !c.match(2, next.Hour()) ||
			!c.match(4, int(next.Month())) || !c.dayMatches(next) || (!c.anyYear && !c.match(6, next.Year())) {
			t.Fatalf("%q: Next(%v) = %v does not match", expr, from, next)
		}
		if again := c.Next(next.Add(-time.Second)); !again.Equal(next) {
			t.Fatalf("%q: Next(%v) = %v, but Next(%v) = %v", expr, from, next, next.Add(-time.Second), again)
		}
	})
}

// checkDuration: the parsed duration is the written number times the unit, computed without
// overflow.
func checkDuration(t *testing.T, expr string, d time.Duration) {
	t.Helper()
	s := strings.TrimSpace(expr)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, ok := new(big.Int).SetString(s[:i], 10)
	if !ok {
		t.Fatalf("%q parsed, but %q is not a number", expr, s[:i])
	}
	for _, unit := range []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Minute, time.Hour, 24 * time.Hour} {
		want := new(big.Int).Mul(n, big.NewInt(int64(unit)))
		if want.Cmp(big.NewInt(int64(d))) == 0 {
			return
		}
	}
	t.Fatalf("%q parsed as %v (%s ns), which is no unit times %s", expr, d, strconv.FormatInt(int64(d), 10), n)
}
