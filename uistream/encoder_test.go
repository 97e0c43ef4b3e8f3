package uistream

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/uistream/uistreamtest"
)

func streamTextEvent(text string, partial bool) *session.Event {
	return &session.Event{
		InvocationID: "inv-1",
		Author:       "assistant",
		LLMResponse: model.LLMResponse{
			Content: genai.NewContentFromText(text, genai.RoleModel),
			Partial: partial,
		},
	}
}

func streamCallEvent(calls ...*genai.FunctionCall) *session.Event {
	ev := &session.Event{
		InvocationID: "inv-1",
		Author:       "assistant",
		LLMResponse:  model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel}},
	}
	for _, c := range calls {
		ev.Content.Parts = append(ev.Content.Parts, &genai.Part{FunctionCall: c})
	}
	return ev
}

func streamResponseEvent(resps ...*genai.FunctionResponse) *session.Event {
	ev := &session.Event{
		InvocationID: "inv-1",
		Author:       "assistant",
		LLMResponse:  model.LLMResponse{Content: &genai.Content{Role: genai.RoleUser}},
	}
	for _, r := range resps {
		ev.Content.Parts = append(ev.Content.Parts, &genai.Part{FunctionResponse: r})
	}
	return ev
}

// streamKinds classifies calls by tool name; unknown tools run on the server.
func streamKinds(kinds map[string]CallKind) func(*genai.FunctionCall) CallKind {
	return func(call *genai.FunctionCall) CallKind { return kinds[call.Name] }
}

// streamTurn writes events as one turn and returns the parsed chunks.
func streamTurn(t *testing.T, kind func(*genai.FunctionCall) CallKind, events ...*session.Event) []map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	s := newSSEEncoder(rec, "msg-1")
	if err := s.Start(); err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	for i, ev := range events {
		if err := s.Event(ev, kind); err != nil {
			t.Fatalf("Event(#%d) error = %v", i, err)
		}
	}
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish() error = %v", err)
	}
	return uistreamtest.Parse(t, rec.Body.String())
}

