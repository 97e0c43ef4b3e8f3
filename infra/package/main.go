package main

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("out", "baton.zip", "archive to write")
	agent := flag.String("agent", "", "import path of the package whose Team(ctx) ([]toolcallback.Member, error), or else New(ctx) (agent.Agent, error), builds the deployed agents (default in Baton's module: "+defaultAgent+")")
	dir := flag.String("module", "", "module root (default: the nearest directory with a go.mod, from the working directory up)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "package: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if err := run(*dir, *agent, *out); err != nil {
		// No archive is written: a failed run leaves none for Terraform.
		fmt.Fprintln(os.Stderr, "package:", err)
		os.Exit(1)
	}
}

func run(dir, agent, out string) error {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if dir, err = findModuleRoot(wd); err != nil {
			return err
		}
	}
	modPath, err := modulePath(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	if agent == "" && modPath == batonModule {
		agent = defaultAgent
	}
	data, files, err := build(Options{ModuleRoot: dir, Agent: agent})
	if err != nil {
		return err
	}
	if err := checkBuilds(data, modPath); err != nil {
		return err
	}
	// Write next to the destination and rename, so a failed run never
	// leaves a truncated archive for Terraform to upload.
	tmp, err := os.CreateTemp(filepath.Dir(out), ".baton-*.zip")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s: %d files, %d bytes, sha256 %x\n", out, files, len(data), sha256.Sum256(data))
	return nil
}

func findModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in the working directory or above; run from the module or pass -module")
		}
		dir = parent
	}
}
