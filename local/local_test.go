package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
	"testing"
	"time"

	"github.com/baton-run/baton/functions"
	"github.com/baton-run/baton/internal/authtest"
	"github.com/baton-run/baton/internal/emulator"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/local/devserver"
)

// localProject is the project of the runner's defaults (devserver), which
// the Auth emulator's tokens must name.
const localProject = "baton-local"

// TestMain starts the Auth emulator the runners under test use in the
// background first: it comes up while TestStartAndInterrupt, the first
// test, starts the runner's own emulators.
func TestMain(m *testing.M) {
	authtest.Start(localProject)
	firestoretest.Main(m, authtest.Stop)
}

// startForTest runs the whole local system on a free port against the test
// emulator and stops it when the test ends.
func startForTest(t *testing.T) string {
	t.Helper()
	port, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return startInProcess(t, port, peering{})
}

// startInProcess runs the whole local system on port against the test
// emulators, with peer as go run ./local -peer, and stops it when the test
// ends.
func startInProcess(t *testing.T, port string, peer peering) string {
	t.Helper()
	firestoretest.NewClient(t) // the shared emulator, started or skipped as the harness decides
	authtest.Emulator(t, localProject)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logs := &runnerLogs{}
	t.Cleanup(func() { logs.report(t) })
	opts, stopNotes, err := demo(ctx, peer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopNotes)
	opts.Addr = net.JoinHostPort("127.0.0.1", port)
	opts.Logger = functions.NewLogger(logs)
	opts.Ready = func(url string) { ready <- url }
	go func() { done <- devserver.Run(ctx, opts) }()
	select {
	case url := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("local runner: %v", err)
			}
		})
		return url
	case err := <-done:
		cancel()
		t.Fatalf("local runner did not start: %v", err)
	}
	return ""
}

// runnerLogs keeps the runner's log lines of severity WARNING and above,
// which a failed test prints.
type runnerLogs struct {
	mu    sync.Mutex
	lines []string
}

func (l *runnerLogs) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"severity":"ERROR"`)) || bytes.Contains(p, []byte(`"severity":"WARNING"`)) {
		l.mu.Lock()
		l.lines = append(l.lines, string(bytes.TrimSpace(p)))
		l.mu.Unlock()
	}
	return len(p), nil
}

// report prints the kept lines if t failed.
func (l *runnerLogs) report(t *testing.T) {
	if !t.Failed() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		t.Log("runner: " + line)
	}
}

func TestServesPageAndFunctions(t *testing.T) {
	t.Parallel() // its own runner, beside the browser scenarios'
	url := startForTest(t)
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "<html") {
		t.Errorf("GET / = %d, want the demo page", resp.StatusCode)
	}
	resp, err = http.Get(url + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Model       string              `json:"model"`
		Agents      []string            `json:"agents"`
		Suggestions map[string][]string `json:"suggestions"`
		Auth        struct {
			Mode string `json:"mode"`
			SDK  string `json:"sdk"`
		} `json:"auth"`
	}
	json.NewDecoder(resp.Body).Decode(&cfg)
	resp.Body.Close()
	if !strings.Contains(cfg.Model, "offline") {
		t.Errorf("model = %q, want the offline model named as such", cfg.Model)
	}
	for _, name := range cfg.Agents {
		if len(cfg.Suggestions[name]) == 0 {
			t.Errorf("config.json suggests nothing for agent %s: %v", name, cfg.Suggestions)
		}
	}
	if len(cfg.Agents) == 0 {
		t.Error("config.json lists no agents")
	}
	if cfg.Auth.Mode != "firebase" || cfg.Auth.SDK == "" {
		t.Errorf("auth = %+v, want the Firebase Auth emulator and the SDK's location", cfg.Auth)
	}
	for _, file := range []string{"firebase-app.js", "firebase-auth.js"} {
		resp, err := http.Get(url + cfg.Auth.SDK + file)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
			t.Errorf("GET %s%s = %d %q, want the SDK's module", cfg.Auth.SDK, file, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	// Without a token, or with a development identity, a request is refused.
	req, _ := http.NewRequest(http.MethodGet, url+"/Pending?sessionId=s1&clientId=tab", nil)
	req.Header.Set("X-Baton-User", "local-user")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("Pending as X-Baton-User: %v %v, want 401 (development identity is off by default)", resp.StatusCode, err)
	}
	req, _ = http.NewRequest(http.MethodPost, url+"/Turn", strings.NewReader(`{"sessionId":"s1","clientId":"tab","text":"what is 12*7?"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	// Signed in to the Auth emulator as a script would, not as a development
	// identity: that is off by default.
	req.Header.Set("Authorization", "Bearer "+authtest.SignUp(t, os.Getenv(authtest.HostEnv)).IDToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "12*7 = 84") {
		t.Errorf("Turn = %d %s, want the calculator's answer", resp.StatusCode, body)
	}

	// A2A: the agent card below /A2A, and a message through JSON-RPC.
	resp, err = http.Get(url + "/A2A/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		URL             string                     `json:"url"`
		Skills          []map[string]any           `json:"skills"`
		SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
	}
	json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	if resp.StatusCode != 200 || card.URL != url+"/A2A" || len(card.Skills) == 0 || card.SecuritySchemes["bearer"] == nil {
		t.Errorf("agent card = %d %+v, want skills, a bearer scheme and the URL %s/A2A", resp.StatusCode, card, url)
	}
	req, _ = http.NewRequest(http.MethodPost, url+"/A2A", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/send",`+
		`"params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"what is 12*7?"}]}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+authtest.SignUp(t, os.Getenv(authtest.HostEnv)).IDToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"completed"`) || !strings.Contains(string(body), "12*7 = 84") {
		t.Errorf("A2A message/send = %d %s, want a completed task with the calculator's answer", resp.StatusCode, body)
	}
}

