package usechat

import (
	"fmt"
	"html"
	"mime"
	"net/http"
	"strings"
)

// acceptsHTML reports whether r comes from a browser tab (a navigation
// asks for text/html first), not from an <img>, a fetch or an API client.
func acceptsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/html" {
			return true
		}
	}
	return false
}

// writeFileGonePage answers a browser tab opened on a file URL that
// fetches nothing: 404, as for any client, with a page that says whether
// the link expired (its signature held: it was Baton's, minutes ago) or is
// not one Baton made, and how to see the file again. The page runs nothing
// and loads nothing.
func writeFileGonePage(w http.ResponseWriter, expired bool) {
	title, text := "This link to a file is not valid",
		"It was changed, or the file is no longer stored. Open the file from its conversation instead."
	if expired {
		title, text = "This link to a file has expired",
			fmt.Sprintf("A link to a file of a chat works for %d minutes after the conversation was loaded, and no longer: "+
				"whoever holds it can open the file, so it lasts only as long as a page needs to show it. "+
				"Go back to the conversation, or reload it, and open the file from there: it gets a new link.", int(fileURLLifetime.Minutes()))
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>%[1]s</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:4rem auto;padding:0 1rem;color:#1d232b}h1{font-size:1.3rem}</style></head>
<body><main><h1>%[1]s</h1><p>%[2]s</p></main></body>
</html>
`, html.EscapeString(title), html.EscapeString(text))
}
