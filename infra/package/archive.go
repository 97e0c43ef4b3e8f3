package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"iter"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// defaultAgent is the agent deployed unless -agent names another package.
const defaultAgent = "github.com/baton-run/baton/local/agent"

// agentFile is the generated root file that hands the agent to the
// functions package.
const agentFile = "zz_agent.go"

// modTime is every entry's modification time: a constant, so that equal
// sources give byte-identical archives. (The zip format cannot say 1970.)
var modTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// Options says what to package.
type Options struct {
	ModuleRoot string // directory holding go.mod
	Agent      string // import path of the agent package (its New builds the agent)
}

// entry is one file of the archive: a file of the module, or generated.
type entry struct {
	src  string // path on disk, or "" when data is generated
	data []byte
}

// build returns the archive and the number of files in it.
func build(opts Options) ([]byte, int, error) {
	root, err := filepath.Abs(opts.ModuleRoot)
	if err != nil {
		return nil, 0, err
	}
	modPath, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, 0, err
	}
	if opts.Agent == "" {
		return nil, 0, errors.New("no agent package: pass -agent")
	}
	if opts.Agent == modPath+"/functions" {
		return nil, 0, errors.New("the agent package cannot be the functions package")
	}
	a := &archive{root: root, modPath: modPath, files: map[string]entry{}}
	if modPath != batonModule {
		if err := buildUserModule(a, opts.Agent); err != nil {
			return nil, 0, err
		}
		data, err := a.zip()
		return data, len(a.files), err
	}
	if err := a.addBaton(opts.Agent); err != nil {
		return nil, 0, err
	}
	if err := a.checkImports(); err != nil {
		return nil, 0, err
	}
	data, err := a.zip()
	return data, len(a.files), err
}

// addBaton arranges Baton's own module: functions/ at the root, the rest
// at its usual paths, the agent and what it imports from infra/ and local/.
func (a *archive) addBaton(agent string) error {
	for _, name := range []string{"go.mod", "go.sum"} {
		if err := a.addFile(name, filepath.Join(a.root, name)); err != nil {
			return err
		}
	}
	pkgName, err := a.addFunctions()
	if err != nil {
		return err
	}
	if err := a.addModule(); err != nil {
		return err
	}
	if err := a.addAgent(agent); err != nil {
		return err
	}
	dir := filepath.Join(a.root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(agent, a.modPath), "/")))
	team, err := checkConstructor(&goPackage{ImportPath: agent, Dir: dir})
	if err != nil {
		return err
	}
	src, err := agentSource(pkgName, agent, team)
	if err != nil {
		return err
	}
	return a.add(agentFile, entry{data: src})
}

type archive struct {
	root    string
	modPath string
	files   map[string]entry // by slash path in the archive
}

func (a *archive) add(name string, e entry) error {
	if old, ok := a.files[name]; ok {
		if old.src != "" && old.src == e.src {
			return nil // the same file reached twice (agent closure and module walk)
		}
		return fmt.Errorf("%s: two files for one path in the archive", name)
	}
	a.files[name] = e
	return nil
}

func (a *archive) addFile(name, src string) error {
	return a.add(name, entry{src: src})
}

// addFunctions puts the non-test files of functions/ at the root of the
// archive and returns the package's name.
func (a *archive) addFunctions() (string, error) {
	dir := filepath.Join(a.root, "functions")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("functions package: %w", err)
	}
	pkgName := ""
	for _, e := range entries {
		name := e.Name()
		if skipName(name) {
			continue
		}
		src := filepath.Join(dir, name)
		if e.IsDir() {
			// Files embedded from a subdirectory move with the package; a
			// package in a subdirectory would change its import path.
			hasGo, err := containsGo(src)
			if err != nil {
				return "", err
			}
			if hasGo {
				return "", fmt.Errorf("functions/%s: packages under functions/ are not supported (functions/ moves to the root of the archive)", name)
			}
			if _, err := os.Stat(filepath.Join(a.root, name)); err == nil {
				return "", fmt.Errorf("functions/%s would collide with the module's %s/ at the root of the archive", name, name)
			}
			if err := a.addTree(src, name); err != nil {
				return "", err
			}
			continue
		}
		if !e.Type().IsRegular() {
			return "", fmt.Errorf("functions/%s: not a regular file", name)
		}
		if skipFile(name) {
			continue
		}
		if name == "go.mod" || name == "go.sum" || name == agentFile {
			return "", fmt.Errorf("functions/%s would collide with a root file of the archive", name)
		}
		if strings.HasSuffix(name, ".go") && pkgName == "" {
			f, err := parser.ParseFile(token.NewFileSet(), src, nil, parser.PackageClauseOnly)
			if err != nil {
				return "", err
			}
			pkgName = f.Name.Name
		}
		if err := a.addFile(name, src); err != nil {
			return "", err
		}
	}
	if pkgName == "" {
		return "", errors.New("functions/ has no Go files")
	}
	if pkgName == "main" {
		return "", errors.New("functions/ is package main; the buildpack needs an importable root package")
	}
	return pkgName, nil
}

// excludedTop are top-level folders that are not part of the deployed code:
// functions/ is moved to the root, infra/ and local/ contribute only what the
// agent needs.
var excludedTop = []string{"functions", "infra", "local"}

// addModule adds every other folder of the module at its usual path.
func (a *archive) addModule() error {
	entries, err := os.ReadDir(a.root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || skipName(name) || slices.Contains(excludedTop, name) {
			continue // root files other than go.mod and go.sum are not code
		}
		if err := a.addTree(filepath.Join(a.root, name), name); err != nil {
			return err
		}
	}
	return nil
}

