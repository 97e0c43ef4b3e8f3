package functions

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
)

// parseSSE parses a Server-Sent Events body the way a browser does: events
// are separated by blank lines, the data: lines of one event are joined with
// "\n", comment lines (starting with ":") are ignored. Every event's data must
// be a JSON object with a string "type", or the literal [DONE], returned as
// {"type": "[DONE]"}.
func parseSSE(t *testing.T, body string) []map[string]any {
	t.Helper()
	body = strings.ReplaceAll(body, "\r\n", "\n")
	if body != "" && !strings.HasSuffix(body, "\n\n") {
		t.Errorf("SSE body does not end with a blank line: the last event would be dropped: %q", body)
	}
	var chunks []map[string]any
	for _, block := range strings.Split(body, "\n\n") {
		var data []string
		for _, line := range strings.Split(block, "\n") {
			switch {
			case line == "", strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			default:
				t.Errorf("unexpected SSE line %q", line)
			}
		}
		if data == nil {
			continue
		}
		payload := strings.Join(data, "\n")
		if payload == "[DONE]" {
			chunks = append(chunks, map[string]any{"type": "[DONE]"})
			continue
		}
		var chunk map[string]any
		if err := json.Unmarshal([]byte(payload), &chunk); err != nil {
			t.Fatalf("SSE data %q is not a JSON object: %v", payload, err)
		}
		if _, ok := chunk["type"].(string); !ok {
			t.Fatalf("SSE chunk %q has no string type", payload)
		}
		chunks = append(chunks, chunk)
	}
	return chunks
}

// streamChunkFields lists, per chunk type, the required and optional fields
// of uiMessageChunkSchema (AI SDK 6), whose objects are strict.
var streamChunkFields = map[string]struct{ required, optional []string }{
	"start":                 {optional: []string{"messageId", "messageMetadata"}},
	"finish":                {optional: []string{"finishReason", "messageMetadata"}},
	"start-step":            {},
	"finish-step":           {},
	"text-start":            {required: []string{"id"}, optional: []string{"providerMetadata"}},
	"text-delta":            {required: []string{"id", "delta"}, optional: []string{"providerMetadata"}},
	"text-end":              {required: []string{"id"}, optional: []string{"providerMetadata"}},
	"tool-input-available":  {required: []string{"toolCallId", "toolName", "input"}, optional: []string{"providerExecuted", "providerMetadata", "dynamic", "title"}},
	"tool-approval-request": {required: []string{"approvalId", "toolCallId"}},
	"tool-output-available": {required: []string{"toolCallId", "output"}, optional: []string{"providerExecuted", "dynamic", "preliminary"}},
	"tool-output-error":     {required: []string{"toolCallId", "errorText"}, optional: []string{"providerExecuted", "dynamic"}},
	"error":                 {required: []string{"errorText"}},
	"data-":                 {required: []string{"data"}, optional: []string{"id", "transient"}},
	"[DONE]":                {},
}

