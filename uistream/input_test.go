package uistream

import (
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/uistream/uistreamtest"
	"github.com/baton-run/baton/userinput"
)

// A confirmation whose payload asks for input is shown as a browser call
// of userinput.ToolName under the confirmation's id, not as an approval; the
// gated call's placeholder and the confirmation's response are not sent.
func TestEncoderInputForm(t *testing.T) {
	original := &genai.FunctionCall{ID: "call-1", Name: "notes_clear_notes", Args: map[string]any{}}
	request := map[string]any{"server": "notes", "tool": "clear_notes", "round": 1.0,
		"requests": map[string]any{"confirm": map[string]any{"method": "elicitation/create"}}}
	confirmation := toolconfirmation.ToolConfirmation{Hint: "Forget?", Payload: map[string]any{userinput.PayloadKey: request}}
	asking := &genai.FunctionCall{ID: "confirm-1", Name: toolconfirmation.FunctionCallName, Args: map[string]any{
		"originalFunctionCall": original, "toolConfirmation": confirmation,
	}}
	placeholder := streamResponseEvent(&genai.FunctionResponse{ID: "call-1", Name: "notes_clear_notes", Response: map[string]any{"status": "waiting"}})
	placeholder.Actions.RequestedToolConfirmations = map[string]toolconfirmation.ToolConfirmation{"call-1": confirmation}

	chunks := streamTurn(t, func(*genai.FunctionCall) CallKind { return CallServer },
		streamCallEvent(original), placeholder, streamCallEvent(asking))
	uistreamtest.Check(t, chunks)
	want := []string{"start", "start-step", "tool-input-available", "tool-input-available", "finish-step", "finish", "[DONE]"}
	if diff := cmp.Diff(want, uistreamtest.Types(chunks)); diff != "" {
		t.Fatalf("chunk types mismatch (-want +got):\n%s", diff)
	}
	wantForm := map[string]any{"type": "tool-input-available", "toolCallId": "confirm-1", "toolName": userinput.ToolName, "input": request}
	if diff := cmp.Diff(wantForm, chunks[3]); diff != "" {
		t.Errorf("form mismatch (-want +got):\n%s", diff)
	}
}

// A question asked on the live call is a long-running call of
// userinput.ToolName answered outside the stream: its outcome, a response named
// userinput.ToolName, is sent (the answer's output, or the error once it
// expired), marked provider-executed for a page, which has nothing to send
// for it. Another paused call's answer is not sent (TestEncoderBrowserCall).
func TestEncoderLiveQuestionOutcome(t *testing.T) {
	form := streamCallEvent(&genai.FunctionCall{ID: "live-1", Name: userinput.ToolName, Args: map[string]any{"live": true}})
	form.LongRunningToolIDs = []string{"live-1"}
	answer := map[string]any{"responses": map[string]any{"confirm": map[string]any{"action": "accept"}}}
	for _, tc := range []struct {
		name     string
		page     bool
		response map[string]any
		want     map[string]any
	}{
		{"answered, for a page", true, answer,
			map[string]any{"type": "tool-output-available", "toolCallId": "live-1", "output": answer, "providerExecuted": true}},
		{"expired, for a page", true, map[string]any{"error": "nobody answered"},
			map[string]any{"type": "tool-output-error", "toolCallId": "live-1", "errorText": "nobody answered", "providerExecuted": true}},
		{"answered, for a Turn client", false, answer,
			map[string]any{"type": "tool-output-available", "toolCallId": "live-1", "output": answer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			enc := newSSEEncoder(rec, "msg-1")
			if tc.page {
				enc.SetDevice("tab-a")
			}
			outcome := streamResponseEvent(&genai.FunctionResponse{ID: "live-1", Name: userinput.ToolName, Response: tc.response})
			outcome.Author = "user"
			for _, ev := range []*session.Event{form, outcome} {
				if err := enc.Event(ev, func(*genai.FunctionCall) CallKind { return CallBrowser }); err != nil {
					t.Fatal(err)
				}
			}
			if err := enc.Finish(); err != nil {
				t.Fatal(err)
			}
			chunks := uistreamtest.Parse(t, rec.Body.String())
			uistreamtest.Check(t, chunks)
			want := []string{"start", "start-step", "tool-input-available", tc.want["type"].(string), "finish-step", "finish", "[DONE]"}
			if diff := cmp.Diff(want, uistreamtest.Types(chunks)); diff != "" {
				t.Fatalf("chunk types mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, chunks[3]); diff != "" {
				t.Errorf("outcome mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
