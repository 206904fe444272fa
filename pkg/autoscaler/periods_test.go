package autoscaler

import (
	"strings"
	"testing"
	"time"
)

func TestExcludedPeriods(t *testing.T) {
	// 2026-11-25 is a Wednesday (Quartz day-of-week 4).
	at := func(hms string) time.Time {
		v, err := time.Parse("2006-01-02 15:04:05", "2026-11-25 "+hms)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		expr string
		in   []string
		out  []string
	}{
		{"* * 9-11,14-16 * * ?", []string{"09:00:00", "11:59:59", "14:30:00"}, []string{"08:59:59", "12:00:00", "17:00:00"}},
		{"* * * ? * 2-6", []string{"00:00:00", "23:59:59"}, nil},
		{"* * * ? * SAT,SUN", nil, []string{"12:00:00"}},
		{"0/30 * * * * ?", []string{"10:00:00", "10:00:30"}, []string{"10:00:15"}},
		{"9:30:30-10:50:20", []string{"09:30:30", "10:50:20", "10:00:00"}, []string{"09:30:29", "10:50:21"}},
		{"9:30:30-10:50:20 && * * * ? * 4", []string{"10:00:00"}, []string{"11:00:00"}},
		{"9:30:30-10:50:20 && * * * ? * MON", nil, []string{"10:00:00"}},
		{"* * * 25 NOV ? 2026", []string{"10:00:00"}, nil},
	} {
		p, err := parseExcludedPeriod(c.expr)
		if err != nil {
			t.Errorf("%q: %v", c.expr, err)
			continue
		}
		for _, h := range c.in {
			if !p.matches(at(h)) {
				t.Errorf("%q should exclude %s", c.expr, h)
			}
		}
		for _, h := range c.out {
			if p.matches(at(h)) {
				t.Errorf("%q should not exclude %s", c.expr, h)
			}
		}
	}
	for _, bad := range []string{"* * *", "10:00-09:00", "* * * * * *", "* * * ? * 2 && * * * ? * 3", "9:00-10:00 && 11:00-12:00", "* * * L * ?", "a && b && c", "* * 25 * * ?"} {
		if _, err := parseExcludedPeriod(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	_, err := ParseConfig(map[string]string{"job.autoscaler.enabled": "true", "job.autoscaler.excluded.periods": "9:00-10:00; nonsense"})
	if err == nil || !strings.Contains(err.Error(), "job.autoscaler.excluded.periods:") {
		t.Errorf("bad expression: %v", err)
	}
}

func TestEvaluateExcludedPeriodOnlyRecommends(t *testing.T) {
	loads := map[VertexID]load{src: {rate: 1000, busy: 100}, mid: {rate: 1000, busy: 900}, sink: {rate: 1000, busy: 100}}
	cfg, err := ParseConfig(map[string]string{"job.autoscaler.enabled": "true", "job.autoscaler.excluded.periods": "11:00:00-13:00:00;* * 3 * * ?"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.TargetUtil, cfg.UtilMin, cfg.UtilMax, cfg.ScaleDownInterval = 0.5, 0.3, 0.8, 0
	s := fullState(samples(16, loads)) // ends at 12:15
	r := evalAt(pipeline(1, 1, 1), s, cfg)
	want := "Scaling execution disabled by config job.autoscaler.excluded.periods:[11:00:00-13:00:00, * * 3 * * ?], recommended parallelism change:{ Vertex ID "
	if r.Scaled || !strings.HasPrefix(r.Message, want) {
		t.Fatalf("in an excluded period: scaled %v, %q", r.Scaled, r.Message)
	}
	if r := Evaluate(t0.Add(2*time.Hour), pipeline(1, 1, 1), s, cfg); !r.Scaled {
		t.Errorf("outside the excluded periods: not scaled (%s)", r.Message)
	}
}
