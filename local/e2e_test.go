//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// e2eInstallHint says how to get what the browser scenarios need.
const e2eInstallHint = "run ./test, which installs what is missing, or install Node.js 20+ and Chromium " +
	"(Debian: apt-get install chromium; or set CHROMIUM to a Chromium binary)"

// TestBrowserScenarios runs local/e2e's scenarios in headless Chromium
// (playwright-core, node:test) against the whole local system, on the page
// built with ai 7 and on the one built with ai 6. Without node
// or Chromium it skips, except under CI=true, where it fails.
func TestBrowserScenarios(t *testing.T) {
	t.Parallel() // with the tests that run the runner as a process, and the page's build
	if testing.Short() {
		t.Skip("browser scenarios are not short")
	}
	// The scenarios may take what go test gives the package, less a minute
	// to stop the runner and report: on a loaded machine they take several
	// times as long as on a quiet one (about 3 minutes).
	deadline := time.Now().Add(8 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	// Registered first, so it runs last: what failed is repeated after the
	// runner's own lines, where a CI log cut to its head and tail shows it.
	var failed failures
	t.Cleanup(func() { failed.report(t) })
	node, chromium := browserTools(ctx, t)
	dir := "e2e"
	url := startForTest(t)
	// Four node processes (each with its browser) side by side, sharing
	// the scenarios of both page builds as they go (BATON_E2E_CLAIMS): most
	// of a scenario's time is spent waiting for the page and the model.
	// They run as goroutines, not parallel subtests: go test runs at most
	// -parallel (GOMAXPROCS, 2 here) of those at once. The scenarios that
	// hold a latency bound (Stop: both tabs within 2 s) run after them,
	// alone: beside three other browsers on 2 cores, a bound measures the
	// machine's load.
	scenarios := func(name string, env ...string) error {
		cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "scenarios.test.mjs")
		cmd.Env = append(os.Environ(), append([]string{"BATON_URL=" + url, "CHROMIUM=" + chromium}, env...)...)
		return runLoggedTo(ctx, &lineLogger{t: t, prefix: name + ": ", failed: &failed}, cmd, dir)
	}
	claims := t.TempDir()
	var wg sync.WaitGroup
	for i := range 4 {
		name := fmt.Sprint("node-", i)
		wg.Go(func() {
			if err := scenarios(name, "BATON_E2E_CLAIMS="+claims, "BATON_E2E_TIMED=skip"); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	wg.Wait()
	if err := scenarios("timed", "BATON_E2E_TIMED=only"); err != nil {
		t.Errorf("timed: %v", err)
	}
}

// browserTools returns node and the Chromium binary, for a test that drives
// the page in local/e2e, after npm ci there when its packages are missing.
// Without node or Chromium it skips, except under CI=true, where it fails.
func browserTools(ctx context.Context, t *testing.T) (node, chromium string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	_, errChromium := os.Stat(chromium)
	if err := errors.Join(errNode, errChromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browser scenarios need node and Chromium: %v; %s", err, e2eInstallHint)
		}
		t.Skipf("browser scenarios need node and Chromium (%v); %s", err, e2eInstallHint)
	}
	dir := "e2e"
	// Read the scripts and the lockfile so that a change to them
	// invalidates go test's cached result.
	for _, name := range []string{"scenarios.test.mjs", "uistream.mjs", "livemode.mjs", "live-restart.mjs", "package-lock.json"} {
		if _, err := os.ReadFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	// ./test runs npm ci whenever the lockfile changes; this covers a bare
	// go test ./local on a checkout that never had node_modules.
	_, errPlaywright := os.Stat(filepath.Join(dir, "node_modules", "playwright-core"))
	_, errAI := os.Stat(filepath.Join(dir, "node_modules", "ai"))
	_, errAI6 := os.Stat(filepath.Join(dir, "node_modules", "ai-v6"))
	if errPlaywright != nil || errAI != nil || errAI6 != nil {
		npmCI(ctx, t, dir)
	}
	return node, chromium
}

// npmCI runs npm ci in dir once per test binary: the tests that drive the
// page share local/e2e's node_modules.
func npmCI(ctx context.Context, t *testing.T, dir string) {
	t.Helper()
	npmMu.Lock()
	defer npmMu.Unlock()
	if npmDone[dir] {
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm ci is needed in local/%s and npm is missing: %v; %s", dir, err, e2eInstallHint)
	}
	if err := runLogged(ctx, t, "", exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund"), dir); err != nil {
		t.Fatal(err)
	}
	npmDone[dir] = true
}

var (
	npmMu   sync.Mutex
	npmDone = map[string]bool{}
)

// runLogged runs cmd in dir, copying its output to the test log line by
// line (each line after prefix), and says why it failed. On timeout its
// whole process group (node and the browser it started) is killed.
func runLogged(ctx context.Context, t *testing.T, prefix string, cmd *exec.Cmd, dir string) error {
	t.Helper()
	return runLoggedTo(ctx, &lineLogger{t: t, prefix: prefix}, cmd, dir)
}

// runLoggedTo is runLogged with its output going to out.
func runLoggedTo(ctx context.Context, out *lineLogger, cmd *exec.Cmd, dir string) error {
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	out.flush()
	if ctx.Err() != nil {
		return fmt.Errorf("%s: timed out: %w", cmd, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return nil
}

// lineLogger writes complete lines to the test log as they arrive. With
// failed set, it also keeps node:test's summary of failing tests.
type lineLogger struct {
	t       *testing.T
	prefix  string
	failed  *failures
	summary bool // past node:test's "✖ failing tests:" line
	mu      sync.Mutex
	buf     []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.line(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.line(string(l.buf))
		l.buf = nil
	}
}

func (l *lineLogger) line(s string) {
	l.t.Log(l.prefix + s)
	if l.failed == nil {
		return
	}
	if strings.HasPrefix(s, "✖ failing tests:") {
		l.summary = true
	}
	// Stack frames are left out: the message says what failed.
	if l.summary && !strings.HasPrefix(strings.TrimSpace(s), "at ") {
		l.failed.add(l.prefix + s)
	}
}

// failures gathers the node processes' summaries of failing scenarios.
type failures struct {
	mu    sync.Mutex
	lines []string
}

// failureLines bounds what is repeated: the full output is above it.
const failureLines = 200

func (f *failures) add(line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.lines) < failureLines {
		f.lines = append(f.lines, line)
	}
}

// report repeats the summaries, if any, at the end of the test's log.
func (f *failures) report(t *testing.T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.lines) > 0 {
		t.Errorf("failing scenarios, as node:test summed them up:\n%s", strings.Join(f.lines, "\n"))
	}
}

var _ io.Writer = (*lineLogger)(nil)

// TestFailingSummaryKept checks that what node:test sums up as failing is
// kept, without its stack frames, and nothing before it.
func TestFailingSummaryKept(t *testing.T) {
	var f failures
	out := &lineLogger{t: t, prefix: "node-0: ", failed: &f}
	fmt.Fprint(out, "✖ bad one (1ms)\n  early detail\nℹ fail 1\n\n✖ failing tests:\n\ntest at a.mjs:4:1\n✖ bad one (1ms)\n  AssertionError: numbers differ\n      at TestContext.<anonymous> (file:///a.mjs:4:32)\n  }")
	out.flush()
	want := []string{"node-0: ✖ failing tests:", "node-0: ", "node-0: test at a.mjs:4:1", "node-0: ✖ bad one (1ms)", "node-0:   AssertionError: numbers differ", "node-0:   }"}
	if strings.Join(f.lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("kept %q, want %q", f.lines, want)
	}
}
