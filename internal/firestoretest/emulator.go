package firestoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	hostEnv      = "FIRESTORE_EMULATOR_HOST"
	startTimeout = 30 * time.Second
	stopTimeout  = 5 * time.Second
)

// installHint tells a CI maintainer what the emulator needs.
const installHint = "install the emulator (gcloud components install cloud-firestore-emulator, " +
	"or the Debian package google-cloud-cli-firestore-emulator) and Java 17+, " +
	"or set " + hostEnv + " to a running emulator"

// emulatorHost returns the address of the emulator, starting one on first use.
var emulatorHost = sync.OnceValues(func() (string, error) {
	if addr := os.Getenv(hostEnv); addr != "" {
		return addr, nil
	}
	addr, err := startEmulator()
	if err != nil {
		return "", err
	}
	if err := os.Setenv(hostEnv, addr); err != nil {
		return "", err
	}
	return addr, nil
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

// Main runs the tests, stops the emulator this binary started, if any, and
// exits with the tests' exit code. On SIGINT or SIGTERM it stops the emulator
// and exits with code 1. Call it from TestMain.
func Main(m *testing.M) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		stopEmulator()
		fmt.Fprintf(os.Stderr, "firestoretest: %v\n", s)
		os.Exit(1)
	}()
	code := m.Run()
	stopEmulator()
	os.Exit(code)
}

// started is the emulator this binary started.
var started struct {
	sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	log    string        // path of the file holding its output
}

func startEmulator() (string, error) {
	if _, err := exec.LookPath("gcloud"); err != nil {
		return "", err
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := net.JoinHostPort("127.0.0.1", port)

	logFile, err := os.CreateTemp("", "firestore-emulator-*.log")
	if err != nil {
		return "", err
	}
	defer logFile.Close()
	cmd := exec.Command("gcloud", "emulators", "firestore", "start", "--host-port="+addr)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// gcloud starts a shell script that starts java; killing gcloud alone
	// leaves java running, so the emulator gets a process group to kill.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	started.Lock()
	started.cmd, started.exited, started.log = cmd, exited, logFile.Name()
	started.Unlock()

	if err := waitReady(addr, exited); err != nil {
		tail := logTail(logFile.Name())
		stopEmulator()
		return "", fmt.Errorf("%s: %w; its output ends:\n%s", strings.Join(cmd.Args, " "), err, tail)
	}
	return addr, nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// waitReady polls the emulator until it answers "Ok", it exits, or
// startTimeout passes.
func waitReady(addr string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			return errors.New("emulator exited")
		case <-ctx.Done():
			return fmt.Errorf("emulator not ready after %v", startTimeout)
		case <-tick.C:
		}
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(bytes.TrimSpace(body)) == "Ok" {
			return nil
		}
	}
}

// logTail returns the end of the emulator's log.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// stopEmulator kills the process group of the emulator this binary started:
// SIGTERM, then SIGKILL to whatever is left after stopTimeout.
func stopEmulator() {
	started.Lock()
	defer started.Unlock()
	if started.cmd == nil {
		return
	}
	pgid := started.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(stopTimeout)
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if groupAlive(pgid) {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	<-started.exited
	os.Remove(started.log)
	started.cmd = nil
}

// groupAlive reports whether a process of group pgid is still running.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}