// addTree adds the files under dir, as prefix/..., skipping tests, hidden
// and build files and nested modules.
func (a *archive) addTree(dir, prefix string) error {
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return nil // another module
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if skipName(name) {
			continue
		}
		src := filepath.Join(dir, name)
		switch {
		case e.IsDir():
			if err := a.addTree(src, prefix+"/"+name); err != nil {
				return err
			}
		case !e.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file (symbolic links are not packaged)", src)
		case !skipFile(name):
			if err := a.addFile(prefix+"/"+name, src); err != nil {
				return err
			}
		}
	}
	return nil
}

// addAgent adds the agent package and the in-module packages it imports
// (which may live under local/ or infra/). An agent outside the module is
// left to go.mod.
func (a *archive) addAgent(agent string) error {
	if !a.inModule(agent) {
		return nil
	}
	seen := map[string]bool{agent: true}
	for queue := []string{agent}; len(queue) > 0; queue = queue[1:] {
		pkg := queue[0]
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, a.modPath), "/")
		if rel == "" || rel == "functions" || strings.HasPrefix(rel, "functions/") {
			return fmt.Errorf("agent %s depends on %s, which is not a package in the archive (functions/ moves to the root)", agent, pkg)
		}
		dir := filepath.Join(a.root, filepath.FromSlash(rel))
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("agent %s: package %s: %w", agent, pkg, err)
		}
		goFiles := 0
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || skipName(name) || skipFile(name) || !e.Type().IsRegular() {
				continue
			}
			src := filepath.Join(dir, name)
			if err := a.addFile(rel+"/"+name, src); err != nil {
				return err
			}
			if !strings.HasSuffix(name, ".go") {
				continue
			}
			goFiles++
			imports, err := fileImports(src)
			if err != nil {
				return err
			}
			for _, imp := range imports {
				if a.inModule(imp) && !seen[imp] {
					seen[imp] = true
					queue = append(queue, imp)
				}
			}
		}
		if goFiles == 0 {
			return fmt.Errorf("agent %s: package %s has no Go files in %s", agent, pkg, dir)
		}
	}
	return nil
}

// checkImports refuses an archive in which a package imports the functions
// package by its old path: it no longer exists there.
func (a *archive) checkImports() error {
	for name, e := range a.files {
		if e.src == "" || !strings.HasSuffix(name, ".go") {
			continue
		}
		imports, err := fileImports(e.src)
		if err != nil {
			return err
		}
		for _, imp := range imports {
			if imp == a.modPath+"/functions" || strings.HasPrefix(imp, a.modPath+"/functions/") {
				return fmt.Errorf("%s imports %s; nothing may import the functions package (it is the root package of the archive)", e.src, imp)
			}
		}
	}
	return nil
}

func (a *archive) inModule(pkg string) bool {
	return pkg == a.modPath || strings.HasPrefix(pkg, a.modPath+"/")
}

// zip writes the entries, and their folders, sorted by path.
func (a *archive) zip() ([]byte, error) {
	names := make([]string, 0, len(a.files))
	dirs := map[string]bool{}
	for name := range a.files {
		names = append(names, name)
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d+"/"] = true
		}
	}
	for d := range dirs {
		names = append(names, d)
	}
	slices.Sort(names)

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range names {
		hdr := &zip.FileHeader{Name: name, Modified: modTime}
		if strings.HasSuffix(name, "/") {
			hdr.SetMode(fs.ModeDir | 0o755)
			if _, err := zw.CreateHeader(hdr); err != nil {
				return nil, err
			}
			continue
		}
		e := a.files[name]
		data := e.data
		if e.src != "" {
			var err error
			if data, err = os.ReadFile(e.src); err != nil {
				return nil, err
			}
		}
		// Stored, not deflated: the bytes then depend on the sources only,
		// not on the Go version's compressor.
		hdr.Method = zip.Store
		hdr.SetMode(0o644)
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// agentSource is the generated root file that registers the agent: the
// package's Team (agents a chat may switch between) when it has one, its
// New otherwise.
func agentSource(pkgName, agent string, team bool) ([]byte, error) {
	register := "UseAgent(batonagent.New)"
	if team {
		register = "UseTeam(batonagent.Team)"
	}
	src := fmt.Sprintf(`// Code generated by infra/package. DO NOT EDIT.

package %s

import batonagent %s

// The deployed agents: every registered function serves what this builds.
func init() { %s }
`, pkgName, strconv.Quote(agent), register)
	return format.Source([]byte(src))
}

// declaresFunc reports whether the Go package in dir declares a
// top-level func name.
func declaresFunc(dir, name string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return false, err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			return false, err
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == name {
				return true, nil
			}
		}
	}
	return false, nil
}

// formatSource gofmts generated source.
func formatSource(src string) ([]byte, error) { return format.Source([]byte(src)) }

// sortedMap yields m's entries by key, so that what is built from a map
// does not depend on its order.
func sortedMap(m map[string]string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// skipName reports whether a file or folder is never packaged: hidden and
// underscore names (as the go command ignores them), testdata,
// node_modules, vendor.
func skipName(name string) bool {
	switch name {
	case "testdata", "node_modules", "vendor":
		return true
	}
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// skipFile reports whether a file is a test or build output.
func skipFile(name string) bool {
	if strings.HasSuffix(name, "_test.go") {
		return true
	}
	switch filepath.Ext(name) {
	case ".test", ".out", ".prof", ".zip", ".exe":
		return true
	}
	return false
}

func containsGo(dir string) (bool, error) {
	found := false
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found, err
}

func fileImports(src string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var imports []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: import %s: %w", src, imp.Path.Value, err)
		}
		imports = append(imports, p)
	}
	return imports, nil
}

// modulePath reads the module directive of go.mod.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			p := fields[1]
			if unq, err := strconv.Unquote(p); err == nil {
				p = unq
			}
			return p, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: no module directive", gomod)
}
