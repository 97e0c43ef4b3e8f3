package uistream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
