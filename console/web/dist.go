// Package web is the operator's console page as its build (npm run build
// here) leaves it in dist/; the build is committed, so serving it needs no
// npm step. The Admin function (package functions) serves it at /admin.
package web

import (
	"embed"
	"io/fs"
)

//go:embed dist
var dist embed.FS

// Files returns the built page: index.html and its assets.
func Files() (fs.FS, error) { return fs.Sub(dist, "dist") }
