package emulator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// firebaseFiles is the npm project that pins firebase-tools (whose Auth
// emulator tests and the local runner start) and the firebase JS SDK (whose
// browser builds the demo page loads), and the script that starts the
// emulator.
//
//go:embed firebase/package.json firebase/package-lock.json firebase/auth-emulator.cjs
var firebaseFiles embed.FS

// AuthInstallHint says what the Auth emulator needs, for error messages.
const AuthInstallHint = "install Node.js 20+ and npm (Debian: apt-get install -y nodejs npm); " +
	"the Firebase Auth emulator (npm firebase-tools, pinned in internal/emulator/firebase/package-lock.json) " +
	"is then installed with npm ci on first use"

// ErrAuthMissing reports that node or npm is not installed, so the Auth
// emulator cannot run.
var ErrAuthMissing = errors.New("firebase auth emulator cannot run")

// npmInstallTimeout bounds npm ci: about two minutes on the 2-core
// development machine.
const npmInstallTimeout = 10 * time.Minute

// FirebaseModules returns the directory of the npm project in
// firebase/package.json, with its node_modules installed by npm ci at the
// versions of its lockfile. The first call on a machine installs them (about
// two minutes and 300 MB, from the npm registry) into the user's cache
// directory, in a folder named after the package files' hash, so an
// updated lockfile installs afresh; progress, if not nil, is told before.
// The launcher, auth-emulator.cjs, is written there whenever it changed.
// Concurrent callers, in this process or others, wait for one install.
func FirebaseModules(progress func(msg string)) (string, error) {
	hash := sha256.New()
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := firebaseFiles.ReadFile("firebase/" + name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(hash, "%s %d\n", name, len(b))
		hash.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("firebase modules: %w", err)
	}
	parent := filepath.Join(cache, "baton")
	dir := filepath.Join(parent, "firebase-"+hex.EncodeToString(hash.Sum(nil))[:16])
	if installed(dir) {
		return dir, writeLauncher(dir)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("firebase modules: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(parent, "firebase.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("firebase modules: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("firebase modules: lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if installed(dir) { // another process installed them while this one waited
		return dir, writeLauncher(dir)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("%w: npm not found on PATH (needed once, to install firebase-tools)", ErrAuthMissing)
	}
	if progress != nil {
		progress(fmt.Sprintf("installing the Firebase Auth emulator and JS SDK with npm ci into %s (once per lockfile: about two minutes)", dir))
	}
	tmp, err := os.MkdirTemp(parent, "install-")
	if err != nil {
		return "", fmt.Errorf("firebase modules: %w", err)
	}
	defer os.RemoveAll(tmp)
	files, err := fs.Sub(firebaseFiles, "firebase")
	if err != nil {
		return "", err
	}
	if err := os.CopyFS(tmp, files); err != nil {
		return "", fmt.Errorf("firebase modules: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), npmInstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci in %s: %w\n%s", tmp, err, tail(out))
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("firebase modules: %w", err)
	}
	return dir, nil
}

// writeLauncher puts this build's auth-emulator.cjs into dir unless it is
// there: the install is named after the packages only, so a changed
// launcher needs no new install. The file is replaced whole (a rename), so
// a node process starting meanwhile reads one version or the other.
func writeLauncher(dir string) error {
	want, err := firebaseFiles.ReadFile("firebase/auth-emulator.cjs")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "auth-emulator.cjs")
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, want) {
		return nil
	}
	tmp, err := os.CreateTemp(dir, "auth-emulator-*.cjs")
	if err != nil {
		return fmt.Errorf("firebase modules: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if _, err := tmp.Write(want); err != nil {
		tmp.Close()
		return fmt.Errorf("firebase modules: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("firebase modules: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("firebase modules: %w", err)
	}
	return nil
}

// installed reports whether dir holds a finished install (it is renamed into
// place only once npm ci has succeeded).
func installed(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "node_modules", "firebase-tools", "package.json"))
	return err == nil
}

// StartAuth starts the Firebase Auth emulator on a free port of 127.0.0.1
// and waits until it answers, at most timeout (it takes about 1.5 s of CPU to
// start). The ID tokens it issues to clients signing in with an API key
// name project as their audience. It installs firebase-tools first if needed
// (see [FirebaseModules]; progress is told). Without node or npm the error
// wraps [ErrAuthMissing].
//
// It runs firebase/auth-emulator.cjs, which serves the emulator's HTTP app
// without the firebase CLI, so nothing is fetched from the network.
func StartAuth(project string, timeout time.Duration, progress func(msg string)) (*Emulator, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("%w: node not found on PATH", ErrAuthMissing)
	}
	dir, err := FirebaseModules(progress)
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", port)
	cmd := exec.Command(node, "auth-emulator.cjs", "127.0.0.1", port, project)
	cmd.Dir = dir
	e, tail, err := start(cmd, addr, "auth-emulator", timeout, authReady)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; its output ends:\n%s", strings.Join(cmd.Args, " "), err, tail)
	}
	return e, nil
}

// authReady reports whether the Auth emulator's answer to GET / says it is
// ready: {"authEmulator": {"ready": true, ...}}.
func authReady(body []byte) bool {
	var v struct {
		AuthEmulator struct {
			Ready bool `json:"ready"`
		} `json:"authEmulator"`
	}
	return json.Unmarshal(body, &v) == nil && v.AuthEmulator.Ready
}

// tail returns the end of a command's output, for error messages.
func tail(out []byte) string {
	const max = 2000
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return string(out)
}
