// Package uistreamtest reads UI message streams back in tests and checks
// them against the AI SDK's chunk schema and client rules.
package uistreamtest

import (
	"bufio"
	"encoding/json"
	"io"
	"iter"
	"slices"
	"strings"
	"testing"
)

// Parse parses a Server-Sent Events body the way a browser does: events
// are separated by blank lines, the data: lines of one event are joined with
// "\n", comment lines (starting with ":") are ignored. Every event's data must
// be a JSON object with a string "type", or the literal [DONE], returned as
// {"type": "[DONE]"}.
func Parse(t testing.TB, body string) []map[string]any {
	t.Helper()
	if body != "" && !strings.HasSuffix(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n") {
		t.Errorf("SSE body does not end with a blank line: the last event would be dropped: %q", body)
	}
	return slices.Collect(Read(t, strings.NewReader(body)))
}

// Read yields the chunks of a Server-Sent Events stream, parsed as Parse
// does, each as soon as its event has arrived, so that a test can act in
// the middle of a live stream (and stop reading by breaking out of the
// loop). An event cut off by the end of r is dropped, as a browser drops
// it; a read error fails t.
func Read(t testing.TB, r io.Reader) iter.Seq[map[string]any] {
	return func(yield func(map[string]any) bool) {
		t.Helper()
		lines := bufio.NewScanner(r)
		lines.Buffer(make([]byte, 0, 64<<10), maxEventBytes)
		var data []string
		for lines.Scan() { // lines without their "\n" or "\r\n"
			switch line := lines.Text(); {
			case line == "" && data != nil:
				if !yield(decode(t, strings.Join(data, "\n"))) {
					return
				}
				data = nil
			case line == "", strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			default:
				t.Errorf("unexpected SSE line %q", line)
			}
		}
		if err := lines.Err(); err != nil {
			t.Errorf("read SSE stream: %v", err)
		}
	}
}

// maxEventBytes bounds one line of a stream: a chunk carries at most one
// tool's output or one message's text, far below.
const maxEventBytes = 16 << 20

// decode returns the chunk an event's data holds.
func decode(t testing.TB, payload string) map[string]any {
	t.Helper()
	if payload == "[DONE]" {
		return map[string]any{"type": "[DONE]"}
	}
	var chunk map[string]any
	if err := json.Unmarshal([]byte(payload), &chunk); err != nil {
		t.Fatalf("SSE data %q is not a JSON object: %v", payload, err)
	}
	if _, ok := chunk["type"].(string); !ok {
		t.Fatalf("SSE chunk %q has no string type", payload)
	}
	return chunk
}

// chunkFields lists, per chunk type, the required and optional fields
// of uiMessageChunkSchema (AI SDK 6), whose objects are strict.
var chunkFields = map[string]struct{ required, optional []string }{
	"start":                 {optional: []string{"messageId", "messageMetadata"}},
	"finish":                {optional: []string{"finishReason", "messageMetadata"}},
	"start-step":            {},
	"finish-step":           {},
	"text-start":            {required: []string{"id"}, optional: []string{"providerMetadata"}},
	"text-delta":            {required: []string{"id", "delta"}, optional: []string{"providerMetadata"}},
	"text-end":              {required: []string{"id"}, optional: []string{"providerMetadata"}},
	"reasoning-start":       {required: []string{"id"}, optional: []string{"providerMetadata"}},
	"reasoning-delta":       {required: []string{"id", "delta"}, optional: []string{"providerMetadata"}},
	"reasoning-end":         {required: []string{"id"}, optional: []string{"providerMetadata"}},
	"tool-input-available":  {required: []string{"toolCallId", "toolName", "input"}, optional: []string{"providerExecuted", "providerMetadata", "dynamic", "title"}},
	"tool-approval-request": {required: []string{"approvalId", "toolCallId"}},
	"tool-output-available": {required: []string{"toolCallId", "output"}, optional: []string{"providerExecuted", "dynamic", "preliminary"}},
	"tool-output-error":     {required: []string{"toolCallId", "errorText"}, optional: []string{"providerExecuted", "dynamic"}},
	"file":                  {required: []string{"url", "mediaType"}, optional: []string{"providerMetadata"}},
	"error":                 {required: []string{"errorText"}},
	"message-metadata":      {required: []string{"messageMetadata"}},
	"data-":                 {required: []string{"data"}, optional: []string{"id", "transient"}},
	"[DONE]":                {},
}

// Check checks chunks against the chunk schema and the rules the
// AI SDK client (processUIMessageStream) enforces, plus this encoder's own
// promises: start first, finish then [DONE] last, steps and text parts
// properly nested and closed, one tool-input-available per call, and tool
// results only for known calls. knownCalls are tool calls already in the
// client's message (a resumed turn).
func Check(t testing.TB, chunks []map[string]any, knownCalls ...string) {
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
		if !checkSchema(t, i, c) {
			continue
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
		case "text-start", "reasoning-start":
			if openText[id] {
				t.Errorf("chunk %d: %s for open part %q", i, typ, id)
			}
			openText[id] = true
		case "text-delta", "reasoning-delta":
			if !openText[id] {
				t.Errorf("chunk %d: %s for part %q that is not open", i, typ, id)
			}
			if c["delta"] == "" {
				t.Errorf("chunk %d: empty %s", i, typ)
			}
		case "text-end", "reasoning-end":
			if !openText[id] {
				t.Errorf("chunk %d: %s for part %q that is not open", i, typ, id)
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
		if (strings.HasPrefix(typ, "text-") || strings.HasPrefix(typ, "reasoning-") || strings.HasPrefix(typ, "tool-") || typ == "file") && !inStep {
			t.Errorf("chunk %d: %s outside a step", i, typ)
		}
	}
}

// Types returns the type of each chunk, in order.
func Types(chunks []map[string]any) []string {
	types := make([]string, len(chunks))
	for i, c := range chunks {
		types[i], _ = c["type"].(string)
	}
	return types
}

// OfType returns the chunks of type typ, in order.
func OfType(chunks []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, c := range chunks {
		if c["type"] == typ {
			out = append(out, c)
		}
	}
	return out
}

// Reasoning joins the deltas of a stream's reasoning-delta chunks.
func Reasoning(chunks []map[string]any) string { return deltas(chunks, "reasoning-delta") }

// Text joins the deltas of a stream's text-delta chunks.
func Text(chunks []map[string]any) string { return deltas(chunks, "text-delta") }

// deltas joins the deltas of a stream's chunks of type typ.
func deltas(chunks []map[string]any, typ string) string {
	var b strings.Builder
	for _, c := range OfType(chunks, typ) {
		delta, _ := c["delta"].(string)
		b.WriteString(delta)
	}
	return b.String()
}

// checkSchema checks chunk i, c, against the chunk schema: a known type,
// its required fields, no others, and string fields that are strings. It
// reports whether the type is known.
func checkSchema(t testing.TB, i int, c map[string]any) bool {
	t.Helper()
	typ := c["type"].(string)
	schemaType := typ
	if strings.HasPrefix(typ, "data-") && len(typ) > len("data-") {
		schemaType = "data-"
	}
	fields, ok := chunkFields[schemaType]
	if !ok {
		t.Errorf("chunk %d: unknown type %q", i, typ)
		return false
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
	return true
}
