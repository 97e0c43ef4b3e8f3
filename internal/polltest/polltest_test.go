package polltest_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/polltest"
)

// TestUntil: Until checks again until the condition holds, then returns.
func TestUntil(t *testing.T) {
	t.Parallel()
	var checks atomic.Int32
	polltest.Until(t, "the third check", func() bool { return checks.Add(1) == 3 })
	if n := checks.Load(); n != 3 {
		t.Errorf("cond checked %d times, want 3: until it held, and not after", n)
	}
}

// TestWithinFails: a condition that never holds fails the test once the
// bound has passed, not before.
func TestWithinFails(t *testing.T) {
	t.Parallel()
	const bound = 30 * time.Millisecond
	start := time.Now()
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends the goroutine it is called on
		defer close(done)
		polltest.Within(rec, bound, "nothing", func() bool { return false })
	}()
	<-done
	if !rec.failed {
		t.Fatal("Within returned although its condition never held")
	}
	if waited := time.Since(start); waited < bound {
		t.Errorf("Within failed after %v, before its bound %v", waited, bound)
	}
}

// recorder is a testing.TB whose Fatalf records the failure and ends its
// goroutine without failing the real test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(string, ...any) {
	r.failed = true
	runtime.Goexit()
}
