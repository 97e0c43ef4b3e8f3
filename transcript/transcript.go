package transcript

import (
	"encoding/json"
	"maps"
	"slices"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/userinput"
)

// InterruptedError is the response of a call whose process died before it
// finished (InterruptedCalls).
const InterruptedError = "interrupted: the server stopped before this call finished; it may or may not have taken effect"

// StopNoteKey marks, in an event's CustomMetadata, the final assistant
// event of a turn the user stopped (IsStopNote).
const StopNoteKey = "baton_stopped"

// Parts returns ev's content parts, none when it has no content.
func Parts(ev *session.Event) []*genai.Part {
	if ev == nil || ev.Content == nil {
		return nil
	}
	return ev.Content.Parts
}

// StartsTurn reports whether ev is a user message, which starts a turn: an
// event by the user with some content that is not a function response.
// (Answers to paused calls are user events too, made only of function
// responses; they continue a turn.)
func StartsTurn(ev *session.Event) bool {
	if ev == nil || ev.Author != "user" || ev.Content == nil {
		return false
	}
	for _, p := range ev.Content.Parts {
		if p != nil && p.FunctionResponse == nil {
			return true
		}
	}
	return false
}

// TurnOf returns the invocation id of the turn the event with id step
// belongs to: that of the latest user message before it. fallback is
// returned when the message is not among events (a history longer than
// what was read).
func TurnOf(events session.Events, step, fallback string) string {
	turn := ""
	for ev := range events.All() {
		if StartsTurn(ev) {
			turn = ev.InvocationID
		}
		if ev.ID == step {
			break
		}
	}
	if turn == "" {
		return fallback
	}
	return turn
}

// Unanswered reports whether the latest event is one the model must still
// answer: a user message, or responses none of which belongs to a call the
// ledger holds open. (An invocation that paused ends on its pausing calls'
// responses; one that died ends anywhere.)
func Unanswered(events session.Events, known map[string]bool) bool {
	n := events.Len()
	if n == 0 {
		return false
	}
	last := events.At(n - 1)
	if last.Content == nil {
		return last.Author == "user"
	}
	responses := 0
	for _, p := range last.Content.Parts {
		if fr := p.FunctionResponse; fr != nil {
			if known[fr.ID] {
				return false
			}
			responses++
		}
	}
	return responses > 0 || last.Author == "user"
}

// InterruptedCalls returns an error response for every model call in
// events that has no response and that the ledger does not answer.
func InterruptedCalls(events session.Events, known map[string]bool) []*genai.Part {
	answered := map[string]bool{}
	for ev := range events.All() {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil {
				answered[p.FunctionResponse.ID] = true
			}
		}
	}
	out := interruptedReruns(events)
	for ev := range events.All() {
		if ev.Content == nil || ev.Author == "user" {
			continue
		}
		for _, p := range ev.Content.Parts {
			fc := p.FunctionCall
			// ADK's confirmation requests are not shown to the model; each
			// has its ledger record.
			if fc == nil || fc.Name == toolconfirmation.FunctionCallName || answered[fc.ID] || known[fc.ID] {
				continue
			}
			out = append(out, &genai.Part{FunctionResponse: &genai.FunctionResponse{
				ID: fc.ID, Name: fc.Name, Response: map[string]any{"error": InterruptedError},
			}})
		}
	}
	return out
}

// NeedsRepair reports whether events end in a state a dead invocation
// leaves (or a live one passes through).
func NeedsRepair(events session.Events, known map[string]bool) bool {
	return Unanswered(events, known) || len(InterruptedCalls(events, known)) > 0
}

// FindTurn returns the index of the user message that starts the turn
// message names (see Rewind.Message; "" is the latest), or -1.
func FindTurn(events []*session.Event, message string) int {
	found := -1
	for i, ev := range events {
		if !StartsTurn(ev) {
			continue
		}
		if message == "" || ev.InvocationID == message || ev.ID == message || ClientMessageID(ev) == message {
			found = i
		}
	}
	return found
}

// ClientMessageID is the client's id of a user message, "" when it gave
// none.
func ClientMessageID(ev *session.Event) string {
	id, _ := ev.Actions.StateDelta[MessageIDKey].(string)
	return id
}

// CallIDs are the ids of the calls events make: the model's and ADK's
// confirmation requests'.
func CallIDs(events []*session.Event) map[string]bool {
	ids := map[string]bool{}
	for _, ev := range events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p != nil && p.FunctionCall != nil {
				ids[p.FunctionCall.ID] = true
			}
		}
	}
	return ids
}

// SameText reports whether two messages have the same text.
func SameText(a, b *genai.Content) bool {
	text := func(c *genai.Content) []string {
		var out []string
		for _, p := range c.Parts {
			if p != nil && p.Text != "" {
				out = append(out, p.Text)
			}
		}
		return out
	}
	return a != nil && slices.Equal(text(a), text(b))
}

