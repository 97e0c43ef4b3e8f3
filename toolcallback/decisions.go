package toolcallback

import (
	"encoding/json"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"

	"github.com/baton-run/baton/userinput"
)

// ApprovalDecision is a person's answer to a call that needed approval, as
// the session's events hold it.
type ApprovalDecision struct {
	Approved bool
	// Args are the arguments the tool ran with once approved: the model's,
	// with the approver's payload merged in as Approval merges it.
	Args map[string]any
}

// ApprovalDecisions returns the answered approvals found in events, by the
// model's call id. Agent switches use it to record what a tool really ran
// with, and a reloaded page to show it.
func ApprovalDecisions(events session.Events) map[string]ApprovalDecision {
	originals := map[string]originalCall{} // by confirmation call id
	out := map[string]ApprovalDecision{}
	for ev := range events.All() {
		if ev.Partial || ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if fc := p.FunctionCall; fc != nil && fc.Name == toolconfirmation.FunctionCallName {
				if orig, err := toolconfirmation.OriginalCallFrom(fc); err == nil && orig.ID != "" {
					originals[fc.ID] = originalCall{id: orig.ID, args: orig.Args}
				}
			}
			fr := p.FunctionResponse
			if fr == nil || fr.Name != toolconfirmation.FunctionCallName || ev.Author != "user" {
				continue
			}
			orig, ok := originals[fr.ID]
			if !ok {
				continue
			}
			var tc toolconfirmation.ToolConfirmation
			if b, err := json.Marshal(fr.Response); err != nil || json.Unmarshal(b, &tc) != nil {
				continue
			}
			if _, input := userinput.Of(tc.Payload); input {
				continue // an answer to a tool's input request, not an approval
			}
			d := ApprovalDecision{Approved: tc.Confirmed, Args: orig.args}
			if patch, ok := tc.Payload.(map[string]any); ok && tc.Confirmed && len(patch) > 0 {
				d.Args = mergePayload(orig.args, patch)
			}
			out[orig.id] = d
		}
	}
	return out
}

type originalCall struct {
	id   string
	args map[string]any
}
