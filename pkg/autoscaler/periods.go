package autoscaler

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// excludedPeriod is one excluded.periods expression: a daily time range, a Quartz cron
// expression, or both joined by && (then both must match).
type excludedPeriod struct {
	daily *dailyRange
	cron  *cronExpr
}

// dailyRange is upstream's "daily expression" HH:mm[:ss[:SSS]]-HH:mm[:ss[:SSS]], both ends
// included.
type dailyRange struct{ from, to time.Duration }

// cronExpr is a Quartz cron expression: seconds, minutes, hours, day of month, month, day of
// week (1 = Sunday), optional year. Each field is the set of allowed values.
type cronExpr struct {
	fields [7]map[int]bool // nil: any
}

// cronField is one Quartz field with its range and names.
type cronField struct {
	name     string
	min, max int
	names    []string
}

// cronFields are the Quartz fields with their ranges and names.
var cronFields = [7]cronField{
	{"seconds", 0, 59, nil},
	{"minutes", 0, 59, nil},
	{"hours", 0, 23, nil},
	{"day-of-month", 1, 31, nil},
	{"month", 1, 12, []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{"day-of-week", 1, 7, []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
	{"year", 1970, 2199, nil},
}

// parseExcludedPeriod parses one expression as upstream's CalendarUtils accepts it.
func parseExcludedPeriod(expr string) (excludedPeriod, error) {
	parts := strings.Split(expr, "&&")
	if len(parts) > 2 {
		return excludedPeriod{}, fmt.Errorf("%q has more than two subexpressions joined by &&", expr)
	}
	var p excludedPeriod
	for _, part := range parts {
		part = strings.TrimSpace(part)
		if d, err := parseDaily(part); err == nil {
			if p.daily != nil {
				return p, fmt.Errorf("%q joins two daily expressions; join a daily and a cron expression", expr)
			}
			p.daily = &d
			continue
		}
		c, err := parseCron(part)
		if err != nil {
			return p, fmt.Errorf("%q: %q is neither a daily expression (HH:mm:ss-HH:mm:ss) nor a cron expression: %w", expr, part, err)
		}
		if p.cron != nil {
			return p, fmt.Errorf("%q joins two cron expressions; join a daily and a cron expression", expr)
		}
		p.cron = &c
	}
	return p, nil
}

func parseDaily(s string) (dailyRange, error) {
	from, to, ok := strings.Cut(s, "-")
	if !ok {
		return dailyRange{}, fmt.Errorf("not a range")
	}
	f, err := parseTimeOfDay(from)
	if err != nil {
		return dailyRange{}, err
	}
	t, err := parseTimeOfDay(to)
	if err != nil {
		return dailyRange{}, err
	}
	if f >= t {
		return dailyRange{}, fmt.Errorf("start %s is not before end %s", from, to)
	}
	return dailyRange{f, t}, nil
}

func parseTimeOfDay(s string) (time.Duration, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) < 2 || len(parts) > 4 {
		return 0, fmt.Errorf("%q is not HH:mm[:ss[:SSS]]", s)
	}
	units := []time.Duration{time.Hour, time.Minute, time.Second, time.Millisecond}
	limits := []int{23, 59, 59, 999}
	var d time.Duration
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > limits[i] {
			return 0, fmt.Errorf("%q is not HH:mm[:ss[:SSS]]", s)
		}
		d += time.Duration(n) * units[i]
	}
	return d, nil
}

func parseCron(s string) (cronExpr, error) {
	fields := strings.Fields(strings.ToUpper(s))
	if len(fields) != 6 && len(fields) != 7 {
		return cronExpr{}, fmt.Errorf("want 6 or 7 fields, got %d", len(fields))
	}
	var c cronExpr
	for i, f := range fields {
		set, err := parseCronField(f, i)
		if err != nil {
			return cronExpr{}, fmt.Errorf("%s field %q: %w", cronFields[i].name, f, err)
		}
		c.fields[i] = set
	}
	if (fields[3] == "?") == (fields[5] == "?") {
		return cronExpr{}, fmt.Errorf("exactly one of day-of-month and day-of-week must be '?'")
	}
	return c, nil
}

// parseCronField parses lists of values, ranges and steps (the L, W and # forms are not
// supported).
func parseCronField(f string, idx int) (map[int]bool, error) {
	spec := cronFields[idx]
	if f == "*" || f == "?" {
		return nil, nil
	}
	set := map[int]bool{}
	for _, item := range strings.Split(f, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("bad step %q", stepText)
			}
			step = n
		}
		lo, hi, err := cronRange(rng, spec, hasStep)
		if err != nil {
			return nil, err
		}
		if lo > hi {
			// Quartz wraps ranges such as FRI-MON.
			for v := lo; v <= spec.max; v += step {
				set[v] = true
			}
			for v := spec.min; v <= hi; v += step {
				set[v] = true
			}
			continue
		}
		for v := lo; v <= hi; v += step {
			set[v] = true
		}
	}
	return set, nil
}

// cronRange reads the range part of a list item (before any /step): *, a-b or a single value,
// which with a step runs to the field's maximum.
func cronRange(rng string, spec cronField, hasStep bool) (lo, hi int, err error) {
	lo, hi = spec.min, spec.max
	switch {
	case rng == "*":
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		if lo, err = cronValue(a, spec.names, spec.min, spec.max); err != nil {
			return 0, 0, err
		}
		if hi, err = cronValue(b, spec.names, spec.min, spec.max); err != nil {
			return 0, 0, err
		}
	default:
		v, err := cronValue(rng, spec.names, spec.min, spec.max)
		if err != nil {
			return 0, 0, err
		}
		lo = v
		if !hasStep {
			hi = v
		}
	}
	return lo, hi, nil
}

func cronValue(s string, names []string, lo, hi int) (int, error) {
	for i, n := range names {
		if s == n {
			return lo + i, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not supported: use numbers, names, ranges, lists and steps", s)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%d is out of range %d-%d", v, lo, hi)
	}
	return v, nil
}

func (c cronExpr) matches(t time.Time) bool {
	values := [7]int{t.Second(), t.Minute(), t.Hour(), t.Day(), int(t.Month()), int(t.Weekday()) + 1, t.Year()}
	for i, set := range c.fields {
		if set != nil && !set[values[i]] {
			return false
		}
	}
	return true
}

func (d dailyRange) matches(t time.Time) bool {
	y, m, day := t.Date()
	since := t.Sub(time.Date(y, m, day, 0, 0, 0, 0, t.Location()))
	return since >= d.from && since <= d.to
}

// matches reports whether the time falls in the period, in UTC (upstream uses the operator's
// JVM time zone, UTC in its images).
func (p excludedPeriod) matches(t time.Time) bool {
	t = t.UTC()
	return (p.daily == nil || p.daily.matches(t)) && (p.cron == nil || p.cron.matches(t))
}

// inExcludedPeriod reports whether scaling is forbidden at the time by excluded.periods.
// Expressions that do not parse were rejected by ParseConfig and are skipped here.
func (c Config) inExcludedPeriod(t time.Time) bool {
	for _, expr := range c.ExcludedPeriods {
		if p, err := parseExcludedPeriod(expr); err == nil && p.matches(t) {
			return true
		}
	}
	return false
}
