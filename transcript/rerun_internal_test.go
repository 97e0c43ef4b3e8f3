package transcript

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/eventlist"
	"github.com/baton-run/baton/userinput"
)

func rerunEvent(author string, parts ...*genai.Part) *session.Event {
	return &session.Event{Author: author, LLMResponse: model.LLMResponse{Content: &genai.Content{Parts: parts}}}
}

func confirmCall(id, orig string) *genai.Part {
	return &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: toolconfirmation.FunctionCallName, Args: map[string]any{
		"originalFunctionCall": map[string]any{"id": orig, "name": "rename"},
	}}}
}

func response(id, name string) *genai.Part {
	return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: map[string]any{"status": "x"}}}
}

// A delivered confirmation whose tool never responded again is closed; one
// whose tool did, or whose latest round is still open, is not.
func TestInterruptedReruns(t *testing.T) {
	call := rerunEvent("agent", &genai.Part{FunctionCall: &genai.FunctionCall{ID: "x", Name: "rename"}})
	placeholder := rerunEvent("agent", response("x", "rename"))
	ask1 := rerunEvent("agent", confirmCall("c1", "x"))
	answer1 := rerunEvent("user", response("c1", toolconfirmation.FunctionCallName))
	ask2 := rerunEvent("agent", confirmCall("c2", "x"))
	answer2 := rerunEvent("user", response("c2", toolconfirmation.FunctionCallName))
	done := rerunEvent("agent", response("x", "rename"))
	asking := rerunEvent("agent", response("x", "rename"))
	asking.Actions.RequestedToolConfirmations = map[string]toolconfirmation.ToolConfirmation{
		"x": {Payload: map[string]any{userinput.PayloadKey: userinput.Request{Requests: map[string]any{"q": nil}, Round: 1}}},
	}
	approving := rerunEvent("agent", response("x", "rename"))
	approving.Actions.RequestedToolConfirmations = map[string]toolconfirmation.ToolConfirmation{"x": {Hint: "ok?"}}
	tests := []struct {
		name   string
		events []*session.Event
		want   []string
	}{
		{"asked", []*session.Event{call, placeholder, ask1}, nil},
		{"answer delivered, the tool died", []*session.Event{call, placeholder, ask1, answer1}, []string{"x"}},
		{"answer delivered, the tool responded", []*session.Event{call, placeholder, ask1, answer1, done}, nil},
		{"second round asked", []*session.Event{call, placeholder, ask1, answer1, placeholder, ask2}, nil},
		{"second answer delivered, the tool died", []*session.Event{call, placeholder, ask1, answer1, placeholder, ask2, answer2}, []string{"x"}},
		{"asked for input, the question never stored", []*session.Event{call, asking}, []string{"x"}},
		{"asked for input again, the question never stored", []*session.Event{call, asking, ask1, answer1, asking}, []string{"x"}},
		{"asked for input, then the question", []*session.Event{call, asking, ask1}, nil},
		{"asked for input, then closed", []*session.Event{call, asking, rerunEvent("user", response("x", "rename"))}, nil},
		{"approval requested, the request never stored", []*session.Event{call, approving}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range interruptedReruns(eventlist.List(tt.events)) {
				got = append(got, p.FunctionResponse.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("closed calls (-want +got):\n%s", diff)
			}
		})
	}
}
