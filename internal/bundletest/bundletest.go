package bundletest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Same reports every file that differs between built (a fresh build of the
// source) and committed (the dist directory in the repository): missing,
// different, or no longer built. It returns whether they are the same.
func Same(t testing.TB, built, committed string) bool {
	t.Helper()
	b, c := tree(t, built), tree(t, committed)
	same := true
	for name, data := range b {
		old, ok := c[name]
		switch {
		case !ok:
			t.Errorf("dist/%s is missing", name)
			same = false
		case !bytes.Equal(data, old):
			t.Errorf("dist/%s differs from what the source builds", name)
			same = false
		}
	}
	for name := range c {
		if _, ok := b[name]; !ok {
			t.Errorf("dist/%s is not built from the source any more", name)
			same = false
		}
	}
	return same
}

// tree reads every file under root, by slash-separated relative path.
func tree(t testing.TB, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
