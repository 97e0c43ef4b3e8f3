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
func checkInputAnswer(doc *Call, a Answer) error {
	if a.Approved != nil || a.Payload != nil || a.Error != "" || a.Output == nil {
		return fmt.Errorf("%w: an input call takes an output {\"responses\": {...}}", ErrInvalidAnswer)
	}
	if doc.Input == nil {
		return fmt.Errorf("input call %q has no request", doc.ID)
	}
	if _, err := userinput.Check(doc.Input, a.Output); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	return nil
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
func inputReplyPayload(c *Call, a Answer) map[string]any {
	responses, _ := userinput.Responses(a.Output["responses"]) // checked when recorded
	round := 0
	if c.Input != nil {
		round = c.Input.Round
	}
	return map[string]any{userinput.PayloadKey: userinput.Reply{Round: round, Responses: responses, State: c.InputState()}}
}
