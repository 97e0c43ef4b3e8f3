package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// batonModule is Baton's module path. Packaging Baton's own module moves
// functions/ to the root of the archive; any other module gets a generated
// root package that imports Baton's functions.
const batonModule = "github.com/baton-run/baton"

// copiedDir is the folder of the archive that holds the source of modules
// the builder cannot fetch (a replace to a directory, a private module),
// each at its module path; go.mod's replace directives point there. The
// underscore keeps it out of ./... patterns.
const copiedDir = "_modules"

// rootPackage is the name of the generated root package of a user's module
// when the module's root holds no Go files.
const rootPackage = "batondeploy"

// goPackage is what go list says of a package.
type goPackage struct {
	ImportPath string
	Dir        string
	Name       string
	Module     *goModule
	Error      *struct{ Err string }

	GoFiles, CgoFiles, IgnoredGoFiles                       []string
	CFiles, CXXFiles, HFiles, SFiles, SysoFiles, EmbedFiles []string
}

// sourceFiles are the files, relative to its folder, that building the
// package may read: its Go files for every platform (no tests), other
// sources, and what it embeds.
func (p *goPackage) sourceFiles() []string {
	files := slices.Concat(p.GoFiles, p.CgoFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.SysoFiles, p.EmbedFiles)
	for _, f := range p.IgnoredGoFiles {
		if !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	return files
}

type goModule struct {
	Path    string
	Version string
	Dir     string
	Main    bool
	Replace *goModule
}

// buildUserModule packages a module other than Baton's: its code at its
// usual paths, go.mod and go.sum, a generated root file that registers the
// agent with Baton's functions, and the source of every module the build
// needs that the builder could not fetch.
func buildUserModule(a *archive, agent string) error {
	mod, err := copyModFiles(a.root)
	if err != nil {
		return err
	}
	defer mod.remove()
	pkg, err := resolveAgent(a.root, mod, agent)
	if err != nil {
		return err
	}
	team, err := checkConstructor(pkg)
	if err != nil {
		return err
	}
	rootName, err := a.addUserTree()
	if err != nil {
		return err
	}
	src, err := userAgentSource(rootName, agent, team)
	if err != nil {
		return err
	}
	if err := a.add(agentFile, entry{data: src}); err != nil {
		return err
	}
	if err := mod.addFiles(a.root, map[string][]byte{agentFile: src, checkMainDir + "/main.go": checkMainSource(a.modPath)}); err != nil {
		return err
	}
	copied, err := a.addUnfetchable(mod, agent)
	if err != nil {
		return err
	}
	return addModFiles(a, mod, copied)
}

// resolveAgent asks the go command where the agent package is, so that an
// import path naming nothing is refused here rather than in Cloud Build.
func resolveAgent(root string, mod *modFiles, agent string) (*goPackage, error) {
	out, err := mod.list(root, "-e", "-json", agent)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", agent, err)
	}
	var pkg goPackage
	if err := json.Unmarshal(out, &pkg); err != nil {
		return nil, fmt.Errorf("agent %s: go list: %w", agent, err)
	}
	if pkg.Error != nil || pkg.Dir == "" {
		msg := "not found"
		if pkg.Error != nil {
			msg = pkg.Error.Err
		}
		return nil, fmt.Errorf("agent package %s does not exist in this module or its requirements: %s", agent, msg)
	}
	return &pkg, nil
}

// checkConstructor reports whether the agent package declares Team (a
// team is deployed) and refuses one with neither New nor Team.
func checkConstructor(pkg *goPackage) (team bool, err error) {
	team, err = declaresFunc(pkg.Dir, "Team")
	if err != nil || team {
		return team, err
	}
	hasNew, err := declaresFunc(pkg.Dir, "New")
	if err != nil {
		return false, err
	}
	if !hasNew {
		return false, fmt.Errorf("agent package %s declares neither func New(ctx) (agent.Agent, error) nor func Team(ctx) ([]toolcallback.Member, error): the packager deploys one of them", pkg.ImportPath)
	}
	return false, nil
}

