//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/bundletest"
)

// TestWebBundle holds the committed demo page (local/web/dist, which go run
// ./local embeds) to what its source builds: it builds both page builds
// (ai 7 and ai 6) into a temporary directory and compares them file by
// file. Without node it skips, except under CI=true, where it fails.
func TestWebBundle(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("building the page is not short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the page's build check needs node: %v; %s", err, e2eInstallHint)
		}
		t.Skipf("the page's build check needs node (%v); %s", err, e2eInstallHint)
	}
	dir := "web"
	// Read the sources so that a change to them invalidates go test's
	// cached result.
	sources := []string{"package.json", "package-lock.json", "vite.config.js", "index.html"}
	srcFiles, err := filepath.Glob(filepath.Join(dir, "src", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sources {
		srcFiles = append(srcFiles, filepath.Join(dir, name))
	}
	for _, name := range srcFiles {
		if _, err := os.ReadFile(name); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "vite")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("npm ci is needed in local/web and npm is missing: %v; %s", err, e2eInstallHint)
		}
		if err := runLogged(ctx, t, "", exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund"), dir); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	vite := filepath.Join("node_modules", "vite", "bin", "vite.js")
	if err := runLogged(ctx, t, "", exec.CommandContext(ctx, node, vite, "build", "--logLevel", "warn", "--outDir", out), dir); err != nil {
		t.Fatal(err)
	}
	if err := runLogged(ctx, t, "", exec.CommandContext(ctx, node, vite, "build", "--mode", "ai6", "--logLevel", "warn", "--outDir", filepath.Join(out, "ai6")), dir); err != nil {
		t.Fatal(err)
	}

	if !bundletest.Same(t, out, filepath.Join(dir, "dist")) {
		t.Log("the committed page is stale: run npm run build in local/web and commit local/web/dist")
	}
}
