package functions

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/uistream/uistreamtest"
)

// TestBrowserFlow: Turn streams until the browser tool's request, the
// browser posts the result, and the resumed stream carries the answer.
func TestBrowserFlow(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.EchoReply,
	)
	chunks := f.stream(f.turn("ada", "s1", "tab-a", "change the music to track 2"))
	inputs := chunksOfType(chunks, "tool-input-available")
	if len(inputs) != 1 || inputs[0]["toolCallId"] != "c1" || inputs[0]["toolName"] != "change_bgm" {
		t.Fatalf("tool-input-available chunks = %v, want one for c1", inputs)
	}
	if out := chunksOfType(chunks, "tool-output-available"); len(out) != 0 {
		t.Errorf("the browser tool's placeholder reached the client: %v", out)
	}
	if agent := chunksOfType(chunks, "data-agent"); len(agent) != 1 || agent[0]["data"].(map[string]any)["to"] != "assistant" {
		t.Errorf("data-agent chunks = %v, want one naming the active agent", agent)
	}
	resp := f.do(http.MethodPost, NameToolResult, f.token("ada"),
		map[string]any{"sessionId": "s1", "toolCallId": "c1", "clientId": "tab-a", "output": map[string]any{"playing": 2}}, nil)
	resumed := f.stream(resp, "c1")
	if got := text(resumed); !strings.Contains(got, `change_bgm={"playing":2}`) {
		t.Errorf("resumed stream text = %q, want the model's answer about the browser's output", got)
	}
}

func TestApprovalFlow(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		t.Run(strconv.FormatBool(approve), func(t *testing.T) {
			t.Parallel()
			f := newHTTPFixture(t, nil,
				modeltest.CallReply(modeltest.Call("b1", "book_table", map[string]any{"people": 4})),
				modeltest.EchoReply,
			)
			chunks := f.stream(f.turn("ada", "s1", "tab-a", "book a table for 4"))
			reqs := chunksOfType(chunks, "tool-approval-request")
			if len(reqs) != 1 || reqs[0]["toolCallId"] != "b1" {
				t.Fatalf("tool-approval-request chunks = %v, want one for b1", reqs)
			}
			approvalID := reqs[0]["approvalId"].(string)
			body := map[string]any{"sessionId": "s1", "toolCallId": approvalID, "clientId": "tab-a", "approved": approve}
			if approve {
				body["payload"] = map[string]any{"people": 6}
			}
			resumed := f.stream(f.do(http.MethodPost, NameToolResult, f.token("ada"), body, nil), "b1")
			want, runs := `book_table={"error":`, int32(0)
			if approve {
				want, runs = `book_table={"booked":true,"people":6}`, 1
			}
			if got := text(resumed); !strings.Contains(got, want) {
				t.Errorf("resumed text = %q, want %q", got, want)
			}
			if f.booked.Load() != runs {
				t.Errorf("tool ran %d times, want %d", f.booked.Load(), runs)
			}
		})
	}
}