func HoldsCall(ev *session.Event, id string) bool {
	if ev.Content == nil {
		return false
	}
	for _, p := range ev.Content.Parts {
		if p.FunctionCall != nil && p.FunctionCall.ID == id {
			return true
		}
	}
	return false
}

// IsStopNote reports whether ev is the final assistant event of a turn the
// user stopped (see Team.Stop): its text is what the model had generated.
func IsStopNote(ev *session.Event) bool {
	if ev == nil {
		return false
	}
	stopped, _ := ev.CustomMetadata[StopNoteKey].(bool)
	return stopped
}

// MergePayload returns args with patch merged in as a JSON Merge Patch (RFC
// 7396): null removes a field, an object merges into an object, anything
// else replaces. Neither input is modified.
func MergePayload(args, patch map[string]any) map[string]any {
	out := make(map[string]any, len(args)+len(patch))
	maps.Copy(out, args)
	for k, v := range patch {
		switch v := v.(type) {
		case nil:
			delete(out, k)
		case map[string]any:
			inner, _ := out[k].(map[string]any)
			out[k] = MergePayload(inner, v)
		default:
			out[k] = v
		}
	}
	return out
}

// interruptedReruns returns an error response for every model call whose
// process died between a placeholder and what had to follow it:
//
//   - its latest confirmation (an approval, or an answer to a tool's
//     question) was delivered, but the tool, run again with it, never
//     responded;
//   - its tool asked for input (userinput.Ask), but the confirmation call
//     that holds the question (and its ledger record) was never stored.
//
// Without it the call's last word would stay a placeholder ("requires
// confirmation", "waiting for the user's answer"), which the model would
// take as the outcome. (An approval whose request was never stored keeps
// its placeholder: the model reads that it was not confirmed.)
func interruptedReruns(events session.Events) []*genai.Part {
	var s rerunScan
	for ev := range events.All() {
		s.note(ev)
	}
	var out []*genai.Part
	for _, id := range s.order {
		if s.delivered[id] || s.asked[id] {
			out = append(out, &genai.Part{FunctionResponse: &genai.FunctionResponse{
				ID: id, Name: s.names[id], Response: map[string]any{"error": InterruptedError},
			}})
		}
	}
	return out
}

// rerunScan follows, event by event, the model calls that paused on a
// confirmation.
type rerunScan struct {
	latest    map[string]string // model call id → its latest confirmation call id
	names     map[string]string // model call id → tool name
	delivered map[string]bool   // the latest confirmation was answered, and the tool has not responded since
	asked     map[string]bool   // the tool asked for input, and no confirmation call followed
	order     []string          // model call ids, in the order they first paused
}

func (s *rerunScan) track(id, name string) {
	if s.latest == nil {
		s.latest, s.names, s.delivered, s.asked = map[string]string{}, map[string]string{}, map[string]bool{}, map[string]bool{}
	}
	if _, seen := s.names[id]; !seen {
		s.order = append(s.order, id)
	}
	s.names[id] = name
}

func (s *rerunScan) note(ev *session.Event) {
	for _, p := range Parts(ev) {
		if fc := p.FunctionCall; fc != nil && fc.Name == toolconfirmation.FunctionCallName {
			if orig, err := toolconfirmation.OriginalCallFrom(fc); err == nil && orig.ID != "" {
				s.track(orig.ID, orig.Name)
				s.latest[orig.ID], s.delivered[orig.ID], s.asked[orig.ID] = fc.ID, false, false
			}
		}
		fr := p.FunctionResponse
		if fr == nil {
			continue
		}
		if ev.Author == "user" && fr.Name == toolconfirmation.FunctionCallName {
			for id, conf := range s.latest {
				if conf == fr.ID {
					s.delivered[id] = true
				}
			}
			continue
		}
		if s.names[fr.ID] != "" {
			s.delivered[fr.ID], s.asked[fr.ID] = false, false // the call has a later word
		}
		if _, asking := ev.Actions.RequestedToolConfirmations[fr.ID]; asking && ev.Author != "user" {
			if _, input := userinput.Of(ev.Actions.RequestedToolConfirmations[fr.ID].Payload); input {
				s.track(fr.ID, fr.Name)
				s.asked[fr.ID] = true
			}
		}
	}
}

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
				d.Args = MergePayload(orig.args, patch)
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

// MessageIDKey is the session-state key that holds the client's id of the
// last message a turn took (toolcallback.TurnRequest.MessageID). The user event of that
// turn sets it, so the id is stored in the same commit as the message.
const MessageIDKey = "baton_message_id"

// TakenMessage returns the client's id of the last message sess took, or "".
func TakenMessage(sess session.Session) string {
	v, err := sess.State().Get(MessageIDKey)
	if err != nil {
		return ""
	}
	id, _ := v.(string)
	return id
}