// checkUIStream checks chunks against the chunk schema and the rules the
// AI SDK client (processUIMessageStream) enforces, plus this encoder's own
// promises: start first, finish then [DONE] last, steps and text parts
// properly nested and closed, one tool-input-available per call, and tool
// results only for known calls. knownCalls are tool calls already in the
// client's message (a resumed turn).
func checkUIStream(t *testing.T, chunks []map[string]any, knownCalls ...string) {
	t.Helper()
	if len(chunks) < 3 {
		t.Fatalf("stream has %d chunks, want at least start, finish, [DONE]", len(chunks))
	}
	if typ := chunks[0]["type"]; typ != "start" {
		t.Errorf("first chunk type = %v, want start", typ)
	}
	if a, b := chunks[len(chunks)-2]["type"], chunks[len(chunks)-1]["type"]; a != "finish" || b != "[DONE]" {
		t.Errorf("last chunks = %v, %v, want finish, [DONE]", a, b)
	}
	tools := make(map[string]bool)
	for _, id := range knownCalls {
		tools[id] = true
	}
	inputs := make(map[string]bool)
	openText := make(map[string]bool)
	inStep := false
	for i, c := range chunks {
		typ := c["type"].(string)
		schemaType := typ
		if strings.HasPrefix(typ, "data-") && len(typ) > len("data-") {
			schemaType = "data-"
		}
		fields, ok := streamChunkFields[schemaType]
		if !ok {
			t.Errorf("chunk %d: unknown type %q", i, typ)
			continue
		}
		allowed := map[string]bool{"type": true}
		for _, f := range fields.required {
			allowed[f] = true
			if _, ok := c[f]; !ok {
				t.Errorf("chunk %d (%s): missing field %q", i, typ, f)
			}
		}
		for _, f := range fields.optional {
			allowed[f] = true
		}
		for f := range c {
			if !allowed[f] {
				t.Errorf("chunk %d (%s): field %q not in the schema", i, typ, f)
			}
		}
		for _, f := range []string{"id", "delta", "toolCallId", "toolName", "approvalId", "errorText", "messageId"} {
			if v, ok := c[f]; ok {
				if _, isString := v.(string); !isString {
					t.Errorf("chunk %d (%s): field %q = %v, want a string", i, typ, f, v)
				}
			}
		}
		if typ != "start" && i == 0 || typ == "start" && i != 0 {
			t.Errorf("chunk %d: start must come first and only once", i)
		}

		id, _ := c["id"].(string)
		callID, _ := c["toolCallId"].(string)
		switch typ {
		case "start-step":
			if inStep {
				t.Errorf("chunk %d: start-step inside a step", i)
			}
			inStep = true
		case "finish-step":
			if !inStep {
				t.Errorf("chunk %d: finish-step outside a step", i)
			}
			if len(openText) > 0 {
				t.Errorf("chunk %d: finish-step with open text parts %v", i, openText)
			}
			inStep = false
		case "finish":
			if inStep || len(openText) > 0 {
				t.Errorf("chunk %d: finish with an open step or text part", i)
			}
		case "text-start":
			if openText[id] {
				t.Errorf("chunk %d: text-start for open part %q", i, id)
			}
			openText[id] = true
		case "text-delta":
			if !openText[id] {
				t.Errorf("chunk %d: text-delta for part %q that is not open", i, id)
			}
			if c["delta"] == "" {
				t.Errorf("chunk %d: empty text-delta", i)
			}
		case "text-end":
			if !openText[id] {
				t.Errorf("chunk %d: text-end for part %q that is not open", i, id)
			}
			delete(openText, id)
		case "tool-input-available":
			if inputs[callID] {
				t.Errorf("chunk %d: second tool-input-available for %q", i, callID)
			}
			inputs[callID] = true
			tools[callID] = true
		case "tool-approval-request", "tool-output-available", "tool-output-error":
			if !tools[callID] {
				t.Errorf("chunk %d: %s for unknown tool call %q", i, typ, callID)
			}
		}
		if (strings.HasPrefix(typ, "text-") || strings.HasPrefix(typ, "tool-")) && !inStep {
			t.Errorf("chunk %d: %s outside a step", i, typ)
		}
	}
}

func streamChunkTypes(chunks []map[string]any) []string {
	types := make([]string, len(chunks))
	for i, c := range chunks {
		types[i] = c["type"].(string)
	}
	return types
}

// streamChunksOf returns the chunks of one type.
func streamChunksOf(chunks []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, c := range chunks {
		if c["type"] == typ {
			out = append(out, c)
		}
	}
	return out
}

// streamText joins the text deltas of a stream.
func streamText(chunks []map[string]any) string {
	var b strings.Builder
	for _, c := range streamChunksOf(chunks, "text-delta") {
		b.WriteString(c["delta"].(string))
	}
	return b.String()
}

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
	s := NewStreamWriter(rec, "msg-1")
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
	return parseSSE(t, rec.Body.String())
}

func TestStreamWriterText(t *testing.T) {
	thought := streamTextEvent("thinking about it", true)
	thought.Content.Parts[0].Thought = true

	tests := []struct {
		name      string
		events    []*session.Event
		wantTypes []string
		wantText  string
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
			wantTypes: []string{"start", "start-step", "text-start", "text-delta", "text-delta", "text-delta", "text-end", "finish-step", "finish", "[DONE]"},
			wantText:  "Hello world",
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
			name:      "thought only",
			events:    []*session.Event{thought},
			wantTypes: []string{"start", "finish", "[DONE]"},
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
			checkUIStream(t, chunks)
			if diff := cmp.Diff(tt.wantTypes, streamChunkTypes(chunks)); diff != "" {
				t.Errorf("chunk types mismatch (-want +got):\n%s", diff)
			}
			if got := streamText(chunks); got != tt.wantText {
				t.Errorf("streamed text = %q, want %q", got, tt.wantText)
			}
			if start := chunks[0]; start["messageId"] != "msg-1" {
				t.Errorf("start chunk = %v, want messageId msg-1", start)
			}
		})
	}
}

