package main

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
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

	// The buildpack's main imports funcframework; importing it here keeps
	// its module (and what it imports) in go.sum and in the module cache
	// that the offline build below relies on.
	_ "github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	"github.com/baton-run/baton/functions"
)

const testAgent = "github.com/baton-run/baton/infra/package/testagent"

// writeFiles creates files (slash paths relative to dir) with the given
// contents.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeModule is a small module with one of everything the packager must
// keep, move, follow or leave out.
func fakeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod":    "module github.com/baton-run/baton\n\ngo 1.26.0\n",
		"go.sum":    "",
		"README.md": "not code\n",
		"cover.out": "test output\n",
		".git/HEAD": "ref: refs/heads/main\n",

		"functions/register.go":      "package functions\n\nfunc UseAgent(any) {}\n",
		"functions/register_test.go": "package functions\n",
		"functions/page.html":        "<p>embedded</p>\n",
		"functions/static/app.js":    "// embedded\n",
		"functions/testdata/in.json": "{}\n",

		"sessionstore/store.go":          "package sessionstore\n",
		"sessionstore/store_test.go":     "package sessionstore\n",
		"sessionstore/testdata/x.json":   "{}\n",
		"sessionstore/schema/fields.txt": "scope\n",
		"internal/helper/helper.go":      "package helper\n",
		"node_modules/left-pad/index.js": "module.exports = 0\n",
		"web/node_modules/x/index.js":    "module.exports = 0\n",
		"nested/go.mod":                  "module example.com/nested\n",
		"nested/nested.go":               "package nested\n",
		"_scratch/scratch.go":            "package scratch\n",

		"local/main.go":                 "package main\n\nimport _ \"github.com/baton-run/baton/functions\"\n",
		"local/agent/agent.go":          "package agent\n\nimport (\n\t_ \"github.com/baton-run/baton/local/prompts\"\n\t_ \"github.com/baton-run/baton/sessionstore\"\n\t_ \"fmt\"\n)\n\nfunc New() {}\n",
		"local/agent/agent_test.go":     "package agent\n",
		"local/prompts/prompts.go":      "package prompts\n",
		"local/prompts/system.txt":      "You are Baton.\n",
		"local/unused/unused.go":        "package unused\n",
		"infra/package/main.go":         "package main\n",
		"infra/terraform/main.tf":       "",
		"infra/terraform/baton.tfstate": "",
	})
	return dir
}

func archiveNames(t *testing.T, data []byte) []string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, "/") {
			names = append(names, f.Name)
		}
	}
	return names
}

func TestArchiveLayout(t *testing.T) {
	dir := fakeModule(t)
	data, _, err := build(Options{ModuleRoot: dir, Agent: "github.com/baton-run/baton/local/agent"})
	if err != nil {
		t.Fatalf("build() error = %v", err)
	}
	want := []string{
		"go.mod",
		"go.sum",
		"internal/helper/helper.go",
		"local/agent/agent.go",
		"local/prompts/prompts.go",
		"local/prompts/system.txt",
		"page.html",
		"register.go",
		"sessionstore/schema/fields.txt",
		"sessionstore/store.go",
		"static/app.js",
		"zz_agent.go",
	}
	if diff := cmp.Diff(want, archiveNames(t, data)); diff != "" {
		t.Errorf("archive files (-want +got):\n%s", diff)
	}
	// Nothing of the machine that built it: fixed time, fixed modes.
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		wantMode := os.FileMode(0o644)
		if strings.HasSuffix(f.Name, "/") {
			wantMode = os.ModeDir | 0o755
		}
		if !f.Modified.Equal(modTime) || f.Mode() != wantMode {
			t.Errorf("%s: modified %v, mode %v; want %v, %v", f.Name, f.Modified, f.Mode(), modTime, wantMode)
		}
	}
}