func TestEncoderText(t *testing.T) {
	thought := streamTextEvent("thinking about it", true)
	thought.Content.Parts[0].Thought = true

	tests := []struct {
		name      string
		events    []*session.Event
		wantTypes []string
		wantText  string
		// wantReasoning is the thought summary the stream carries.
		wantReasoning string
	}{
		{
			name: "streamed then final",
			events: []*session.Event{
				streamTextEvent("Hel", true),
				thought,
				streamTextEvent("lo ", true),
				streamTextEvent("world", true),
				streamTextEvent("Hello world", false),
			},
			wantTypes: []string{"start", "start-step", "text-start", "text-delta", "reasoning-start", "reasoning-delta",
				"text-delta", "text-delta", "reasoning-end", "text-end", "finish-step", "finish", "[DONE]"},
			wantText:      "Hello world",
			wantReasoning: "thinking about it",
		},
		{
			name:      "final only",
			events:    []*session.Event{streamTextEvent("Hello world", false)},
			wantTypes: []string{"start", "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish", "[DONE]"},
			wantText:  "Hello world",
		},
		{
			name:      "final extends the streamed text",
			events:    []*session.Event{streamTextEvent("Hello", true), streamTextEvent("Hello world", false)},
			wantTypes: []string{"start", "start-step", "text-start", "text-delta", "text-delta", "text-end", "finish-step", "finish", "[DONE]"},
			wantText:  "Hello world",
		},
		{
			name:      "final rewritten by a callback",
			events:    []*session.Event{streamTextEvent("Hello", true), streamTextEvent("[redacted]", false)},
			wantTypes: []string{"start", "start-step", "text-start", "text-delta", "text-end", "text-start", "text-delta", "text-end", "finish-step", "finish", "[DONE]"},
			wantText:  "Hello[redacted]",
		},
		{
			name:      "partial never finalized",
			events:    []*session.Event{streamTextEvent("Hel", true)},
			wantTypes: []string{"start", "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish", "[DONE]"},
			wantText:  "Hel",
		},
		{
			name: "two responses",
			events: []*session.Event{
				streamTextEvent("One", true), streamTextEvent("One", false),
				streamTextEvent("Two", true), streamTextEvent("Two", false),
			},
			wantTypes: []string{
				"start",
				"start-step", "text-start", "text-delta", "text-end", "finish-step",
				"start-step", "text-start", "text-delta", "text-end", "finish-step",
				"finish", "[DONE]",
			},
			wantText: "OneTwo",
		},
		{
			name:          "thought only",
			events:        []*session.Event{thought},
			wantTypes:     []string{"start", "start-step", "reasoning-start", "reasoning-delta", "reasoning-end", "finish-step", "finish", "[DONE]"},
			wantReasoning: "thinking about it",
		},
		{
			name: "final thought and text, not streamed",
			events: []*session.Event{{Author: "assistant", LLMResponse: model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel,
				Parts: []*genai.Part{{Text: "weighing it", Thought: true}, {Text: "Done."}}}}}},
			wantTypes:     []string{"start", "start-step", "reasoning-start", "reasoning-delta", "reasoning-end", "text-start", "text-delta", "text-end", "finish-step", "finish", "[DONE]"},
			wantText:      "Done.",
			wantReasoning: "weighing it",
		},
		{
			name:      "event without parts",
			events:    []*session.Event{{Author: "assistant", LLMResponse: model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel}}}},
			wantTypes: []string{"start", "finish", "[DONE]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := streamTurn(t, nil, tt.events...)
			uistreamtest.Check(t, chunks)
			if diff := cmp.Diff(tt.wantTypes, uistreamtest.Types(chunks)); diff != "" {
				t.Errorf("chunk types mismatch (-want +got):\n%s", diff)
			}
			if got := uistreamtest.Reasoning(chunks); got != tt.wantReasoning {
				t.Errorf("streamed reasoning = %q, want %q", got, tt.wantReasoning)
			}
			if got := uistreamtest.Text(chunks); got != tt.wantText {
				t.Errorf("streamed text = %q, want %q", got, tt.wantText)
			}
			if start := chunks[0]; start["messageId"] != "msg-1" {
				t.Errorf("start chunk = %v, want messageId msg-1", start)
			}
		})
	}
}

func TestEncoderParallelAgents(t *testing.T) {
	// Two agents stream at once. B's final arrives after A's response
	// completed the step and ends B's open part there; A's next response
	// starts a new step. Nothing streamed is repeated.
	a := func(text string, partial bool) *session.Event {
		ev := streamTextEvent(text, partial)
		ev.Author, ev.Branch = "a", "root.a"
		return ev
	}
	b := func(text string, partial bool) *session.Event {
		ev := streamTextEvent(text, partial)
		ev.Author, ev.Branch = "b", "root.b"
		return ev
	}
	c := func(text string, partial bool) *session.Event {
		ev := streamTextEvent(text, partial)
		ev.Author, ev.Branch = "c", "root.c"
		return ev
	}
	chunks := streamTurn(t, nil,
		a("A1", true), b("B", true), a("A1", false),
		b("Bee", false), a("A2", true), a("A2", false),
		// C's part is closed by the step A4 starts; C's final sends the rest
		// as a new part.
		c("C", true), a("A3", true), a("A3", false), a("A4", true), c("Cee", false), a("A4", false),
	)
	uistreamtest.Check(t, chunks)
	var got []string
	for _, c := range uistreamtest.OfType(chunks, "text-delta") {
		got = append(got, c["delta"].(string))
	}
	want := []string{"A1", "B", "ee", "A2", "C", "A3", "A4", "ee"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("text deltas mismatch (-want +got):\n%s", diff)
	}
}

func TestEncoderUserTextNotEchoed(t *testing.T) {
	user := streamTextEvent("hi", false)
	user.Author = "user"
	user.Content.Role = genai.RoleUser
	chunks := streamTurn(t, nil, user)
	uistreamtest.Check(t, chunks)
	if got := uistreamtest.Text(chunks); got != "" {
		t.Errorf("streamed text = %q, want none", got)
	}
}