func TestStreamWriterParallelAgents(t *testing.T) {
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
	checkUIStream(t, chunks)
	var got []string
	for _, c := range streamChunksOf(chunks, "text-delta") {
		got = append(got, c["delta"].(string))
	}
	want := []string{"A1", "B", "ee", "A2", "C", "A3", "A4", "ee"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("text deltas mismatch (-want +got):\n%s", diff)
	}
}

func TestStreamWriterUserTextNotEchoed(t *testing.T) {
	user := streamTextEvent("hi", false)
	user.Author = "user"
	user.Content.Role = genai.RoleUser
	chunks := streamTurn(t, nil, user)
	checkUIStream(t, chunks)
	if got := streamText(chunks); got != "" {
		t.Errorf("streamed text = %q, want none", got)
	}
}

func TestStreamWriterBrowserCall(t *testing.T) {
	call := &genai.FunctionCall{ID: "call-1", Name: "play_music", Args: map[string]any{"song": "Blue"}}
	callEv := streamCallEvent(call)
	callEv.LongRunningToolIDs = []string{"call-1"}
	// Streamed partial carrying the call too: calls are read from final events only.
	partialEv := streamCallEvent(call)
	partialEv.Partial = true
	placeholder := streamResponseEvent(&genai.FunctionResponse{ID: "call-1", Name: "play_music", Response: map[string]any{"status": "pending"}})

	for _, kind := range []CallKind{CallBrowser, CallExternal} {
		chunks := streamTurn(t, streamKinds(map[string]CallKind{"play_music": kind}), partialEv, callEv, placeholder)
		checkUIStream(t, chunks)
		want := []string{"start", "start-step", "tool-input-available", "finish-step", "finish", "[DONE]"}
		if diff := cmp.Diff(want, streamChunkTypes(chunks)); diff != "" {
			t.Errorf("kind %d: chunk types mismatch (-want +got):\n%s", kind, diff)
		}
		wantInput := map[string]any{"type": "tool-input-available", "toolCallId": "call-1", "toolName": "play_music", "input": map[string]any{"song": "Blue"}}
		if diff := cmp.Diff(wantInput, chunks[2]); diff != "" {
			t.Errorf("kind %d: tool-input-available mismatch (-want +got):\n%s", kind, diff)
		}
	}
}

