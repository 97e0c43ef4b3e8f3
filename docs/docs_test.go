// Package docs holds Baton's documentation beyond the README; its test
// checks that the README and these pages link only to files and headings
// that exist, and that every environment variable is documented.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/a2aserver"
	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/functions"
)

// link matches a Markdown inline link or image: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// pages are the README and every Markdown file of docs/, relative to the
// repository root.
func pages(t *testing.T) []string {
	t.Helper()
	found, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, f := range found {
		out = append(out, "docs/"+f)
	}
	return out
}

func read(t *testing.T, page string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// anchor is the id GitHub gives a heading: lower case, letters, digits,
// spaces, hyphens and underscores kept, spaces turned into hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors lists the ids of a page's headings, outside code blocks.
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	fenced := false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		ids[anchor(strings.TrimSpace(strings.TrimLeft(line, "#")))] = true
	}
	return ids
}

// TestLinks checks every relative link of the README and of docs/: the
// file it names exists and, when it names a heading, the heading does.
func TestLinks(t *testing.T) {
	for _, page := range pages(t) {
		text := read(t, page)
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			resolved := page
			if file != "" {
				resolved = filepath.ToSlash(filepath.Join(filepath.Dir(page), file))
			}
			if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(resolved))); err != nil {
				t.Errorf("%s links to %s: %s does not exist", page, target, resolved)
				continue
			}
			if frag == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			if !anchors(read(t, resolved))[frag] {
				t.Errorf("%s links to %s: %s has no heading #%s", page, target, resolved, frag)
			}
		}
	}
}

// TestEnvVarsDocumented holds docs/configuration.md to functions.EnvVars.
func TestEnvVarsDocumented(t *testing.T) {
	text := read(t, "docs/configuration.md")
	for _, e := range functions.EnvVars {
		if !strings.Contains(text, "| `"+e.Name+"` |") {
			t.Errorf("docs/configuration.md has no row for %s (functions.EnvVars)", e.Name)
		}
	}
}

// TestReadmeFitsOnAScreen keeps the README short: the detail belongs in
// docs/.
func TestReadmeFitsOnAScreen(t *testing.T) {
	const most = 300
	if n := strings.Count(read(t, "README.md"), "\n"); n > most {
		t.Errorf("README.md has %d lines, want at most %d: move detail to docs/", n, most)
	}
}

// TestErrorTable holds docs/http-api.md's table of errors to the code:
// every code errclass classifies, in errclass.Codes' order, with its HTTP
// status and the JSON-RPC error A2A answers it with (a2aserver.RPCCode).
func TestErrorTable(t *testing.T) {
	text := read(t, "docs/http-api.md")
	_, section, _ := strings.Cut(text, "\n## Errors\n")
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| (\\d{3}) \\| `([a-z_]+)` \\| (-?\\d+) \\|")
	var got []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		got = append(got, m[1]+" "+m[2]+" "+m[3])
	}
	var want []string
	for _, c := range errclass.Codes {
		want = append(want, fmt.Sprintf("%d %s %d", c.Status, c.Code, a2aserver.RPCCode(c.Code)))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/http-api.md's table of errors (status, code, JSON-RPC code) differs from errclass.Codes and a2aserver (-want +got):\n%s", diff)
	}
}