func TestEncoderBrowserCall(t *testing.T) {
	call := &genai.FunctionCall{ID: "call-1", Name: "play_music", Args: map[string]any{"song": "Blue"}}
	callEv := streamCallEvent(call)
	callEv.LongRunningToolIDs = []string{"call-1"}
	// Streamed partial carrying the call too: calls are read from final events only.
	partialEv := streamCallEvent(call)
	partialEv.Partial = true
	placeholder := streamResponseEvent(&genai.FunctionResponse{ID: "call-1", Name: "play_music", Response: map[string]any{"status": "pending"}})

	for _, kind := range []CallKind{CallBrowser, CallExternal} {
		chunks := streamTurn(t, streamKinds(map[string]CallKind{"play_music": kind}), partialEv, callEv, placeholder)
		uistreamtest.Check(t, chunks)
		want := []string{"start", "start-step", "tool-input-available", "finish-step", "finish", "[DONE]"}
		if diff := cmp.Diff(want, uistreamtest.Types(chunks)); diff != "" {
			t.Errorf("kind %d: chunk types mismatch (-want +got):\n%s", kind, diff)
		}
		wantInput := map[string]any{"type": "tool-input-available", "toolCallId": "call-1", "toolName": "play_music", "input": map[string]any{"song": "Blue"}}
		if diff := cmp.Diff(wantInput, chunks[2]); diff != "" {
			t.Errorf("kind %d: tool-input-available mismatch (-want +got):\n%s", kind, diff)
		}
	}
}

