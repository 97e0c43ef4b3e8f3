package functions

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/baton-run/baton/modeltest"
)

// fuzzServer is a dev-identity fixture whose model always answers "ok".
func fuzzServer(t *testing.T) *httpFixture {
	f := newHTTPFixture(t, func(c *Config) { c.DevIdentity = true })
	f.model.Repeat = modeltest.TextReply("ok")
	return f
}

// checkNoServerError fails on a 5xx or a body that is neither JSON nor a
// stream.
func checkNoServerError(t *testing.T, resp *http.Response) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("status %d with Content-Type %q", resp.StatusCode, ct)
	}
}

func FuzzTurn(f *testing.F) {
	for _, seed := range []struct{ body, user string }{
		{`{"sessionId":"s1","clientId":"tab","text":"hi"}`, "ada"},
		{`{"sessionId":"s1","clientId":"tab","parts":[{"text":"a"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}]}`, "ada"},
		{`{"sessionId":"__x__","clientId":"tab","text":"hi"}`, "ada"},
		{`{"sessionId":"s1","clientId":"tab","text":"hi"}`, "a/b"},
		{`{"sessionId":"s\xff","clientId":"tab","text":"hi"}`, "ada"},
		{`{"sessionId":"s1","clientId":"","text":""}`, ""},
		{`{"sessionId":1}`, "ada"},
		{`[]`, "ada"},
		{`{"sessionId":"s1","clientId":"t","parts":[{"inlineData":{"mimeType":"","data":"%%%"}}]}`, "ada"},
		{`{"sessionId":"s1","clientId":"t","text":"x"} {"again":true}`, "ada"},
		{strings.Repeat("[", 10000), "ada"},
	} {
		f.Add(seed.body, seed.user)
	}
	f.Fuzz(func(t *testing.T, body, user string) {
		t.Parallel() // seeds run concurrently; each has a server and a project of its own
		if strings.ContainsFunc(user, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Skip("not a header value an HTTP client sends")
		}
		fx := fuzzServer(t)
		checkNoServerError(t, fx.do(http.MethodPost, NameTurn, "", body, map[string]string{"X-Baton-User": user}))
	})
}

func FuzzToolResult(f *testing.F) {
	for _, seed := range []string{
		`{"sessionId":"s1","toolCallId":"c1","clientId":"tab","output":{"a":1}}`,
		`{"sessionId":"s1","toolCallId":"c1","clientId":"tab","approved":true,"payload":{"people":6}}`,
		`{"token":"abc.def","output":{}}`,
		`{"token":"","sessionId":"s1"}`,
		`{"sessionId":"s1","toolCallId":"../../x","clientId":"tab","error":"e"}`,
		`{"output":null,"error":"","approved":null}`,
		`null`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		t.Parallel() // seeds run concurrently; each has a server and a project of its own
		fx := fuzzServer(t)
		checkNoServerError(t, fx.do(http.MethodPost, NameToolResult, "", body, map[string]string{"X-Baton-User": "ada"}))
	})
}

func FuzzPendingQuery(f *testing.F) {
	for _, seed := range []string{"sessionId=s1&clientId=tab", "sessionId=&clientId=", "sessionId=s1&clientId=tab&history=-1", "history=999999999999999999999", "%zz"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, query string) {
		t.Parallel() // seeds run concurrently; each has a server and a project of its own
		fx := fuzzServer(t)
		u, err := url.Parse(fx.srv.URL + "/" + NamePending + "?" + query)
		if err != nil {
			t.Skip("not a URL")
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u.String(), nil)
		req.Header.Set("X-Baton-User", "ada")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Skip("the client refused the URL")
		}
		checkNoServerError(t, resp)
	})
}
