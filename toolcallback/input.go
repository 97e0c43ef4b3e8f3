package toolcallback

import (
	"encoding/json"
	"fmt"

	"google.golang.org/adk/v2/tool/toolconfirmation"

	"github.com/baton-run/baton/userinput"
)

// CancelInput is the answer that cancels every request of the input call
// c, for a caller that gives up on it.
func CancelInput(c *Call) Answer { return Answer{Output: userinput.CancelAll(c.Input)} }

// checkInputAnswer checks an answer to an input call.
func checkInputAnswer(doc *callDoc, a Answer) error {
	var req userinput.Request
	if err := json.Unmarshal(doc.Input, &req); err != nil {
		return fmt.Errorf("decode input request of %q: %w", doc.ID, err)
	}
	return checkReply(&req, a)
}

// confirmationOf reads the tool confirmation among a confirmation call's
// arguments, whether ADK's value or its JSON.
func confirmationOf(args map[string]any) (toolconfirmation.ToolConfirmation, bool) {
	var tc toolconfirmation.ToolConfirmation
	raw, err := json.Marshal(args["toolConfirmation"])
	if err != nil || json.Unmarshal(raw, &tc) != nil {
		return tc, false
	}
	return tc, true
}

// inputReplyPayload is the confirmation payload a re-run tool reads with
// userinput.ReplyOf: the recorded answer and the state kept in the ledger.
func inputReplyPayload(c *callDoc, a Answer) map[string]any {
	responses, _ := userinput.Responses(a.Output["responses"]) // checked when recorded
	var req userinput.Request
	_ = json.Unmarshal(c.Input, &req)
	return map[string]any{userinput.PayloadKey: userinput.Reply{Round: req.Round, Responses: responses, State: c.InputState}}
}