func TestEncoderServerCall(t *testing.T) {
	tests := []struct {
		name       string
		response   map[string]any
		wantResult map[string]any
	}{
		{
			name:       "output",
			response:   map[string]any{"temp": 21.5},
			wantResult: map[string]any{"type": "tool-output-available", "toolCallId": "call-1", "output": map[string]any{"temp": 21.5}},
		},
		{
			name:       "error",
			response:   map[string]any{"error": "city not found"},
			wantResult: map[string]any{"type": "tool-output-error", "toolCallId": "call-1", "errorText": "city not found"},
		},
		{
			name:       "error value",
			response:   map[string]any{"error": errors.New("boom")},
			wantResult: map[string]any{"type": "tool-output-error", "toolCallId": "call-1", "errorText": "boom"},
		},
		{
			name:       "empty response",
			response:   nil,
			wantResult: map[string]any{"type": "tool-output-available", "toolCallId": "call-1", "output": map[string]any{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := streamTurn(t, nil,
				streamCallEvent(&genai.FunctionCall{ID: "call-1", Name: "weather", Args: map[string]any{"city": "Oslo"}}),
				streamResponseEvent(&genai.FunctionResponse{ID: "call-1", Name: "weather", Response: tt.response}),
				streamTextEvent("It is mild.", false),
			)
			uistreamtest.Check(t, chunks)
			want := []string{
				"start",
				"start-step", "tool-input-available", tt.wantResult["type"].(string), "finish-step",
				"start-step", "text-start", "text-delta", "text-end", "finish-step",
				"finish", "[DONE]",
			}
			if diff := cmp.Diff(want, uistreamtest.Types(chunks)); diff != "" {
				t.Fatalf("chunk types mismatch (-want +got):\n%s", diff)
			}
			wantInput := map[string]any{"type": "tool-input-available", "toolCallId": "call-1", "toolName": "weather", "input": map[string]any{"city": "Oslo"}}
			if diff := cmp.Diff(wantInput, chunks[2]); diff != "" {
				t.Errorf("tool-input-available mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantResult, chunks[3]); diff != "" {
				t.Errorf("tool result mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncoderApproval(t *testing.T) {
	original := &genai.FunctionCall{ID: "call-1", Name: "transfer", Args: map[string]any{"amount": 100.0}}
	confirmation := &toolconfirmation.ToolConfirmation{Hint: "Send 100?"}
	// As ADK builds it in memory.
	typed := &genai.FunctionCall{ID: "confirm-1", Name: toolconfirmation.FunctionCallName, Args: map[string]any{
		"originalFunctionCall": original,
		"toolConfirmation":     confirmation,
	}}
	// As it comes back from storage, decoded from JSON.
	decoded := &genai.FunctionCall{ID: "confirm-1", Name: toolconfirmation.FunctionCallName, Args: map[string]any{
		"originalFunctionCall": map[string]any{"id": "call-1", "name": "transfer", "args": map[string]any{"amount": 100.0}},
		"toolConfirmation":     map[string]any{"hint": "Send 100?", "confirmed": false},
	}}
	// ADK's response to the gated call while it waits for confirmation.
	pausedResponse := streamResponseEvent(&genai.FunctionResponse{ID: "call-1", Name: "transfer", Response: map[string]any{"error": "requires confirmation"}})
	pausedResponse.Actions.RequestedToolConfirmations = map[string]toolconfirmation.ToolConfirmation{"call-1": *confirmation}

	wantInput := map[string]any{"type": "tool-input-available", "toolCallId": "call-1", "toolName": "transfer", "input": map[string]any{"amount": 100.0}}
	wantApproval := map[string]any{"type": "tool-approval-request", "approvalId": "confirm-1", "toolCallId": "call-1"}

	tests := []struct {
		name   string
		events []*session.Event
	}{
		{
			name:   "whole flow",
			events: []*session.Event{streamCallEvent(original), pausedResponse, streamCallEvent(typed)},
		},
		{
			name:   "confirmation only, decoded",
			events: []*session.Event{streamCallEvent(decoded)},
		},
		{
			name: "confirmation response is never sent",
			events: []*session.Event{
				streamCallEvent(typed),
				streamResponseEvent(&genai.FunctionResponse{ID: "confirm-1", Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": true}}),
				streamResponseEvent(&genai.FunctionResponse{ID: "call-1", Name: "transfer", Response: map[string]any{"status": "pending"}}),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The kind function says Server for the gated tool; the
			// confirmation call is recognized by name whatever it says.
			chunks := streamTurn(t, func(*genai.FunctionCall) CallKind { return CallServer }, tt.events...)
			uistreamtest.Check(t, chunks)
			want := []string{"start", "start-step", "tool-input-available", "tool-approval-request", "finish-step", "finish", "[DONE]"}
			if diff := cmp.Diff(want, uistreamtest.Types(chunks)); diff != "" {
				t.Fatalf("chunk types mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantInput, chunks[2]); diff != "" {
				t.Errorf("tool-input-available mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantApproval, chunks[3]); diff != "" {
				t.Errorf("tool-approval-request mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncoderResumedResult(t *testing.T) {
	// The resumed turn replays the real result of a call sent by an earlier
	// stream: the client already holds that tool part.
	result := streamResponseEvent(&genai.FunctionResponse{ID: "call-1", Name: "play_music", Response: map[string]any{"played": true}})
	result.Author = "user"
	chunks := streamTurn(t, streamKinds(map[string]CallKind{"play_music": CallBrowser}), result, streamTextEvent("Enjoy!", false))
	uistreamtest.Check(t, chunks, "call-1")
	want := []string{
		"start",
		"start-step", "tool-output-available", "finish-step",
		"start-step", "text-start", "text-delta", "text-end", "finish-step",
		"finish", "[DONE]",
	}
	if diff := cmp.Diff(want, uistreamtest.Types(chunks)); diff != "" {
		t.Errorf("chunk types mismatch (-want +got):\n%s", diff)
	}
}

func TestEncoderTextWithCalls(t *testing.T) {
	ev := streamCallEvent(
		&genai.FunctionCall{ID: "call-1", Name: "weather", Args: map[string]any{"city": "Oslo"}},
		&genai.FunctionCall{ID: "call-2", Name: "play_music", Args: map[string]any{"song": "Blue"}},
	)
	ev.Content.Parts = append([]*genai.Part{{Text: "Checking."}}, ev.Content.Parts...)
	chunks := streamTurn(t, streamKinds(map[string]CallKind{"play_music": CallBrowser}),
		streamTextEvent("Check", true),
		ev,
		streamResponseEvent(
			&genai.FunctionResponse{ID: "call-1", Name: "weather", Response: map[string]any{"temp": 3.0}},
			&genai.FunctionResponse{ID: "call-2", Name: "play_music", Response: map[string]any{"status": "pending"}},
		),
	)
	uistreamtest.Check(t, chunks)
	want := []string{
		"start", "start-step",
		"text-start", "text-delta", "text-delta", "text-end",
		"tool-input-available", "tool-input-available", "tool-output-available",
		"finish-step", "finish", "[DONE]",
	}
	if diff := cmp.Diff(want, uistreamtest.Types(chunks)); diff != "" {
		t.Errorf("chunk types mismatch (-want +got):\n%s", diff)
	}
	if got := uistreamtest.Text(chunks); got != "Checking." {
		t.Errorf("streamed text = %q, want %q", got, "Checking.")
	}
	if got := uistreamtest.OfType(chunks, "tool-output-available")[0]["toolCallId"]; got != "call-1" {
		t.Errorf("tool-output-available toolCallId = %v, want call-1", got)
	}
}

func TestEncoderDataAndError(t *testing.T) {
	rec := httptest.NewRecorder()
	s := newSSEEncoder(rec, "")
	if err := s.Data("agent", map[string]any{"from": "a", "to": "b"}); err != nil {
		t.Fatalf("Data() error = %v", err)
	}
	if err := s.Error("The assistant is unavailable."); err != nil {
		t.Fatalf("Error() error = %v", err)
	}
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish() error = %v", err)
	}
	chunks := uistreamtest.Parse(t, rec.Body.String())
	uistreamtest.Check(t, chunks)
	want := []map[string]any{
		{"type": "start"},
		{"type": "data-agent", "data": map[string]any{"from": "a", "to": "b"}},
		{"type": "error", "errorText": "The assistant is unavailable."},
		{"type": "finish"},
		{"type": "[DONE]"},
	}
	if diff := cmp.Diff(want, chunks); diff != "" {
		t.Errorf("chunks mismatch (-want +got):\n%s", diff)
	}

	if err := newSSEEncoder(httptest.NewRecorder(), "").Data("", 1); err == nil {
		t.Errorf("Data(\"\") error = nil, want an error")
	}
	if err := newSSEEncoder(httptest.NewRecorder(), "").Data("x", math.NaN()); err == nil {
		t.Errorf("Data(NaN) error = nil, want an error")
	}
}

func TestEncoderKeepAlive(t *testing.T) {
	rec := httptest.NewRecorder()
	s := newSSEEncoder(rec, "msg-1")
	if err := s.KeepAlive(); err != nil {
		t.Fatalf("KeepAlive() error = %v", err)
	}
	if got := rec.Body.String(); got != ": keep-alive\n\n" {
		t.Errorf("body after KeepAlive = %q, want the comment line", got)
	}
	if !rec.Flushed {
		t.Errorf("KeepAlive did not flush")
	}
	if err := s.Event(streamTextEvent("Hi", false), nil); err != nil {
		t.Fatalf("Event() error = %v", err)
	}
	if err := s.KeepAlive(); err != nil {
		t.Fatalf("KeepAlive() error = %v", err)
	}
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish() error = %v", err)
	}
	body := rec.Body.String()
	if n := strings.Count(body, ": keep-alive\n\n"); n != 2 {
		t.Errorf("body has %d keep-alive comments, want 2", n)
	}
	chunks := uistreamtest.Parse(t, body)
	uistreamtest.Check(t, chunks)
	if got := uistreamtest.Text(chunks); got != "Hi" {
		t.Errorf("streamed text = %q, want Hi", got)
	}
}

func TestEncoderHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	s := newSSEEncoder(rec, "msg-1")
	if len(rec.Header()) != 0 || rec.Body.Len() != 0 {
		t.Fatalf("NewStreamWriter wrote headers %v or body %q before the first chunk", rec.Header(), rec.Body.String())
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("second Start() error = %v", err)
	}
	if rec.Code != http.StatusOK {
		t.Errorf("status = %d, want 200", rec.Code)
	}
	want := map[string]string{
		"Content-Type":                  "text/event-stream",
		"Cache-Control":                 "no-cache",
		"Connection":                    "keep-alive",
		"X-Vercel-Ai-Ui-Message-Stream": "v1",
		"X-Accel-Buffering":             "no",
	}
	for k, v := range want {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if !rec.Flushed {
		t.Errorf("Start did not flush")
	}
	if got := rec.Body.String(); got != "data: {\"type\":\"start\",\"messageId\":\"msg-1\"}\n\n" {
		t.Errorf("body = %q, want one start chunk", got)
	}
}

func TestEncoderFinish(t *testing.T) {
	rec := httptest.NewRecorder()
	s := newSSEEncoder(rec, "msg-1")
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish() error = %v", err)
	}
	if !strings.HasSuffix(rec.Body.String(), "data: {\"type\":\"finish\"}\n\ndata: [DONE]\n\n") {
		t.Errorf("body = %q, want finish then [DONE] at the end", rec.Body.String())
	}
	uistreamtest.Check(t, uistreamtest.Parse(t, rec.Body.String()))
	for name, call := range map[string]func() error{
		"Start":     s.Start,
		"Event":     func() error { return s.Event(streamTextEvent("late", false), nil) },
		"Data":      func() error { return s.Data("x", 1) },
		"Error":     func() error { return s.Error("late") },
		"KeepAlive": s.KeepAlive,
		"Finish":    s.Finish,
	} {
		if err := call(); !errors.Is(err, ErrFinished) {
			t.Errorf("%s() after Finish error = %v, want ErrFinished", name, err)
		}
	}
}

// streamFailingWriter is a ResponseWriter whose client has gone away.
type streamFailingWriter struct {
	header http.Header
	writes int
}

var errStreamTestGone = errors.New("client gone")

func (w *streamFailingWriter) Header() http.Header { return w.header }
func (w *streamFailingWriter) WriteHeader(int)     {}
func (w *streamFailingWriter) Write([]byte) (int, error) {
	w.writes++
	return 0, errStreamTestGone
}

func TestEncoderWriteError(t *testing.T) {
	w := &streamFailingWriter{header: make(http.Header)}
	s := newSSEEncoder(w, "msg-1")
	if err := s.Event(streamTextEvent("Hi", false), nil); !errors.Is(err, errStreamTestGone) {
		t.Fatalf("Event() error = %v, want the write error", err)
	}
	if err := s.KeepAlive(); !errors.Is(err, errStreamTestGone) {
		t.Errorf("KeepAlive() after a failed write error = %v, want the write error", err)
	}
	if err := s.Finish(); !errors.Is(err, errStreamTestGone) {
		t.Errorf("Finish() after a failed write error = %v, want the write error", err)
	}
	if w.writes != 1 {
		t.Errorf("writes = %d, want 1 (no writes after the first failure)", w.writes)
	}
}

func TestEncoderUnencodableInput(t *testing.T) {
	rec := httptest.NewRecorder()
	s := newSSEEncoder(rec, "msg-1")
	err := s.Event(streamCallEvent(&genai.FunctionCall{ID: "call-1", Name: "weather", Args: map[string]any{"x": math.Inf(1)}}), nil)
	if err == nil {
		t.Errorf("Event() with an unencodable argument error = nil, want an error")
	}
	if err := s.Event(streamResponseEvent(&genai.FunctionResponse{ID: "call-1", Name: "weather", Response: map[string]any{"ok": true}}), nil); err != nil {
		t.Fatalf("Event() error = %v", err)
	}
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish() error = %v", err)
	}
	chunks := uistreamtest.Parse(t, rec.Body.String())
	uistreamtest.Check(t, chunks)
	inputs := uistreamtest.OfType(chunks, "tool-input-available")
	if len(inputs) != 1 || inputs[0]["input"] != nil {
		t.Errorf("tool-input-available chunks = %v, want one with input null", inputs)
	}
}

func TestEncoderConcurrentKeepAlive(t *testing.T) {
	rec := httptest.NewRecorder()
	s := newSSEEncoder(rec, "msg-1")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = s.KeepAlive()
			}
		}
	}()
	var want strings.Builder
	for i := range 200 {
		text := string(rune('a' + i%26))
		want.WriteString(text)
		if err := s.Event(streamTextEvent(text, true), nil); err != nil {
			t.Fatalf("Event() error = %v", err)
		}
	}
	if err := s.Event(streamTextEvent(want.String(), false), nil); err != nil {
		t.Fatalf("Event() error = %v", err)
	}
	close(stop)
	wg.Wait()
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish() error = %v", err)
	}
	chunks := uistreamtest.Parse(t, rec.Body.String())
	uistreamtest.Check(t, chunks)
	if got := uistreamtest.Text(chunks); got != want.String() {
		t.Errorf("streamed text = %q, want %q", got, want.String())
	}
}

// sseEncoder is an Encoder writing Server-Sent Events, with the SSE sink's
// KeepAlive at hand.
type sseEncoder struct {
	*Encoder
	sse *SSE
}

func newSSEEncoder(w http.ResponseWriter, messageID string) sseEncoder {
	sse := NewSSE(w)
	return sseEncoder{NewEncoder(sse, messageID), sse}
}

func (e sseEncoder) KeepAlive() error { return e.sse.KeepAlive() }

// The collected chunks are the streamed ones, [DONE] aside, in order.
func TestCollectorMatchesSSE(t *testing.T) {
	call := &genai.FunctionCall{ID: "call-1", Name: "weather", Args: map[string]any{"city": "Oslo"}}
	events := []*session.Event{
		streamTextEvent("Check", true),
		streamTextEvent("Checking.", false),
		streamCallEvent(call),
		streamResponseEvent(&genai.FunctionResponse{ID: "call-1", Name: "weather", Response: map[string]any{"temp": 21.5}}),
		streamTextEvent("Mild.", false),
	}
	rec := httptest.NewRecorder()
	collected := &Collector{}
	for _, enc := range []*Encoder{newSSEEncoder(rec, "msg-1").Encoder, NewEncoder(collected, "msg-1")} {
		if err := enc.Data("agent", map[string]any{"to": "dj"}); err != nil {
			t.Fatalf("Data() error = %v", err)
		}
		for _, ev := range events {
			if err := enc.Event(ev, nil); err != nil {
				t.Fatalf("Event() error = %v", err)
			}
		}
		if err := enc.Finish(); err != nil {
			t.Fatalf("Finish() error = %v", err)
		}
	}
	streamed := uistreamtest.Parse(t, rec.Body.String())
	raw, err := json.Marshal(collected.Chunks)
	if err != nil {
		t.Fatalf("marshal collected chunks: %v", err)
	}
	var got []map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("unmarshal collected chunks: %v", err)
	}
	if diff := cmp.Diff(streamed[:len(streamed)-1], got); diff != "" {
		t.Errorf("collected chunks differ from the stream's (-want +got):\n%s", diff)
	}
}

// TestEncoderSetMessageID: the start chunk carries the id set last
// before it; once it is written the id cannot change.
func TestEncoderSetMessageID(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	s := newSSEEncoder(rec, "msg-1")
	if err := s.SetMessageID("e-turn"); err != nil {
		t.Fatalf("SetMessageID() before start error = %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMessageID("e-other"); !errors.Is(err, ErrStarted) {
		t.Errorf("SetMessageID() after start error = %v, want ErrStarted", err)
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	if start := uistreamtest.Parse(t, rec.Body.String())[0]; start["messageId"] != "e-turn" {
		t.Errorf("start chunk = %v, want messageId e-turn", start)
	}
}
