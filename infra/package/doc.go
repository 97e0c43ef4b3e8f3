// Command package writes the upload archive the Cloud Run functions are
// built from:
//
//	go run ./infra/package -out baton.zip [-agent github.com/baton-run/baton/local/agent]
//
// The Go functions buildpack builds the package at the root of the upload
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
