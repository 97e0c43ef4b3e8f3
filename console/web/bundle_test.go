//go:build unix

package web

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/bundletest"
)

// TestConsoleBundle holds the committed console page (dist, which the
// Admin function embeds) to what its source builds: it builds the page
// into a temporary directory and compares the two file by file. Without
// node it skips, except under CI=true, where it fails.
func TestConsoleBundle(t *testing.T) {
	if testing.Short() {
		t.Skip("building the page is not short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the console's build check needs node: %v (run ./test, which installs what is missing)", err)
		}
		t.Skipf("the console's build check needs node: %v", err)
	}
	// Read the sources so that a change to them invalidates go test's
	// cached result.
	sources, err := filepath.Glob(filepath.Join("src", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(sources, "package.json", "package-lock.json", "vite.config.js", "index.html") {
		if _, err := os.ReadFile(name); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join("node_modules", "vite")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("npm ci is needed in console/web and npm is missing: %v", err)
		}
		if out, err := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund").CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, node, filepath.Join("node_modules", "vite", "bin", "vite.js"), "build", "--logLevel", "warn", "--outDir", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("vite build: %v\n%s", err, b)
	}
	if !bundletest.Same(t, out, "dist") {
		t.Log("the committed console is stale: run npm run build in console/web and commit console/web/dist")
	}
}
