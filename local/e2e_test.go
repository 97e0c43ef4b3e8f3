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
		return runLogged(ctx, t, name+": ", cmd, dir)
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
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out := &lineLogger{t: t, prefix: prefix}
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

// lineLogger writes complete lines to the test log as they arrive.
type lineLogger struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	buf    []byte
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
		l.t.Log(l.prefix + string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.t.Log(l.prefix + string(l.buf))
		l.buf = nil
	}
}

var _ io.Writer = (*lineLogger)(nil)
