package wait

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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

func TestUntil(t *testing.T) {
	calls := 0
	r := &recorder{}
	Until(r, context.Background(), time.Second, "the second call", func() (bool, error) {
		calls++
		return calls == 2, errors.New("not yet")
	})
	if r.failed != "" || calls != 2 {
		t.Fatalf("Until failed (%q) or stopped after %d calls", r.failed, calls)
	}

	r = &recorder{}
	Until(r, context.Background(), 120*time.Millisecond, "nothing", func() (bool, error) { return false, errors.New("refused") },
		func() string { return "pods: 0" })
	if want := "timed out after 120ms waiting for nothing; last error: refused; pods: 0"; r.failed != want {
		t.Fatalf("failure %q, want %q", r.failed, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = &recorder{}
	start := time.Now()
	Until(r, ctx, time.Minute, "nothing", func() (bool, error) { return false, ctx.Err() })
	if want := "context canceled while waiting for nothing (last error: context canceled)"; r.failed != want || time.Since(start) > 5*time.Second {
		t.Fatalf("failure %q after %s, want %q at once", r.failed, time.Since(start), want)
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

func TestObject(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	key := client.ObjectKey{Namespace: "ns", Name: "cm"}
	r := &recorder{}
	got := Object(r, c, key, 120*time.Millisecond, "the ConfigMap", func(*corev1.ConfigMap) bool { return true })
	if got != nil || !strings.Contains(r.failed, "timed out after 120ms waiting for the ConfigMap; last get of ns/cm:") ||
		!strings.Contains(r.failed, "not found") {
		t.Fatalf("a missing object: got %v, failure %q", got, r.failed)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"n": "1"}}
	if err := c.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	gets := 0
	go func() {
		time.Sleep(3 * Poll)
		cm.Data["n"] = "2"
		_ = c.Update(context.Background(), cm)
	}()
	r = &recorder{}
	got = Object(r, c, key, 5*time.Second, "n=2", func(cm *corev1.ConfigMap) bool { gets++; return cm.Data["n"] == "2" })
	if r.failed != "" || got == nil || got.Data["n"] != "2" || gets < 2 {
		t.Fatalf("failure %q, got %v after %d gets", r.failed, got, gets)
	}

	r = &recorder{}
	Object(r, c, key, 120*time.Millisecond, "n=3", func(cm *corev1.ConfigMap) bool { return cm.Data["n"] == "3" })
	if !strings.Contains(r.failed, "waiting for n=3; last ns/cm: ") || !strings.Contains(r.failed, "n: 2") {
		t.Fatalf("failure %q does not show the last object", r.failed)
	}

	r = &recorder{}
	Object(r, c, key, 120*time.Millisecond, "n=3", func(cm *corev1.ConfigMap) bool { return cm.Data["n"] == "3" },
		func() string { return "log in x.log" })
	if !strings.Contains(r.failed, "n: 2") || !strings.HasSuffix(r.failed, "; log in x.log") {
		t.Fatalf("failure %q does not end with what more says", r.failed)
	}
}
