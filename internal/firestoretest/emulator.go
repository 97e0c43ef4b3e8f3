package firestoretest

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/emulator"
)

const (
	hostEnv      = "FIRESTORE_EMULATOR_HOST"
	startTimeout = 30 * time.Second
)

// installHint tells a CI maintainer what the emulator needs.
const installHint = emulator.InstallHint

// emulatorHost returns the address of the emulator, starting one on first use.
var emulatorHost = sync.OnceValues(func() (string, error) {
	if addr := os.Getenv(hostEnv); addr != "" {
		return addr, nil
	}
	e, err := emulator.Start("", startTimeout)
	if err != nil {
		return "", err
	}
	started.Lock()
	started.e = e
	started.Unlock()
	if err := os.Setenv(hostEnv, e.Addr); err != nil {
		return "", err
	}
	return e.Addr, nil
})

// requireEmulator returns the emulator's address. If there is none, it skips
// the test, or fails it under CI=true.
func requireEmulator(tb testing.TB) string {
	tb.Helper()
	addr, err := emulatorHost()
	if err == nil {
		return addr
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("firestore emulator: %v\nCI=true, so this fails instead of skipping: %s", err, installHint)
	}
	tb.Skipf("firestore emulator: %v", err)
	return ""
}

// Main runs the tests, stops the emulator this binary started, if any, runs
// cleanups (such as authtest.Stop) and exits with the tests' exit code. On
// SIGINT or SIGTERM it does the same and exits with code 1. Call it from
// TestMain.
func Main(m *testing.M, cleanups ...func()) {
	stop := func() {
		stopEmulator()
		for _, c := range cleanups {
			c()
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		stop()
		fmt.Fprintf(os.Stderr, "firestoretest: %v\n", s)
		os.Exit(1)
	}()
	code := m.Run()
	stop()
	os.Exit(code)
}

// started is the emulator this binary started.
var started struct {
	sync.Mutex
	e *emulator.Emulator
}

func stopEmulator() {
	started.Lock()
	defer started.Unlock()
	if started.e != nil {
		started.e.Stop()
	}
}
