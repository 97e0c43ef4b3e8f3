// Package polltest waits, in tests, for a condition that another
// goroutine, instance or process makes true. It checks the condition again
// and again, briefly at first, until it holds or a bound passes, so a test
// waits exactly as long as the event takes and fails clearly when the event
// never comes. A test that can receive the event from a channel should do
// that instead; this is for conditions with nothing to wait on (a count
// kept by a scripted model, a request a webhook server saw, a document in
// the emulator).
package polltest

import (
	"testing"
	"time"
)

// Timeout bounds Until: long enough for an event on a loaded machine,
// short enough that a test waiting for one that never comes fails well
// within go test's timeout. It was 10 s, which a turn's first model call
// outlasted with the suite running beside two more (load average near 35
// on two cores: TestConcurrentTurnsHTTP); a bound only delays a failure,
// so it errs long.
const Timeout = time.Minute

// maxDelay is the longest pause between two checks.
const maxDelay = 50 * time.Millisecond

// Until returns once cond returns true, and fails t with what (what was
// awaited, such as "the first turn to call the model") if cond has not
// within Timeout. Like t.Fatal, it must be called from the test's
// goroutine.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, Timeout, what, cond)
}

// Within is Until with its own bound d.
func Within(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	delay := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v, still waiting for %s", d, what)
		}
		select {
		case <-time.After(delay):
		case <-t.Context().Done():
			t.Fatalf("test ended while waiting for %s", what)
		}
		delay = min(2*delay, maxDelay)
	}
}