// addUserTree adds the module's files at their usual paths (no tests,
// hidden files, vendor, node_modules, nested modules or build output) and
// returns the name of the root package the generated file joins.
func (a *archive) addUserTree() (string, error) {
	entries, err := os.ReadDir(a.root)
	if err != nil {
		return "", err
	}
	name := ""
	for _, e := range entries {
		n := e.Name()
		src := filepath.Join(a.root, n)
		switch {
		case skipName(n) || n == "go.mod" || n == "go.sum":
		case e.IsDir():
			if err := a.addTree(src, n); err != nil {
				return "", err
			}
		case strings.HasSuffix(n, ".go") && !skipFile(n):
			f, err := parser.ParseFile(token.NewFileSet(), src, nil, parser.PackageClauseOnly)
			if err != nil {
				return "", err
			}
			name = f.Name.Name
			if err := a.addFile(n, src); err != nil {
				return "", err
			}
		}
	}
	if name == "main" {
		return "", errors.New("the module's root holds package main; the functions buildpack builds the root package as a library: move the main into a folder of its own (e.g. ./local)")
	}
	if name == "" {
		name = rootPackage
	}
	// The buildpack imports module/NAME instead of the module's root when
	// a folder NAME exists at the root.
	if fi, err := os.Stat(filepath.Join(a.root, name)); err == nil && fi.IsDir() {
		return "", fmt.Errorf("the root package %s has the name of the folder %s/, which would mislead the functions buildpack", name, name)
	}
	return name, nil
}

// addUnfetchable adds the packages the deployed build needs (with their
// module's go.mod) of every module the builder cannot download: those
// replaced by a directory, and those GOPRIVATE or GONOPROXY name. It
// returns the replacements go.mod needs, module path to archive folder.
// Loading the packages completes mod's go.mod and go.sum.
func (a *archive) addUnfetchable(mod *modFiles, agent string) (map[string]string, error) {
	// Every package of the module is in the archive and built (a main
	// such as ./local too), so all of them count, with the generated root
	// file (and through it the agent and Baton's functions) and a main
	// like the buildpack's.
	out, err := mod.list(a.root, "-deps", "-json", agent, "./...", "./"+checkMainDir)
	if err != nil {
		return nil, mod.incompleteError(err)
	}
	private, err := privatePatterns(a.root)
	if err != nil {
		return nil, err
	}
	copied := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var pkg goPackage
		if err := dec.Decode(&pkg); err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		m := pkg.Module
		if m == nil || m.Main {
			continue
		}
		dirReplaced := m.Replace != nil && m.Replace.Version == ""
		if !dirReplaced && !matchesPrefix(private, m.Path) {
			continue
		}
		dir := m.Dir
		if m.Replace != nil {
			dir = m.Replace.Dir
		}
		if dir == "" {
			return nil, fmt.Errorf("module %s: no source on this machine (go mod download it)", m.Path)
		}
		folder := copiedDir + "/" + m.Path
		if copied[m.Path] == "" {
			if err := a.addFile(folder+"/go.mod", filepath.Join(dir, "go.mod")); err != nil {
				return nil, fmt.Errorf("module %s: %w", m.Path, err)
			}
			copied[m.Path] = folder
		}
		if err := a.addPackageFiles(&pkg, dir, folder); err != nil {
			return nil, fmt.Errorf("module %s: %w", m.Path, err)
		}
	}
	return copied, nil
}

// addPackageFiles adds the source files of pkg, a package of the module in
// dir, below folder. Only what the build reads is copied, not the module's
// whole tree: a checkout holds build output, test screenshots and the like,
// which would make the archive neither small nor reproducible.
func (a *archive) addPackageFiles(pkg *goPackage, dir, folder string) error {
	rel, err := filepath.Rel(dir, pkg.Dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("package %s: folder %s is not inside %s", pkg.ImportPath, pkg.Dir, dir)
	}
	prefix := folder
	if rel != "." {
		prefix += "/" + filepath.ToSlash(rel)
	}
	for _, f := range pkg.sourceFiles() {
		if err := a.addFile(prefix+"/"+f, filepath.Join(pkg.Dir, filepath.FromSlash(f))); err != nil {
			return err
		}
	}
	return nil
}

