package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// checkMain is the kind of main the Go functions buildpack generates for
// the archive: a blank import of the root package, whose init registers the
// functions, and funcframework.Start.
const checkMain = `package main

import (
	"log"

	_ %q

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
)

func main() {
	if err := funcframework.Start("8080"); err != nil {
		log.Fatal(err)
	}
}
`

// checkMainDir is the folder of checkMain in the unpacked archive; the
// underscore keeps it out of ./... patterns.
const checkMainDir = "_batonmain"

// checkMainSource is checkMain for the module modPath.
func checkMainSource(modPath string) []byte { return fmt.Appendf(nil, checkMain, modPath) }

// checkBuilds unpacks the archive into a scratch directory and builds it as
// the buildpack would (every package, and a main like the buildpack's), so
// that an archive that cannot build is refused here rather than in Cloud
// Build after terraform apply. It builds with -mod=readonly: the archive's
// go.mod and go.sum must name all it needs (for a user's module, the
// packager completed them, modfiles.go).
func checkBuilds(data []byte, modPath string) error {
	dir, err := os.MkdirTemp("", "baton-package-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := extract(data, dir); err != nil {
		return err
	}
	mainDir := filepath.Join(dir, checkMainDir)
	if err := os.MkdirAll(mainDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(mainDir, "main.go"), checkMainSource(modPath), 0o644); err != nil {
		return err
	}
	// -trimpath keeps the scratch directory out of the build cache's keys,
	// so that packaging again reuses what the last run compiled.
	cmd := exec.Command("go", "build", "-trimpath", "-mod=readonly", "./...", "./"+checkMainDir)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("the archive does not build (go build in an unpacked copy: %v); no archive written:\n%s",
			err, strings.TrimSpace(string(out)))
	}
	return nil
}

// extract writes the archive's files under dir.
func extract(data []byte, dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
