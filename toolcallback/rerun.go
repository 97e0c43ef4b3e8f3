package toolcallback

import (
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/userinput"
)

// interruptedReruns returns an error response for every model call whose
// process died between a placeholder and what had to follow it:
//
//   - its latest confirmation (an approval, or an answer to a tool's
//     question) was delivered, but the tool, run again with it, never
//     responded;
//   - its tool asked for input (RequestInput), but the confirmation call
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
				ID: id, Name: s.names[id], Response: map[string]any{"error": interruptedCallError},
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
	for _, p := range partsOf(ev) {
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