// TestStartAndInterrupt builds the runner, starts it with its own
// emulators (Firestore and Auth), interrupts it as Ctrl-C does, and checks
// that it exits cleanly and leaves no emulator process behind.
func TestStartAndInterrupt(t *testing.T) {
	// Not parallel, and first: starting both emulators is CPU-bound, and
	// next to the browser scenarios the Auth emulator overran its start
	// timeout on the loaded 2-core machine. Beside it, only the tests' own
	// Auth emulator starts (TestMain).
	err := emulator.Check()
	if _, errNode := exec.LookPath("node"); err == nil && errNode != nil {
		err = fmt.Errorf("%w: %w; %s", emulator.ErrAuthMissing, errNode, emulator.AuthInstallHint)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v: %s", err, emulator.InstallHint)
		}
		t.Skip(err)
	}
	bin, err := buildRunner() // the binary TestKillAtToolInput runs too: built once
	if err != nil {
		t.Fatal(err)
	}
	port, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(withoutEnv(os.Environ(), "FIRESTORE_EMULATOR_HOST", authtest.HostEnv, "BATON_DEV_IDENTITY",
		"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"), "PORT="+port)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	emulatorPID, emulatorAddr, authPID := 0, "", 0
	var said []string // what the runner wrote, shown if it did not start
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		said = append(said, lines.Text())
		var rec map[string]any
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec["message"] == "emulator started" {
			emulatorPID = int(rec["pid"].(float64))
			emulatorAddr, _ = rec["addr"].(string)
		}
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec["message"] == "auth emulator started" {
			authPID = int(rec["pid"].(float64))
		}
		if strings.Contains(lines.Text(), "Baton is running at") {
			break
		}
	}
	t.Logf("started in %s (emulator included)", time.Since(start).Round(time.Millisecond))
	if emulatorPID == 0 || authPID == 0 {
		t.Fatalf("the runner did not report starting both emulators (Firestore pid %d, Auth pid %d); it wrote:\n%s",
			emulatorPID, authPID, strings.Join(said, "\n"))
	}
	if resp, err := http.Get("http://127.0.0.1:" + port + "/"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET / after start: %v", err)
	}
	go io.Copy(io.Discard, stderr)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after Ctrl-C: %v, want status 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the runner did not exit within 30 s of Ctrl-C")
	}
	for _, pid := range []int{emulatorPID, authPID} {
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("emulator process group %d still has processes (kill -0: %v)", pid, err)
		}
	}
	_, emulatorPort, _ := net.SplitHostPort(emulatorAddr)
	out, _ := exec.Command("ps", "-eo", "pid,args").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "CloudFirestore") && strings.Contains(line, "--port="+emulatorPort) {
			t.Errorf("java left behind: %s", line)
		}
	}
}

// TestDevIdentityByHand: with BATON_DEV_IDENTITY=true (for scripts, and
// what the runner falls back to without Node.js) the page is told so and
// X-Baton-User names the user.
func TestDevIdentityByHand(t *testing.T) {
	t.Setenv("BATON_DEV_IDENTITY", "true")
	url := startForTest(t)
	resp, err := http.Get(url + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Auth struct {
			Mode string `json:"mode"`
		} `json:"auth"`
	}
	json.NewDecoder(resp.Body).Decode(&cfg)
	resp.Body.Close()
	if cfg.Auth.Mode != "dev" {
		t.Errorf("auth mode = %q, want dev", cfg.Auth.Mode)
	}
	req, _ := http.NewRequest(http.MethodGet, url+"/Pending?sessionId=s1&clientId=tab", nil)
	req.Header.Set("X-Baton-User", "local-user")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("Pending as X-Baton-User = %d, want 404 (accepted; no such session)", resp.StatusCode)
	}
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
