package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/sumdb/note"

	"github.com/baton-run/baton/internal/firestoretest"
)

func TestMain(m *testing.M) { firestoretest.Main(m) }

// userAgent is the agent of the throwaway module: a Go tool, a browser tool
// and an approval tool, on a scripted model with no memory (each step is
// chosen from the request), so that any process serving any function
// answers alike.
const userAgent = `package agent

import (
	"context"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

type sum struct{ A, B int }
type color struct{}
type email struct{ To string ` + "`json:\"to\"`" + ` }

func New(ctx context.Context) (agent.Agent, error) {
	add, err := functiontool.New(functiontool.Config{Name: "add", Description: "adds"},
		func(_ agent.Context, s sum) (map[string]any, error) { return map[string]any{"sum": s.A + s.B}, nil })
	if err != nil {
		return nil, err
	}
	pick, err := toolcallback.Browser[color](toolcallback.BrowserConfig{Name: "pick_color", Description: "asks the page"})
	if err != nil {
		return nil, err
	}
	send, err := toolcallback.Approval(toolcallback.ApprovalConfig[email]{Name: "send_email", Description: "needs a yes"},
		func(_ agent.Context, e email) (map[string]any, error) { return map[string]any{"sent": e.To}, nil })
	if err != nil {
		return nil, err
	}
	return llmagent.New(llmagent.Config{Name: "mine", Description: "my own agent", Model: &modeltest.Strict{Repeat: step},
		Tools: []tool.Tool{add, pick, send}})
}

// step calls the tools in turn, then says what they answered.
func step(req *model.LLMRequest) *genai.Content {
	answered := map[string]any{}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				answered[p.FunctionResponse.Name] = p.FunctionResponse.Response
			}
		}
	}
	switch {
	case answered["add"] == nil:
		return modeltest.CallReply(modeltest.Call("", "add", map[string]any{"A": 2, "B": 3}))(req)
	case answered["pick_color"] == nil:
		return modeltest.CallReply(modeltest.Call("", "pick_color", nil))(req)
	case answered["send_email"] == nil:
		return modeltest.CallReply(modeltest.Call("", "send_email", map[string]any{"to": "ada@example.com"}))(req)
	}
	return modeltest.EchoReply(req)
}
`

// userMain is the ten-line main of docs/own-agent.md.
const userMain = `package main

import (
	"example.com/myagent/agent"
	"github.com/baton-run/baton/local/devserver"
)

func main() { devserver.Main(&devserver.Options{Agent: agent.New}) }
`

// offlineEnv is the environment of every go command here: modules from the
// module cache only (the checkout's go.sum names them all), their sums
// taken from it unchecked (no checksum database to reach), no workspace,
// and go.mod and go.sum read-only as by default, as for a user. -trimpath keeps the temporary directory out of the build cache's keys, so
// Baton's packages compiled for one test are reused by the next.
func offlineEnv() []string {
	return append(os.Environ(), "GOPROXY=off", "GOFLAGS=-trimpath", "GOWORK=off", "GOTOOLCHAIN=local", "GOSUMDB=off")
}

// userModule writes a module of a user's own outside the repository,
// which requires Baton through a replace to this checkout, with its agent
// package and files, and go.mod and go.sum as go mod tidy writes them (from
// the module cache: Baton's go.sum names every module its packages need),
// and returns its directory.
func userModule(t *testing.T, files map[string]string) string {
	t.Helper()
	checkout, err := findModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	all := map[string]string{
		"go.mod": "module example.com/myagent\n\ngo 1.26.5\n\nrequire github.com/baton-run/baton v0.0.0-00010101000000-000000000000\n\n" +
			"replace github.com/baton-run/baton => " + checkout + "\n",
		"agent/agent.go": userAgent,
		"README.md":      "mine\n",
	}
	for k, v := range files {
		all[k] = v
	}
	writeFiles(t, dir, all)
	goIn(t, dir, "mod", "tidy")
	return dir
}

func goIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = offlineEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// packageCmd runs the packager as a user does, from their module, with env
// over offlineEnv, and returns its exit error and output.
func packageCmd(dir string, env []string, args ...string) (error, string) {
	cmd := exec.Command("go", append([]string{"run", "github.com/baton-run/baton/infra/package"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(offlineEnv(), env...)
	out, err := cmd.CombinedOutput()
	return err, string(out)
}

// TestUserModule packages a user's module whose only package is the agent
// (no main: its go.sum, as go mod tidy writes it, lacks what Baton's
// functions import) with the packager run from it, unpacks the archive
// into an empty directory, builds it offline with a main like the
// buildpack's and -mod=readonly (the archive's go.mod and go.sum are
// complete), serves every function from the binary against the emulator,
// and completes a turn that uses the Go tool, the browser tool and the
// approval tool. The user's go.mod and go.sum are left as they were.
func TestUserModule(t *testing.T) {
	firestoretest.NewClient(t) // the emulator, started or skipped as the harness decides
	start := time.Now()
	dir := userModule(t, nil)
	before := readFiles(t, dir, "go.mod", "go.sum")
	out := filepath.Join(t.TempDir(), "baton.zip")
	if err, log := packageCmd(dir, nil, "-agent", "example.com/myagent/agent", "-out", out); err != nil {
		t.Fatalf("package: %v\n%s", err, log)
	}
	if diff := cmp.Diff(before, readFiles(t, dir, "go.mod", "go.sum")); diff != "" {
		t.Errorf("packaging changed the user's files (-before +after):\n%s", diff)
	}
	t.Logf("packaged in %s", time.Since(start).Round(time.Millisecond))
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// Reproducible: packaging again (in this process, without the build
	// check) gives the same bytes.
	for _, kv := range offlineEnv()[len(os.Environ()):] {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	again, _, err := build(Options{ModuleRoot: dir, Agent: "example.com/myagent/agent"})
	if err != nil {
		t.Fatalf("build() again: %v", err)
	}
	if !bytes.Equal(again, data) {
		t.Errorf("packaging the same module twice gave different archives")
	}
	names := archiveNames(t, data)
	for _, name := range names {
		// Of the Baton checkout, only the packages the build needs: not
		// the browser scenarios (whose screenshots change while ./local's
		// tests run), the docs, tests, or root files but go.mod.
		if rest, ok := strings.CutPrefix(name, "_modules/github.com/baton-run/baton/"); ok &&
			(strings.HasPrefix(rest, "local/e2e/") || strings.HasPrefix(rest, "docs/") || strings.HasSuffix(rest, "_test.go") ||
				!strings.Contains(rest, "/") && rest != "go.mod") {
			t.Errorf("archive holds %s, which no package the build needs reads", name)
		}
	}
	for _, want := range []string{"go.mod", "go.sum", "agent/agent.go", agentFile,
		"_modules/github.com/baton-run/baton/go.mod", "_modules/github.com/baton-run/baton/functions/register.go"} {
		if !contains(names, want) {
			t.Errorf("archive lacks %s", want)
		}
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "_modules/github.com/baton-run/baton/local/web/node_modules/") {
			t.Errorf("archive holds %s", name)
		}
	}
	if gomod := readEntry(t, data, "go.mod"); !strings.Contains(gomod, "github.com/baton-run/baton => ./_modules/github.com/baton-run/baton") {
		t.Errorf("archive go.mod does not replace Baton with its copy:\n%s", gomod)
	}

	unpacked := t.TempDir()
	unzip(t, data, unpacked)
	writeFiles(t, unpacked, map[string]string{"buildpackmain/main.go": strings.Replace(buildpackMain,
		`_ "github.com/baton-run/baton"`, `_ "example.com/myagent"`, 1)})
	bin := filepath.Join(t.TempDir(), "server")
	goIn(t, unpacked, "build", "-trimpath", "-mod=readonly", "-o", bin, "./buildpackmain") // -trimpath: the packager's check compiled the same
	t.Logf("built in %s", time.Since(start).Round(time.Millisecond))

	base := serveAll(t, bin)
	turn := postJSON(t, base+"/Turn", map[string]any{"sessionId": "s1", "clientId": "tab", "text": "go"})
	browser := chunk(t, turn, "tool-input-available", "pick_color")
	resumed := postJSON(t, base+"/ToolResult", map[string]any{"sessionId": "s1", "clientId": "tab",
		"toolCallId": browser["toolCallId"], "output": map[string]any{"color": "teal"}})
	approval := chunk(t, resumed, "tool-approval-request", "")
	done := postJSON(t, base+"/ToolResult", map[string]any{"sessionId": "s1", "clientId": "tab",
		"toolCallId": approval["approvalId"], "approved": true})
	final := ""
	for _, c := range done {
		if c["type"] == "text-delta" {
			final += fmt.Sprint(c["delta"])
		}
	}
	for _, want := range []string{`send_email={"sent":"ada@example.com"}`} {
		if !strings.Contains(final, want) {
			t.Errorf("final text %q does not contain %q", final, want)
		}
	}
	if !strings.Contains(fmt.Sprint(turn), "sum:5") {
		t.Errorf("turn chunks %v do not hold the Go tool's answer", turn)
	}
	t.Logf("whole test %s", time.Since(start).Round(time.Millisecond))
}

// TestUserModuleWithMain: a module with the ten-line main of
// docs/own-agent.md is packaged with its main, which the packager's check
// builds.
func TestUserModuleWithMain(t *testing.T) {
	dir := userModule(t, map[string]string{"local/main.go": userMain})
	out := filepath.Join(t.TempDir(), "baton.zip")
	if err, log := packageCmd(dir, nil, "-agent", "example.com/myagent/agent", "-out", out); err != nil {
		t.Fatalf("package: %v\n%s", err, log)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if names := archiveNames(t, data); !contains(names, "local/main.go") {
		t.Errorf("archive lacks local/main.go: %v", names)
	}
}

// readFiles returns the content of the named files of dir.
func readFiles(t *testing.T, dir string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// serveAll starts the built binary serving every function (no
// FUNCTION_TARGET: each at /{Name}) on the test emulator, in development
// identity, and returns its base URL once it answers.
func serveAll(t *testing.T, bin string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PORT=" + port,
		"GOOGLE_CLOUD_PROJECT=test-usermodule-" + fmt.Sprint(time.Now().UnixNano()),
		"FIRESTORE_EMULATOR_HOST=" + os.Getenv("FIRESTORE_EMULATOR_HOST"), "BATON_DEV_IDENTITY=true"}
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("server log:\n%s", stderr.String())
		}
	})
	base := "http://127.0.0.1:" + port
	if _, _, err := firstAnswer(t.Context(), base+"/Pending", exited); err != nil {
		t.Fatalf("server: %v", err)
	}
	return base
}

// postJSON posts body as user ada and returns the turn's chunks, from the
// JSON form of the stream.
func postJSON(t *testing.T, url string, body any) []map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Baton-User", "ada")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var doc struct {
		Chunks []map[string]any `json:"chunks"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &doc) != nil {
		t.Fatalf("POST %s = %d %s", url, resp.StatusCode, raw)
	}
	return doc.Chunks
}

// chunk returns the first chunk of a type (and tool, if named).
func chunk(t *testing.T, chunks []map[string]any, typ, tool string) map[string]any {
	t.Helper()
	for _, c := range chunks {
		if c["type"] == typ && (tool == "" || c["toolName"] == tool) {
			return c
		}
	}
	t.Fatalf("no %s chunk for %q in %v", typ, tool, chunks)
	return nil
}

// unreachableSumDB is a GOSUMDB value naming a checksum database of a key
// made for this run, at an address that refuses connections. The module
// cache keeps what sum.golang.org answered earlier, so naming that one
// here would let a used cache verify offline; nothing is ever cached for
// this one.
func unreachableSumDB(t *testing.T) string {
	t.Helper()
	_, verifier, err := note.GenerateKey(rand.Reader, "sumdb.baton-test.invalid")
	if err != nil {
		t.Fatal(err)
	}
	return verifier + " http://127.0.0.1:9"
}

// TestUserModuleRefuses: run from a user's module, the packager exits
// non-zero with a message that says what is wrong, and writes no archive,
// for an agent that does not exist, one with neither New nor Team, a tree
// that does not build, and sums that go.sum lacks and the go command
// cannot check (a checksum database that refuses connections).
func TestUserModuleRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		args  []string
		env   []string
		want  string
	}{{
		name: "no -agent",
		want: "no agent package: pass -agent",
	}, {
		name: "agent does not exist",
		args: []string{"-agent", "example.com/myagent/nothere"},
		want: "agent package example.com/myagent/nothere does not exist",
	}, {
		name:  "neither New nor Team",
		files: map[string]string{"helper/helper.go": "package helper\n\nfunc Make() {}\n"},
		args:  []string{"-agent", "example.com/myagent/helper"},
		want:  "declares neither func New",
	}, {
		name:  "does not build",
		files: map[string]string{"agent/broken.go": "package agent\n\nvar broken int = \"not a number\"\n"},
		args:  []string{"-agent", "example.com/myagent/agent"},
		want:  "the archive does not build",
	}, {
		name: "sums not to be had",
		args: []string{"-agent", "example.com/myagent/agent"},
		env:  []string{"GOSUMDB=" + unreachableSumDB(t)},
		want: "package again with network access",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := userModule(t, tc.files)
			before := readFiles(t, dir, "go.mod", "go.sum")
			out := filepath.Join(t.TempDir(), "baton.zip")
			err, log := packageCmd(dir, tc.env, append(tc.args, "-out", out)...)
			if err == nil || !strings.Contains(log, tc.want) {
				t.Errorf("package %v: %v, output:\n%s\nwant a failure saying %q", tc.args, err, log, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("package %v left an archive (stat: %v)", tc.args, err)
			}
			if diff := cmp.Diff(before, readFiles(t, dir, "go.mod", "go.sum")); diff != "" {
				t.Errorf("package %v changed the user's files (-before +after):\n%s", tc.args, diff)
			}
		})
	}
}