// addModFiles adds mod's go.mod, with each copied module replaced by its
// folder in the archive, and its go.sum, as the go command completed them.
func addModFiles(a *archive, mod *modFiles, copied map[string]string) error {
	if err := editGoMod(mod.goMod(), copied); err != nil {
		return err
	}
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := mod.read(name)
		if err != nil {
			return err
		}
		if b == nil {
			continue
		}
		if err := a.add(name, entry{data: b}); err != nil {
			return err
		}
	}
	return nil
}

// editGoMod replaces in the go.mod file at path each copied module by its
// folder in the archive.
func editGoMod(path string, copied map[string]string) error {
	if len(copied) == 0 {
		return nil
	}
	out, err := goCommand(filepath.Dir(path), "mod", "edit", "-json", path)
	if err != nil {
		return err
	}
	var mod struct {
		Replace []struct{ Old, New goModule }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		return fmt.Errorf("go mod edit -json: %w", err)
	}
	args := []string{"mod", "edit"}
	for _, r := range mod.Replace {
		if copied[r.Old.Path] != "" {
			old := r.Old.Path
			if r.Old.Version != "" {
				old += "@" + r.Old.Version
			}
			args = append(args, "-dropreplace="+old)
		}
	}
	for p, folder := range sortedMap(copied) {
		args = append(args, "-replace="+p+"=./"+folder)
	}
	_, err = goCommand(filepath.Dir(path), append(args, path)...)
	return err
}

// userAgentSource is the generated root file of a user's module: it
// imports Baton's functions (whose init registers every entry point; the
// buildpack's declarative main is chosen because the root package imports
// functions-framework's functions package) and registers the agent.
func userAgentSource(pkgName, agent string, team bool) ([]byte, error) {
	register := "functions.UseAgent(batonagent.New)"
	if team {
		register = "functions.UseTeam(batonagent.Team)"
	}
	return formatSource(fmt.Sprintf(`// Code generated by github.com/baton-run/baton/infra/package. DO NOT EDIT.

package %s

import (
	// The functions buildpack generates a main that serves the functions
	// registered in init when the root package imports this package.
	_ "github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/baton-run/baton/functions"

	batonagent %q
)

// The deployed agents: every registered function serves what this builds.
func init() { %s }
`, pkgName, agent, register))
}

// goList runs go list in dir and returns its standard output.
func goList(dir string, args ...string) ([]byte, error) {
	return goCommand(dir, append([]string{"list"}, args...)...)
}

// goCommand runs the go command in dir, outside any workspace, and returns
// its standard output, or an error with its standard error.
func goCommand(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// privatePatterns are the module path patterns the go command does not
// fetch through the proxy (GONOPROXY, which defaults to GOPRIVATE): a
// builder with only the proxy cannot fetch them either.
func privatePatterns(dir string) ([]string, error) {
	out, err := goCommand(dir, "env", "GONOPROXY")
	if err != nil {
		return nil, err
	}
	var patterns []string
	for _, p := range strings.Split(strings.TrimSpace(string(out)), ",") {
		if p = strings.TrimSpace(p); p != "" {
			patterns = append(patterns, p)
		}
	}
	return patterns, nil
}

// matchesPrefix reports whether a pattern (path.Match glob) matches target
// or a leading part of it, element by element, as GOPRIVATE patterns do.
func matchesPrefix(patterns []string, target string) bool {
	for _, pattern := range patterns {
		n := strings.Count(pattern, "/") + 1
		elems := strings.Split(target, "/")
		if len(elems) < n {
			continue
		}
		if ok, _ := path.Match(pattern, strings.Join(elems[:n], "/")); ok {
			return true
		}
	}
	return false
}