func readEntry(t *testing.T, data []byte, name string) string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := zr.Open(name)
	if err != nil {
		t.Fatalf("archive entry %s: %v", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestArchiveAgentFile(t *testing.T) {
	dir := fakeModule(t)
	data, _, err := build(Options{ModuleRoot: dir, Agent: "github.com/baton-run/baton/local/agent"})
	if err != nil {
		t.Fatalf("build() error = %v", err)
	}
	got := readEntry(t, data, agentFile)
	for _, want := range []string{"package functions\n", `import batonagent "github.com/baton-run/baton/local/agent"`, "UseAgent(batonagent.New)"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s does not contain %q:\n%s", agentFile, want, got)
		}
	}
}

// The archive's bytes depend on the deployed sources only: equal inputs
// give equal archives (whatever the files' times), tests and other
// non-deployed files do not count, and a change to deployed code does.
func TestArchiveDeterministic(t *testing.T) {
	dir := fakeModule(t)
	opts := Options{ModuleRoot: dir, Agent: "github.com/baton-run/baton/local/agent"}
	touch := func(name, body string) {
		t.Helper()
		writeFiles(t, dir, map[string]string{name: body})
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(name)), later, later); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		file    string
		body    string
		changes bool
	}{
		{name: "same content, new time", file: "sessionstore/store.go", body: "package sessionstore\n", changes: false},
		{name: "test file", file: "sessionstore/store_test.go", body: "package sessionstore\n\n// changed\n", changes: false},
		{name: "functions test file", file: "functions/register_test.go", body: "package functions\n\n// changed\n", changes: false},
		{name: "README", file: "README.md", body: "changed\n", changes: false},
		{name: "infra", file: "infra/package/main.go", body: "package main\n\n// changed\n", changes: false},
		{name: "local outside the agent", file: "local/unused/unused.go", body: "package unused\n\n// changed\n", changes: false},
		{name: "agent dependency", file: "local/prompts/system.txt", body: "You are Baton, changed.\n", changes: true},
		{name: "functions", file: "functions/register.go", body: "package functions\n\nfunc UseAgent(any) {} // changed\n", changes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _, err := build(opts)
			if err != nil {
				t.Fatalf("build() error = %v", err)
			}
			touch(tc.file, tc.body)
			after, _, err := build(opts)
			if err != nil {
				t.Fatalf("build() error = %v", err)
			}
			if changed := !bytes.Equal(before, after); changed != tc.changes {
				t.Errorf("after writing %s: archive changed = %v, want %v", tc.file, changed, tc.changes)
			}
		})
	}
}

func TestArchiveRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		agent string
		want  string
	}{
		{
			name:  "agent imports functions",
			files: map[string]string{"local/agent/agent.go": "package agent\n\nimport _ \"github.com/baton-run/baton/functions\"\n"},
			agent: "github.com/baton-run/baton/local/agent",
			want:  "functions/ moves to the root",
		},
		{
			name:  "a package imports functions",
			files: map[string]string{"internal/helper/bad.go": "package helper\n\nimport _ \"github.com/baton-run/baton/functions\"\n"},
			agent: "github.com/baton-run/baton/local/agent",
			want:  "nothing may import the functions package",
		},
		{
			name:  "package under functions",
			files: map[string]string{"functions/sub/sub.go": "package sub\n"},
			agent: "github.com/baton-run/baton/local/agent",
			want:  "packages under functions/ are not supported",
		},
		{
			name:  "missing agent",
			agent: "github.com/baton-run/baton/local/nothere",
			want:  "local/nothere",
		},
		{
			name:  "agent is functions",
			agent: "github.com/baton-run/baton/functions",
			want:  "cannot be the functions package",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeModule(t)
			writeFiles(t, dir, tc.files)
			_, _, err := build(Options{ModuleRoot: dir, Agent: tc.agent})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("build() error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// buildpackMain is the kind of main the Go functions buildpack generates:
// a blank import of the root package, whose init registers the functions,
// and funcframework.Start, which serves FUNCTION_TARGET.
const buildpackMain = `package main

import (
	"log"
	"os"

	_ "github.com/baton-run/baton"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	if err := funcframework.Start(port); err != nil {
		log.Fatalf("funcframework.Start: %v", err)
	}
}
`

// TestArchiveBuilds packages this module, unpacks it, adds the buildpack's
// kind of main and builds and vets it offline, from the module cache only.
// Then it starts the binary once per registered function, as Cloud Run
// would with FUNCTION_TARGET, and checks each answers a request from its
// own handler, which needs the generated agent registration.
func TestArchiveBuilds(t *testing.T) {
	root, err := findModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, agent string }{
		{name: "default agent", agent: defaultAgent},
		{name: "test agent", agent: testAgent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := strings.TrimPrefix(tc.agent, "github.com/baton-run/baton/")
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); errors.Is(err, os.ErrNotExist) {
				if os.Getenv("CI") == "true" {
					t.Fatalf("agent package %s does not exist: the default deployment cannot build", tc.agent)
				}
				t.Skipf("agent package %s does not exist yet", tc.agent)
			}
			data, _, err := build(Options{ModuleRoot: root, Agent: tc.agent})
			if err != nil {
				t.Fatalf("build() error = %v", err)
			}
			dir := t.TempDir()
			unzip(t, data, dir)
			writeFiles(t, dir, map[string]string{"buildpackmain/main.go": buildpackMain})

			bin := filepath.Join(t.TempDir(), "server")
			// vet type-checks every package of the archive, and the binary
			// compiles what it imports: a go build ./... before them took
			// 5 s more and checked nothing they do not.
			goCmd(t, dir, "vet", "./...")
			goCmd(t, dir, "build", "-o", bin, "./buildpackmain")
			for _, name := range functions.Names {
				t.Run(name, func(t *testing.T) { serveOnce(t, bin, name) })
			}
		})
	}
}

func unzip(t *testing.T, data []byte, dir string) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if strings.HasSuffix(f.Name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goCmd runs the go command in dir without network: modules come from the
// module cache (GOPROXY=off), go.mod may gain the buildpack main's
// requirements (-mod=mod, as the buildpack's go mod tidy would add them).
// -trimpath keeps the unpacked archive's temporary directory out of the
// build cache's keys, so the packages of one build are reused by the next.
func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -trimpath", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in the unpacked archive: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// serveOnce starts the server for one entry point and checks that a request
// reaches that function's handler: a 4xx from the handler (no credentials),
// not the 500 of an instance that could not start.
func serveOnce(t *testing.T, bin, name string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()

	var stderr bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"PORT=" + port,
		"FUNCTION_TARGET=" + name,
		"K_SERVICE=" + strings.ToLower(name),
		"GOOGLE_CLOUD_PROJECT=test-archive",
		// Never dialled: the request is refused before any Firestore call.
		"FIRESTORE_EMULATOR_HOST=127.0.0.1:1",
		"BATON_TOKEN_KEY=" + strings.Repeat("k", 32),
		// The model, as Terraform's API key mode sets it; never used.
		"GOOGLE_API_KEY=stand-in",
	}
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	status, body, err := firstAnswer(t.Context(), "http://127.0.0.1:"+port+"/", exited)
	cmd.Process.Kill()
	if err == nil {
		<-exited // not yet collected by firstAnswer
	}
	// stderr is complete only once the process has been waited for.
	switch {
	case err != nil:
		t.Fatalf("server for %s: %v\nserver log:\n%s", name, err, stderr.String())
	case status < 400 || status >= 500 || status == http.StatusNotFound:
		t.Errorf("POST to %s = %d %s, want a 4xx from its handler\nserver log:\n%s", name, status, body, stderr.String())
	}
}

// firstAnswer polls url until it answers, the server exits or 20 s pass.
func firstAnswer(ctx context.Context, url string, exited <-chan error) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(body), nil
		}
		select {
		case werr := <-exited:
			return 0, "", fmt.Errorf("exited before answering: %v", werr)
		case <-ctx.Done():
			return 0, "", fmt.Errorf("no answer: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
