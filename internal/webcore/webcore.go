package webcore

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Case is one thing for the script to read: A2UI messages applied to one
// processor, or data-a2ui parts (as a stream or a page carries them),
// each drawn on a processor of its own as the page draws a part, the
// latest part of a surface winning. Press, when set, presses a component
// of the result.
type Case struct {
	Name     string `json:"name"`
	Messages any    `json:"messages,omitempty"`
	Parts    any    `json:"parts,omitempty"`
	Press    *Press `json:"press,omitempty"`
}

// Press sets data model paths (the user typing), then dispatches the
// component's action as a rendered button does.
type Press struct {
	SurfaceID   string         `json:"surfaceId"`
	ComponentID string         `json:"componentId"`
	Set         map[string]any `json:"set,omitempty"`
}

// Result is what the script read of a Case: the surfaces the renderer's
// model holds, and the client message a press sent.
type Result struct {
	Name     string             `json:"name"`
	OK       bool               `json:"ok"`
	Error    string             `json:"error"`
	Surfaces map[string]Surface `json:"surfaces"`
	Action   json.RawMessage    `json:"action"`
}

// Surface is a surface as the renderer's model holds it: its components
// by id ({component, ...properties}) and its data model.
type Surface struct {
	Components map[string]map[string]any `json:"components"`
	Data       any                       `json:"data"`
}

// Run runs local/e2e/a2ui.mjs on cases and returns the results by name.
// Without node or the npm packages of local/e2e it skips, except under
// CI=true, where it fails.
func Run(t *testing.T, cases []Case) map[string]Result {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "local", "e2e")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@a2ui", "web_core", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("@a2ui/web_core check needs node and local/e2e's npm packages: %v (run ./test, or npm ci in local/e2e)", err)
		}
		t.Skipf("@a2ui/web_core check needs node and local/e2e's npm packages (%v): run ./test, or npm ci in local/e2e", err)
	}
	// Read the script and the lockfile so that a change to them
	// invalidates go test's cached result.
	for _, name := range []string{"a2ui.mjs", "package-lock.json"} {
		if _, err := os.ReadFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	input, err := json.Marshal(map[string]any{"cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "a2ui.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node a2ui.mjs: %v\n%s", err, stderr.String())
	}
	var got struct{ Results []Result }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node a2ui.mjs output %q: %v", out, err)
	}
	results := make(map[string]Result)
	for _, r := range got.Results {
		results[r.Name] = r
	}
	return results
}
