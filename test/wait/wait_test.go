package wait

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records a failure instead of stopping the goroutine.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatal(args ...any) {
	r.failed = fmt.Sprint(args...)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestFor(t *testing.T) {
	calls := 0
	r := &recorder{}
	For(r, time.Second, "the third call", func() bool { calls++; return calls == 3 })
	if r.failed != "" || calls != 3 {
		t.Fatalf("For failed (%q) or stopped after %d calls", r.failed, calls)
	}

	r = &recorder{}
	For(r, 120*time.Millisecond, "nothing", func() bool { return false }, func() string { return "last state: x" })
	if want := "timed out after 120ms waiting for nothing; last state: x"; r.failed != want {
		t.Fatalf("failure %q, want %q", r.failed, want)
	}
}

func TestNever(t *testing.T) {
	r := &recorder{}
	start := time.Now()
	Never(r, 150*time.Millisecond, "it happened", func() bool { return false })
	if r.failed != "" || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("Never failed (%q) or returned after %s", r.failed, time.Since(start))
	}

	r = &recorder{}
	calls := 0
	Never(r, 10*time.Second, "it happened", func() bool { calls++; return calls == 2 })
	if !strings.HasPrefix(r.failed, "it happened, ") || calls != 2 {
		t.Fatalf("failure %q after %d calls", r.failed, calls)
	}
}
