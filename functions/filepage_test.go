package functions

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/baton-run/baton/modeltest"
)

// browserAccept is the Accept header Chromium sends when a tab opens a URL.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8"

// imageAccept is the Accept header Chromium sends for an <img>.
const imageAccept = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"

// fetchAccepting GETs u with an Accept header, as a browser does.
func fetchAccepting(t *testing.T, u, accept string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// TestChatFileLinkInATab: a file URL that expired, opened in a browser
// tab, gets a page saying it expired and what to do (issue 47, item 6),
// and an altered one a page saying it is not valid; both are still 404,
// and an <img> or an API client still gets the JSON error. A valid URL
// opened in a tab is the file.
func TestChatFileLinkInATab(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.TextReply("a cat"))
	image := randomBytes(4 << 10)
	f.stream(f.chat("ada", chatBody("c1", "tab-a", fileMessage("u1", image, "image/png"))))
	link, _ := filePartOf(t, f.messages("ada", "c1"))["url"].(string)
	forged := forgedFileURLs(t, f, link)

	if status, body, _ := fetchAccepting(t, link, browserAccept); status != http.StatusOK || !bytes.Equal([]byte(body), image) {
		t.Errorf("a valid link in a tab: status %d, want 200 and the file", status)
	}
	tests := []struct {
		name, url, accept string
		wantType          string // the media type of the answer
		wantText          string // what the answer says
	}{
		{"expired, in a tab", forged["signed but expired"], browserAccept, "text/html", "This link to a file has expired"},
		{"altered, in a tab", forged["altered signature"], browserAccept, "text/html", "This link to a file is not valid"},
		{"expired, in an <img>", forged["signed but expired"], imageAccept, "application/json", `"code":"not_found"`},
		{"expired, for an API client", forged["signed but expired"], "application/json", "application/json", `"code":"not_found"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, header := fetchAccepting(t, tt.url, tt.accept)
			if status != http.StatusNotFound {
				t.Errorf("status %d, want 404", status)
			}
			if got := header.Get("Content-Type"); !strings.HasPrefix(got, tt.wantType) {
				t.Errorf("Content-Type %q, want %s", got, tt.wantType)
			}
			if !strings.Contains(body, tt.wantText) {
				t.Errorf("body %q, want it to say %q", body, tt.wantText)
			}
			if strings.Contains(body, string(image[:32])) {
				t.Error("the answer holds the file")
			}
		})
	}
	_, page, header := fetchAccepting(t, forged["signed but expired"], browserAccept)
	if csp := header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(page, "<script") {
		t.Errorf("the expired link's page: CSP %q, want one that runs and loads nothing", csp)
	}
	if !strings.Contains(page, "5 minutes") || !strings.Contains(page, "new link") {
		t.Errorf("the expired link's page says %q, want how long links last and how to get a new one", page)
	}
}