func TestStreamWriterServerCall(t *testing.T) {
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
			checkUIStream(t, chunks)
			want := []string{
				"start",
				"start-step", "tool-input-available", tt.wantResult["type"].(string), "finish-step",
				"start-step", "text-start", "text-delta", "text-end", "finish-step",
				"finish", "[DONE]",
			}
			if diff := cmp.Diff(want, streamChunkTypes(chunks)); diff != "" {
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

func TestStreamWriterApproval(t *testing.T) {
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
			checkUIStream(t, chunks)
			want := []string{"start", "start-step", "tool-input-available", "tool-approval-request", "finish-step", "finish", "[DONE]"}
			if diff := cmp.Diff(want, streamChunkTypes(chunks)); diff != "" {
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

func TestStreamWriterResumedResult(t *testing.T) {
	// The resumed turn replays the real result of a call sent by an earlier
	// stream: the client already holds that tool part.
	result := streamResponseEvent(&genai.FunctionResponse{ID: "call-1", Name: "play_music", Response: map[string]any{"played": true}})
	result.Author = "user"
	chunks := streamTurn(t, streamKinds(map[string]CallKind{"play_music": CallBrowser}), result, streamTextEvent("Enjoy!", false))
	checkUIStream(t, chunks, "call-1")
	want := []string{
		"start",
		"start-step", "tool-output-available", "finish-step",
		"start-step", "text-start", "text-delta", "text-end", "finish-step",
		"finish", "[DONE]",
	}
	if diff := cmp.Diff(want, streamChunkTypes(chunks)); diff != "" {
		t.Errorf("chunk types mismatch (-want +got):\n%s", diff)
	}
}

func TestStreamWriterTextWithCalls(t *testing.T) {
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
	checkUIStream(t, chunks)
	want := []string{
		"start", "start-step",
		"text-start", "text-delta", "text-delta", "text-end",
		"tool-input-available", "tool-input-available", "tool-output-available",
		"finish-step", "finish", "[DONE]",
	}
	if diff := cmp.Diff(want, streamChunkTypes(chunks)); diff != "" {
		t.Errorf("chunk types mismatch (-want +got):\n%s", diff)
	}
	if got := streamText(chunks); got != "Checking." {
		t.Errorf("streamed text = %q, want %q", got, "Checking.")
	}
	if got := streamChunksOf(chunks, "tool-output-available")[0]["toolCallId"]; got != "call-1" {
		t.Errorf("tool-output-available toolCallId = %v, want call-1", got)
	}
}

func TestStreamWriterDataAndError(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewStreamWriter(rec, "")
	if err := s.Data("agent", map[string]any{"from": "a", "to": "b"}); err != nil {
		t.Fatalf("Data() error = %v", err)
	}
	if err := s.Error("The assistant is unavailable."); err != nil {
		t.Fatalf("Error() error = %v", err)
	}
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish() error = %v", err)
	}
	chunks := parseSSE(t, rec.Body.String())
	checkUIStream(t, chunks)
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

	if err := NewStreamWriter(httptest.NewRecorder(), "").Data("", 1); err == nil {
		t.Errorf("Data(\"\") error = nil, want an error")
	}
	if err := NewStreamWriter(httptest.NewRecorder(), "").Data("x", math.NaN()); err == nil {
		t.Errorf("Data(NaN) error = nil, want an error")
	}
}

func TestStreamWriterKeepAlive(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewStreamWriter(rec, "msg-1")
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
	chunks := parseSSE(t, body)
	checkUIStream(t, chunks)
	if got := streamText(chunks); got != "Hi" {
		t.Errorf("streamed text = %q, want Hi", got)
	}
}

func TestStreamWriterHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewStreamWriter(rec, "msg-1")
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

func TestStreamWriterFinish(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewStreamWriter(rec, "msg-1")
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish() error = %v", err)
	}
	if !strings.HasSuffix(rec.Body.String(), "data: {\"type\":\"finish\"}\n\ndata: [DONE]\n\n") {
		t.Errorf("body = %q, want finish then [DONE] at the end", rec.Body.String())
	}
	checkUIStream(t, parseSSE(t, rec.Body.String()))
	for name, call := range map[string]func() error{
		"Start":     s.Start,
		"Event":     func() error { return s.Event(streamTextEvent("late", false), nil) },
		"Data":      func() error { return s.Data("x", 1) },
		"Error":     func() error { return s.Error("late") },
		"KeepAlive": s.KeepAlive,
		"Finish":    s.Finish,
	} {
		if err := call(); !errors.Is(err, ErrStreamFinished) {
			t.Errorf("%s() after Finish error = %v, want ErrStreamFinished", name, err)
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

func TestStreamWriterWriteError(t *testing.T) {
	w := &streamFailingWriter{header: make(http.Header)}
	s := NewStreamWriter(w, "msg-1")
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

func TestStreamWriterUnencodableInput(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewStreamWriter(rec, "msg-1")
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
	chunks := parseSSE(t, rec.Body.String())
	checkUIStream(t, chunks)
	inputs := streamChunksOf(chunks, "tool-input-available")
	if len(inputs) != 1 || inputs[0]["input"] != nil {
		t.Errorf("tool-input-available chunks = %v, want one with input null", inputs)
	}
}

func TestStreamWriterConcurrentKeepAlive(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewStreamWriter(rec, "msg-1")
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
	chunks := parseSSE(t, rec.Body.String())
	checkUIStream(t, chunks)
	if got := streamText(chunks); got != want.String() {
		t.Errorf("streamed text = %q, want %q", got, want.String())
	}
}
