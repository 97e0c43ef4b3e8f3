package emulator

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteLauncher: an install whose launcher is stale (or missing) gets
// this build's, and one that has it is left as it is.
func TestWriteLauncher(t *testing.T) {
	t.Parallel()
	want, err := firebaseFiles.ReadFile("firebase/auth-emulator.cjs")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "auth-emulator.cjs")
	for _, before := range [][]byte{nil, []byte("// an older launcher\n")} {
		if before != nil {
			if err := os.WriteFile(path, before, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeLauncher(dir); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("launcher after writeLauncher (was %q): %v, want this build's", before, err)
		}
	}
	stamp, _ := os.Stat(path)
	if err := writeLauncher(dir); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Stat(path); !os.SameFile(stamp, again) {
		t.Error("a current launcher was replaced")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("dir holds %d files, want the launcher only (no temporary file left)", len(entries))
	}
}
