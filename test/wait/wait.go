// Package wait is how tests wait for something to happen, or make sure it does not, instead
// of sleeping: a sleep either wastes time or is too short on a loaded machine, and a failed
// sleep-then-check says nothing about what was awaited.
//
// Conditions run on the test's goroutine, one at a time, so they may call require and
// t.Fatal (testify's Eventually runs them on goroutines of their own, where FailNow must not
// be called).
package wait

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Poll is how often conditions are checked.
const Poll = 50 * time.Millisecond

// For checks cond every Poll until it holds. If it still does not after timeout, the test
// fails at once with "timed out after <timeout> waiting for <what>", followed by what state
// returns then (when given): the last status, say, which is what one needs to see why.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool, state ...func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("timed out after %s waiting for %s", timeout, what)
			for _, s := range state {
				msg += "; " + s()
			}
			t.Fatal(msg)
			return
		}
		time.Sleep(Poll)
	}
}

// Until is For for a condition that can fail (a get, a call to a server): it checks cond every
// Poll until it returns true. On timeout the test fails with cond's last error, followed by
// what state returns; when ctx ends first (the test's own deadline) it fails at once, saying so.
func Until(t testing.TB, ctx context.Context, timeout time.Duration, what string, cond func() (bool, error), state ...func() string) {
	t.Helper()
	var last error
	For(t, timeout, what, func() bool {
		ok, err := cond()
		if err != nil {
			last = err
		}
		if !ok && ctx.Err() != nil {
			t.Fatalf("%s while waiting for %s (last error: %v)", ctx.Err(), what, last)
			return true // a t whose Fatalf returns (a recorder) ends the wait here
		}
		return ok
	}, append([]func() string{func() string { return fmt.Sprintf("last error: %v", last) }}, state...)...)
}

// Never checks cond every Poll for d (and once more at the end); the test fails at once if it
// ever holds, saying what happened and when. It is how a test says "nothing happens for a
// while": unlike a sleep followed by one check, it also catches something that happens and is
// undone within the window.
func Never(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	for {
		if cond() {
			t.Fatalf("%s, %s after the check began", what, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) >= d {
			return
		}
		time.Sleep(Poll)
	}
}

// Object gets the object named key from c, fresh each Poll, until cond holds, and returns it:
// how a test waits for a resource to reach a state. A failed get (not created yet, say) counts
// as "not yet". On timeout the test fails with the last error, or with the status of the last
// object read (the whole object when it has no status), followed by what more returns (where
// to find the operator's log, say).
func Object[T any, PT interface {
	*T
	client.Object
}](t testing.TB, c client.Reader, key client.ObjectKey, timeout time.Duration, what string, cond func(PT) bool, more ...func() string) PT {
	t.Helper()
	var last PT
	var lastErr error
	For(t, timeout, what, func() bool {
		obj := PT(new(T))
		if lastErr = c.Get(context.Background(), key, obj); lastErr != nil {
			return false
		}
		last = obj
		return cond(obj)
	}, append([]func() string{func() string {
		if lastErr != nil {
			return fmt.Sprintf("last get of %s: %v", key, lastErr)
		}
		return fmt.Sprintf("last %s: %+v", key, statusOf(last))
	}}, more...)...)
	return last
}

// statusOf is obj's Status field, or obj itself when it has none.
func statusOf(obj any) any {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct {
		if status := v.Elem().FieldByName("Status"); status.IsValid() {
			return status.Interface()
		}
	}
	return obj
}