// TestJSONTurn asks for the turn as one JSON document.
func TestJSONTurn(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.TextReply("Hello there."))
	resp := f.do(http.MethodPost, NameTurn, f.token("ada"), map[string]any{"sessionId": "s1", "clientId": "tab-a", "text": "hi"},
		map[string]string{"Accept": "application/json"})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, Content-Type %q; want 200 JSON", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc struct {
		MessageID string           `json:"messageId"`
		Chunks    []map[string]any `json:"chunks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	uistreamtest.Check(t, append(doc.Chunks, map[string]any{"type": "[DONE]"}))
	if doc.MessageID == "" || text(doc.Chunks) != "Hello there." {
		t.Errorf("JSON turn = %+v, want the model's text", doc)
	}
}

// pausedHTTP returns a fixture whose session s1 (user ada) has call c1
// pending for tab-a, and whose model then echoes.
func pausedHTTP(t *testing.T, mutate func(*Config)) *httpFixture {
	t.Helper()
	f := newHTTPFixture(t, mutate,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.EchoReply, modeltest.EchoReply,
	)
	f.stream(f.turn("ada", "s1", "tab-a", "track 2"))
	return f
}

// TestStatusCodes sends one request per error the functions answer and
// checks the status, the JSON body and that nothing was written.
func TestStatusCodes(t *testing.T) {
	t.Parallel()
	f := pausedHTTP(t, func(c *Config) { c.MaxBodyBytes = 1 << 20 })
	ada, bob := f.token("ada"), f.token("bob")
	answer := func(extra map[string]any) map[string]any {
		b := map[string]any{"sessionId": "s1", "toolCallId": "c1", "clientId": "tab-a", "output": map[string]any{"playing": 2}}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	tests := []struct {
		name     string
		method   string
		fn       string
		token    string
		body     any
		header   map[string]string
		query    string
		want     int
		wantCode string
	}{
		{"malformed json", "POST", NameTurn, ada, "{", nil, "", 400, "invalid_request"},
		{"unknown field", "POST", NameTurn, ada, map[string]any{"sessionId": "s1", "clientId": "tab-a", "text": "hi", "userId": "mallory"}, nil, "", 400, "invalid_request"},
		{"invalid session id", "POST", NameTurn, ada, map[string]any{"sessionId": "a/b", "clientId": "tab-a", "text": "hi"}, nil, "", 400, "invalid_request"},
		{"missing client id", "POST", NameTurn, ada, map[string]any{"sessionId": "s2", "text": "hi"}, nil, "", 400, "invalid_request"},
		{"text and parts", "POST", NameTurn, ada, map[string]any{"sessionId": "s2", "clientId": "tab-a", "text": "hi", "parts": []any{map[string]any{"text": "x"}}}, nil, "", 400, "invalid_request"},
		{"unknown agent", "POST", NameTurn, ada, map[string]any{"sessionId": "s2", "clientId": "tab-a", "text": "hi", "agent": "dj"}, nil, "", 400, "unknown_agent"},
		{"two answers", "POST", NameToolResult, ada, answer(map[string]any{"error": "also"}), nil, "", 400, "invalid_request"},
		{"missing token", "POST", NameTurn, "", map[string]any{"sessionId": "s2", "clientId": "tab-a", "text": "hi"}, nil, "", 401, "unauthenticated"},
		{"garbage token", "POST", NameTurn, "not.a.jwt", map[string]any{"sessionId": "s2", "clientId": "tab-a", "text": "hi"}, nil, "", 401, "unauthenticated"},
		{"forged call token", "POST", NameToolResult, "", map[string]any{"token": "e30.AAAA", "output": map[string]any{}}, nil, "", 401, "unauthenticated"},
		{"unknown call", "POST", NameToolResult, ada, answer(map[string]any{"toolCallId": "c9"}), nil, "", 404, "not_found"},
		{"other user's call", "POST", NameToolResult, bob, answer(nil), nil, "", 404, "not_found"},
		{"other user's pending", "GET", NamePending, bob, nil, nil, "?sessionId=s1&clientId=tab-a", 404, "not_found"},
		{"unknown session pending", "GET", NamePending, ada, nil, nil, "?sessionId=nope&clientId=tab-a", 404, "not_found"},
		{"wrong client", "POST", NameToolResult, ada, answer(map[string]any{"clientId": "tab-b"}), nil, "", 403, "wrong_client"},
		{"GET Turn", "GET", NameTurn, ada, nil, nil, "", 405, "method_not_allowed"},
		{"POST Pending", "POST", NamePending, ada, map[string]any{}, nil, "", 405, "method_not_allowed"},
		{"body too large", "POST", NameTurn, ada, map[string]any{"sessionId": "s2", "clientId": "tab-a", "text": strings.Repeat("x", 2<<20)}, nil, "", 413, "too_large"},
		{"result too large", "POST", NameToolResult, ada, answer(map[string]any{"output": map[string]any{"blob": strings.Repeat("x", 300<<10)}}), nil, "", 413, "too_large"},
		{"text/plain", "POST", NameTurn, ada, "hello", map[string]string{"Content-Type": "text/plain"}, "", 415, "unsupported_media_type"},
		{"sweep without token", "POST", NameSweep, "", map[string]any{}, nil, "", 401, "unauthenticated"},
		{"sweep by a user", "POST", NameSweep, ada, map[string]any{}, nil, "", 401, "unauthenticated"},
	}
	for _, tc := range tests {
		before := f.counter.Snapshot()
		req, err := http.NewRequestWithContext(t.Context(), tc.method, f.srv.URL+"/"+tc.fn+tc.query, bodyReader(t, tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.want {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("%s: status %d, want %d: %s", tc.name, resp.StatusCode, tc.want, raw)
			continue
		}
		if e := errorOf(t, resp); e.Code != tc.wantCode || e.Message == "" {
			t.Errorf("%s: error = %+v, want code %s with a message", tc.name, e, tc.wantCode)
		}
		if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
			t.Errorf("%s: %d documents written, want 0", tc.name, w)
		}
	}

	// An identical retry after success gets 200 with the outcome; a
	// different answer gets 409 with the outcome.
	f.stream(f.do(http.MethodPost, NameToolResult, ada, answer(nil), nil), "c1")
	retry := f.do(http.MethodPost, NameToolResult, ada, answer(nil), nil)
	var ok toolResultResponse
	if err := json.NewDecoder(retry.Body).Decode(&ok); err != nil || retry.StatusCode != 200 || ok.Status != "already_resolved" || ok.Call.Answer == nil {
		t.Errorf("identical retry: status %d body %+v (%v), want 200 already_resolved with the outcome", retry.StatusCode, ok, err)
	}
	retry.Body.Close()
	conflict := f.do(http.MethodPost, NameToolResult, ada, answer(map[string]any{"output": map[string]any{"playing": 3}}), nil)
	if conflict.StatusCode != 409 {
		t.Errorf("different answer: status %d, want 409", conflict.StatusCode)
	}
	if e := errorOf(t, conflict); e.Code != "already_resolved" || e.Outcome == nil || e.Outcome.Status != "resolved" {
		t.Errorf("different answer: error %+v, want already_resolved with the outcome", e)
	}
}

func TestExpiredAndPendingPolicy(t *testing.T) {
	t.Parallel()
	t.Run("cancelled call answers 410", func(t *testing.T) {
		t.Parallel()
		f := pausedHTTP(t, nil)
		f.stream(f.turn("ada", "s1", "tab-a", "never mind"))
		before := f.counter.Snapshot()
		resp := f.do(http.MethodPost, NameToolResult, f.token("ada"),
			map[string]any{"sessionId": "s1", "toolCallId": "c1", "clientId": "tab-a", "output": map[string]any{}}, nil)
		if resp.StatusCode != http.StatusGone || errorOf(t, resp).Code != "expired" {
			t.Errorf("late answer: status %d, want 410 expired", resp.StatusCode)
		}
		if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
			t.Errorf("late answer wrote %d documents", w)
		}
	})
	t.Run("reject policy answers 409 with the calls", func(t *testing.T) {
		t.Parallel()
		f := pausedHTTP(t, func(c *Config) { c.PendingPolicy = "reject" })
		before := f.counter.Snapshot()
		resp := f.turn("ada", "s1", "tab-a", "something else")
		e := errorOf(t, resp)
		if resp.StatusCode != http.StatusConflict || e.Code != "pending_calls" || len(e.Calls) != 1 || e.Calls[0].ToolCallID != "c1" {
			t.Errorf("status %d error %+v, want 409 pending_calls listing c1", resp.StatusCode, e)
		}
		if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
			t.Errorf("refused turn wrote %d documents", w)
		}
	})
}

// TestConcurrentTurnsHTTP: two tabs send at once; one streams, the other
// is told to retry.
func TestConcurrentTurnsHTTP(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.TextReply("one"), modeltest.TextReply("two"))
	gate := make(chan struct{})
	f.model.Gate = gate
	first := make(chan *http.Response, 1)
	go func() { first <- f.turn("ada", "s1", "tab-a", "hello from tab-a") }()
	// The first turn holds the session, inside the model.
	polltest.Until(t, "the first turn to call the model", func() bool { return f.model.Calls() >= 1 })
	// The model is asked beside the commit that takes the lease: wait for
	// the chat that commit creates.
	polltest.Until(t, "the first turn's message stored", func() bool {
		resp := f.do(http.MethodGet, NameChat+"/s1", f.token("ada"), nil, nil)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	busy := f.turn("ada", "s1", "tab-b", "hello from tab-b")
	close(gate)
	ok := <-first
	if ok.StatusCode != http.StatusOK || busy.StatusCode != http.StatusConflict {
		t.Fatalf("statuses %d and %d, want 200 and 409", ok.StatusCode, busy.StatusCode)
	}
	f.stream(ok)
	if ra, err := strconv.Atoi(busy.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After = %q, want whole seconds", busy.Header.Get("Retry-After"))
	}
	if e := errorOf(t, busy); e.Code != "busy" || e.RetryAfterSeconds < 1 {
		t.Errorf("busy error = %+v", e)
	}
}

// TestTabReload: a reloaded tab finds its pending call through Pending and
// completes it; another tab is not offered it.
func TestTabReload(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2}), modeltest.Call("l1", "get_location", nil)),
		modeltest.EchoReply,
	)
	f.stream(f.turn("ada", "s1", "tab-a", "music and location"))
	list := func(client string) pendingResponse {
		resp := f.do(http.MethodGet, NamePending+"?sessionId=s1&clientId="+client, f.token("ada"), nil, nil)
		defer resp.Body.Close()
		var p pendingResponse
		if resp.StatusCode != 200 {
			t.Fatalf("Pending status %d", resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ids := func(p pendingResponse) string {
		var s []string
		for _, c := range p.Calls {
			s = append(s, c.ToolCallID)
		}
		return strings.Join(s, ",")
	}
	a := list("tab-a")
	if ids(a) != "c1,l1" {
		t.Errorf("Pending(tab-a) = %s, want c1,l1", ids(a))
	}
	if len(a.History) == 0 || a.History[0].Role != "user" || a.History[0].Text != "music and location" {
		t.Errorf("Pending history = %+v, want the conversation so far", a.History)
	}
	if got := ids(list("tab-b")); got != "l1" {
		t.Errorf("Pending(tab-b) = %s, want only the any-device call l1", got)
	}
	rec := f.do(http.MethodPost, NameToolResult, f.token("ada"),
		map[string]any{"sessionId": "s1", "toolCallId": "c1", "clientId": "tab-a", "output": map[string]any{"playing": 2}}, nil)
	var recorded toolResultResponse
	if err := json.NewDecoder(rec.Body).Decode(&recorded); err != nil || rec.StatusCode != http.StatusAccepted || len(recorded.Waiting) != 1 {
		t.Errorf("first answer: status %d %+v, want 202 waiting for l1", rec.StatusCode, recorded)
	}
	rec.Body.Close()
	resumed := f.stream(f.do(http.MethodPost, NameToolResult, f.token("ada"),
		map[string]any{"sessionId": "s1", "toolCallId": "l1", "clientId": "tab-b", "output": map[string]any{"city": "Lyon"}}, nil), "c1", "l1")
	if got := text(resumed); !strings.Contains(got, "Lyon") || !strings.Contains(got, "playing") {
		t.Errorf("resumed text = %q, want both answers", got)
	}
	if got := ids(list("tab-a")); got != "" {
		t.Errorf("Pending after completion = %s, want none", got)
	}
}

func bodyReader(t *testing.T, body any) io.Reader {
	t.Helper()
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		return strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		return strings.NewReader(string(raw))
	}
}
