// Package emulator starts and stops the Firestore emulator and the Firebase
// Auth emulator for the test harnesses and the local runner.
//
// Each emulator runs in its own process group: gcloud starts a shell script
// that starts java, and killing gcloud alone would leave java running, so
// Stop kills the whole group (SIGTERM, then SIGKILL after a grace period).
//
// The Auth emulator is the one of npm's firebase-tools, pinned with the
// Firebase JS SDK in firebase/package-lock.json; see [StartAuth].
package emulator

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
	"strings"
	"sync"
	"syscall"
	"time"
)

// InstallHint says what the emulator needs, for error messages.
const InstallHint = "install the Google Cloud CLI with the Firestore emulator " +
	"(Debian package google-cloud-cli-firestore-emulator, or gcloud components install cloud-firestore-emulator) and Java 17+, " +
	"or set FIRESTORE_EMULATOR_HOST to a running emulator"

// ErrMissing reports that gcloud, the emulator component or Java is not
// installed.
var ErrMissing = errors.New("firestore emulator not installed")

const stopGrace = 5 * time.Second

// Emulator is a running emulator this process started.
type Emulator struct {
	// Addr is host:port, the value for FIRESTORE_EMULATOR_HOST.
	Addr string

	pid    int
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// Check reports whether the emulator can be started here, wrapping
// ErrMissing with what is absent.
func Check() error {
	if _, err := exec.LookPath("gcloud"); err != nil {
		return fmt.Errorf("%w: gcloud not found on PATH", ErrMissing)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("%w: java not found on PATH", ErrMissing)
	}
	return nil
}

// Start starts an emulator on addr (host:port; a free port on 127.0.0.1
// when empty) and waits until it answers, at most timeout.
func Start(addr string, timeout time.Duration) (*Emulator, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if addr == "" {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	cmd := exec.Command("gcloud", "emulators", "firestore", "start", "--host-port="+addr)
	e, tail, err := start(cmd, addr, "firestore-emulator", timeout, firestoreReady)
	if err != nil {
		if strings.Contains(tail, "component") || strings.Contains(tail, "not installed") || strings.Contains(tail, "java") {
			err = fmt.Errorf("%w: %w", ErrMissing, err)
		}
		return nil, fmt.Errorf("%s: %w; its output ends:\n%s", strings.Join(cmd.Args, " "), err, tail)
	}
	return e, nil
}

// start runs cmd in a process group of its own, its output in a temporary
// log file named after name, and waits until the emulator at addr answers
// as ready says, at most timeout. On failure the emulator is stopped and
// the end of its log returned with the error.
func start(cmd *exec.Cmd, addr, name string, timeout time.Duration, ready func([]byte) bool) (*Emulator, string, error) {
	logFile, err := os.CreateTemp("", name+"-*.log")
	if err != nil {
		return nil, "", err
	}
	defer logFile.Close()
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	e := &Emulator{Addr: addr, pid: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{}), log: logFile.Name()}
	go func() {
		cmd.Wait()
		close(e.exited)
	}()
	if err := waitReady(addr, e.exited, timeout, ready); err != nil {
		tail := logTail(e.log)
		e.Stop()
		return nil, tail, err
	}
	return e, "", nil
}

// Pid is the process group id of the emulator (gcloud's pid).
func (e *Emulator) Pid() int { return e.pid }

// Stop kills the emulator's process group and waits for it. It is safe to
// call more than once.
func (e *Emulator) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd == nil {
		return
	}
	pgid := e.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(stopGrace)
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if groupAlive(pgid) {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	<-e.exited
	os.Remove(e.log)
	e.cmd = nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// firestoreReady reports whether the Firestore emulator's answer to GET /
// says it is ready.
func firestoreReady(body []byte) bool { return string(bytes.TrimSpace(body)) == "Ok" }

// waitReady polls GET / on the emulator until ready accepts its answer, the
// emulator exits, or timeout passes.
func waitReady(addr string, exited <-chan struct{}, timeout time.Duration, ready func(body []byte) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			return errors.New("emulator exited")
		case <-ctx.Done():
			return fmt.Errorf("emulator not ready after %v", timeout)
		case <-tick.C:
		}
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ready(body) {
			return nil
		}
	}
}

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

// groupAlive reports whether a process of group pgid is still running.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
