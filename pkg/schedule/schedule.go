// Package schedule reads the periodic snapshot options as upstream does: a duration ("1 h",
// "30 min") or a Quartz cron expression ("0 0 * * * ?": second minute hour day-of-month month
// day-of-week [year]). Supported in cron fields: *, ?, numbers, names (JAN-DEC, SUN-SAT),
// ranges a-b, steps a/n and */n, and lists; Quartz's L, W and # are rejected with a clear error.
package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cron is a parsed Quartz cron expression.
type Cron struct {
	fields                  [7]map[int]bool // second, minute, hour, day of month, month, day of week (0=SUN), year
	anyDOM, anyDOW, anyYear bool
}

var fieldRanges = [7][2]int{{0, 59}, {0, 59}, {0, 23}, {1, 31}, {1, 12}, {1, 7}, {1970, 2199}}

var monthNames = map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6, "JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}
var dayNames = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}

// ParseCron parses a Quartz cron expression of 6 or 7 fields.
func ParseCron(expr string) (*Cron, error) {
	parts := strings.Fields(strings.ToUpper(expr))
	if len(parts) != 6 && len(parts) != 7 {
		return nil, fmt.Errorf("cron %q: want 6 or 7 fields (second minute hour day-of-month month day-of-week [year]), got %d", expr, len(parts))
	}
	if len(parts) == 6 {
		parts = append(parts, "*")
	}
	c := &Cron{}
	for i, p := range parts {
		monthOrDayName := (i == 4 || i == 5) && isName(p)
		if strings.ContainsAny(p, "LW#") && !monthOrDayName {
			return nil, fmt.Errorf("cron %q: field %d (%s): L, W and # are not supported", expr, i+1, p)
		}
		set, any, err := parseField(p, fieldRanges[i], i)
		if err != nil {
			return nil, fmt.Errorf("cron %q: field %d (%s): %w", expr, i+1, p, err)
		}
		c.fields[i] = set
		switch i {
		case 3:
			c.anyDOM = any
		case 5:
			c.anyDOW = any
		case 6:
			c.anyYear = any
		}
	}
	return c, nil
}

func isName(p string) bool {
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == ',' || r == '-' || r == '/' }) {
		if _, ok := monthNames[part]; ok {
			continue
		}
		if _, ok := dayNames[part]; ok {
			continue
		}
		if _, err := strconv.Atoi(part); err == nil {
			continue
		}
		return false
	}
	return true
}

func parseField(p string, rng [2]int, index int) (map[int]bool, bool, error) {
	if p == "*" || p == "?" {
		return nil, true, nil
	}
	set := map[int]bool{}
	for _, item := range strings.Split(p, ",") {
		base, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return nil, false, fmt.Errorf("step %q is not a positive number", stepText)
			}
			step = n
		}
		lo, hi, err := fieldRange(base, rng, index, hasStep)
		if err != nil {
			return nil, false, err
		}
		if lo < rng[0] || hi > rng[1] || lo > hi {
			return nil, false, fmt.Errorf("%q is outside %d-%d", item, rng[0], rng[1])
		}
		for v := lo; v <= hi; v += step {
			set[v] = true
			if step > hi-v {
				break // v+step is past hi, and with a huge step would wrap around below it
			}
		}
	}
	return set, false, nil
}

// fieldRange reads the range part of a list item (before any /step): * or ?, a-b or a single
// value, which with a step runs to the end of rng.
func fieldRange(base string, rng [2]int, index int, hasStep bool) (lo, hi int, err error) {
	lo, hi = rng[0], rng[1]
	switch {
	case base == "*" || base == "?":
	case strings.Contains(base, "-"):
		a, b, _ := strings.Cut(base, "-")
		if lo, err = value(a, index); err != nil {
			return 0, 0, err
		}
		if hi, err = value(b, index); err != nil {
			return 0, 0, err
		}
	default:
		v, err := value(base, index)
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

func value(s string, index int) (int, error) {
	if index == 4 {
		if v, ok := monthNames[s]; ok {
			return v, nil
		}
	}
	if index == 5 {
		if v, ok := dayNames[s]; ok {
			return v, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}

func (c *Cron) match(i, v int) bool { return c.fields[i] == nil || c.fields[i][v] }

func (c *Cron) dayMatches(t time.Time) bool {
	dom := c.match(3, t.Day())
	dow := c.match(5, int(t.Weekday())+1)
	switch {
	case c.anyDOM && c.anyDOW:
		return true
	case c.anyDOM:
		return dow
	case c.anyDOW:
		return dom
	}
	return dom || dow
}

// Next is the first firing time strictly after t (zero when none within 200 years).
func (c *Cron) Next(t time.Time) time.Time {
	t = t.Truncate(time.Second).Add(time.Second)
	limit := t.AddDate(200, 0, 0)
	for t.Before(limit) {
		switch {
		case !c.anyYear && !c.match(6, t.Year()):
			t = time.Date(t.Year()+1, 1, 1, 0, 0, 0, 0, t.Location())
		case !c.match(4, int(t.Month())):
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, t.Location())
		case !c.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, t.Location())
		case !c.match(2, t.Hour()):
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, t.Location())
		case !c.match(1, t.Minute()):
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute()+1, 0, 0, t.Location())
		case !c.match(0, t.Second()):
			t = t.Add(time.Second)
		default:
			return t
		}
	}
	return time.Time{}
}
