// Command package writes the upload archive the Cloud Run functions are
// built from, from Baton's module or from a module of a user's own that
// requires Baton:
//
//	go run ./infra/package -out baton.zip [-agent github.com/baton-run/baton/local/agent]
//	go run github.com/baton-run/baton/infra/package -agent example.com/myagent/agent -out baton.zip
//
// The agent package declares Team (deployed with functions.UseTeam) or New
// (functions.UseAgent); one with neither is refused. Before writing the
// archive the packager unpacks it into a scratch directory and builds it
// with a main like the buildpack's, so that a tree that does not build is
// refused here, not in Cloud Build; on any failure it exits non-zero and
// writes nothing. It uses only the standard library and the go command, so
// that go run works from any module that requires Baton.
//
// A user's module (usermodule.go) is packaged as it is: its files at their
// usual paths, its go.mod and go.sum completed for the archive on a copy
// (modfiles.go; the user's files are never changed), and a generated root
// file, zz_agent.go,
// that imports Baton's functions and functions-framework's functions
// package (which makes the buildpack generate its declarative main) and
// registers the agent. Modules the builder cannot download, those replaced
// by a directory and those GONOPROXY (GOPRIVATE) names, have the packages
// the build needs copied under _modules/<module path>/ (the files go list
// says they are built from, and their module's go.mod), and go.mod in the
// archive replaces them with that copy; everything else comes from the
// module proxy. Copying packages rather than the module's tree keeps a
// checkout's build output and test files out, which would otherwise change
// the archive while the checkout's own tests run.
//
// Baton's own module is arranged differently. The Go functions buildpack builds the package at the root of the upload
// (it generates a main that blank-imports the module path and calls
// funcframework.Start), and scans every root *.go file, tests included. Our
// functions live in functions/, so the archive is arranged:
//
//   - go.mod and go.sum at the root;
//   - the non-test files of functions/ at the root, still package functions,
//     so the root package is the functions package and its init registers
//     every entry point;
//   - a generated root file, zz_agent.go, whose init calls
//     functions.UseAgent with the agent package's New;
//   - every other package of the module at its usual path, without tests,
//     except infra/ and local/; of those only the agent package and the
//     in-module packages it imports are kept;
//   - no hidden files, testdata, node_modules, nested modules or build
//     output.
//
// Entries are sorted and carry a fixed time and mode, so the archive (and
// the object name Terraform derives from its SHA-256) changes only when the
// deployed code changes.
package main
