// Command withemulator runs a command with one Firestore emulator for its
// whole duration, shared by everything the command starts:
//
//	go run ./internal/emulator/withemulator go test -race ./...
//
// The test command (./test) runs go test through it, so that the test
// binaries of every package use one emulator instead of each starting its
// own (a JVM start each, CPU-bound on a small machine). Every test client
// works in a Firestore project of its own, so sharing is safe.
//
// It starts the emulator unless FIRESTORE_EMULATOR_HOST is already set, sets
// the variable for the command, runs it, stops the emulator (its whole
// process group) and exits with the command's status. SIGINT and SIGTERM are
// passed on to the command; the emulator is stopped when the command ends.
// If the emulator cannot be started, the command runs without it, and the
// tests that need it start their own, or say why they cannot.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/baton-run/baton/internal/emulator"
)

const hostEnv = "FIRESTORE_EMULATOR_HOST"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: withemulator command [arg...]")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if os.Getenv(hostEnv) == "" {
		// Tests allow 30 s for a start of their own; a shared start is
		// worth waiting for longer, on a machine busy with builds.
		e, err := emulator.Start("", 2*time.Minute)
		if err != nil {
			fmt.Fprintf(os.Stderr, "withemulator: no shared Firestore emulator (%v); tests start their own\n", err)
		} else {
			defer e.Stop()
			os.Setenv(hostEnv, e.Addr)
			fmt.Fprintf(os.Stderr, "withemulator: Firestore emulator at %s (process group %d)\n", e.Addr, e.Pid())
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "withemulator: %v\n", err)
		return 1
	}
	go func() {
		for s := range sig {
			cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		if code := exit.ExitCode(); code > 0 {
			return code
		}
		return 1 // killed by a signal
	case err != nil:
		fmt.Fprintf(os.Stderr, "withemulator: %v\n", err)
		return 1
	}
	return 0
}
