package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// modFiles are the archive's go.mod and go.sum, in a scratch folder:
// copies of the user's, which the go command completes. A module whose
// only package is the agent has in go.mod and go.sum (as go mod tidy
// writes them) what the agent imports, not what Baton's functions import
// (the MCP SDK, functions-framework, Firebase): the generated root file
// imports them. So the go command loads the archive's packages, the root
// file given as an overlay, with -modfile naming the copy and -mod=mod:
// what the build needs and the copies lack is recorded there (fetched as
// go get fetches it, checked against the checksum database), never in the
// user's files, and the archive builds with -mod=readonly.
type modFiles struct {
	dir     string
	overlay string // the overlay file, once the root file is added
}

// copyModFiles copies the module's go.mod and go.sum (when it has one)
// into a new scratch folder; remove deletes it.
func copyModFiles(root string) (*modFiles, error) {
	dir, err := os.MkdirTemp("", "baton-modfiles-")
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) && name == "go.sum" {
			continue
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	return &modFiles{dir: dir}, nil
}

func (m *modFiles) remove() { os.RemoveAll(m.dir) }

func (m *modFiles) goMod() string { return filepath.Join(m.dir, "go.mod") }

// addFiles makes the go command see the files of the archive that the
// module has not (the generated root file, the buildpack's main), each
// generated source by its slash path in the archive.
func (m *modFiles) addFiles(root string, files map[string][]byte) error {
	replace := map[string]string{}
	for name, src := range files {
		file := filepath.Join(m.dir, "overlay", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, src, 0o644); err != nil {
			return err
		}
		replace[filepath.Join(root, filepath.FromSlash(name))] = file
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return err
	}
	m.overlay = filepath.Join(m.dir, "overlay.json")
	return os.WriteFile(m.overlay, overlay, 0o644)
}

// list runs go list in root, the module's folder, on the copies: what the
// packages need and the copies lack is recorded in them.
func (m *modFiles) list(root string, args ...string) ([]byte, error) {
	flags := []string{"-modfile=" + m.goMod(), "-mod=mod"}
	if m.overlay != "" {
		flags = append(flags, "-overlay="+m.overlay)
	}
	return goList(root, append(flags, args...)...)
}

// read returns the copy's content of name ("go.mod" or "go.sum"), nil
// for a go.sum the module has not and the go command did not write.
func (m *modFiles) read(name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(m.dir, name))
	if errors.Is(err, fs.ErrNotExist) && name == "go.sum" {
		return nil, nil
	}
	return b, err
}

// incompleteError says why the archive's packages did not load and, in
// case what the copies lacked could not be fetched, what to do.
func (m *modFiles) incompleteError(err error) error {
	return fmt.Errorf("the packages the archive builds (the agent, the module's own, Baton's functions, a main like the buildpack's) do not load: %w\n"+
		"The packager completes a copy of go.mod and go.sum with what they lack (yours stay as they are), fetched through GOPROXY "+
		"and checked against GOSUMDB; if that is what failed, package again with network access", err)
}
