package usechat

// What stored events say of their function calls, read in one place for
// the history a reloaded page shows (history.go) and for the replay of a
// turn (replayer.go).

import (
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// callStates is what a transcript says of its calls: which paused (the
// long-running ones: browser, external and approval calls), the result of
// each, the confirmation request each approval was asked with, and which
// of those requests have a person's decision.
type callStates struct {
	paused    map[string]bool                    // long-running call ids
	results   map[string]*genai.FunctionResponse // by call id: its last response that is not a placeholder
	approvals map[string]string                  // by call id: the id of its confirmation request
	decided   map[string]bool                    // confirmation request ids with a decision
}

func newCallStates() *callStates {
	return &callStates{paused: map[string]bool{}, results: map[string]*genai.FunctionResponse{},
		approvals: map[string]string{}, decided: map[string]bool{}}
}

// readCalls notes every event of events.
func readCalls(events session.Events) *callStates {
	cs := newCallStates()
	for ev := range events.All() {
		cs.note(ev)
	}
	return cs
}

// note records what ev says of its calls. Events are noted in the order
// they were stored; noting one again changes nothing.
func (cs *callStates) note(ev *session.Event) {
	if ev.Partial || ev.Content == nil {
		return
	}
	for _, id := range ev.LongRunningToolIDs {
		cs.paused[id] = true
	}
	for _, p := range ev.Content.Parts {
		if p == nil {
			continue
		}
		if fc := p.FunctionCall; fc != nil && fc.Name == toolconfirmation.FunctionCallName {
			if orig, err := toolconfirmation.OriginalCallFrom(fc); err == nil && orig.ID != "" {
				cs.approvals[orig.ID] = fc.ID
			}
		}
		fr := p.FunctionResponse
		if fr == nil {
			continue
		}
		_, confirming := ev.Actions.RequestedToolConfirmations[fr.ID]
		switch {
		case fr.Name == toolconfirmation.FunctionCallName:
			if ev.Author == "user" {
				cs.decided[fr.ID] = true
			}
		case confirming || cs.placeholder(ev, fr):
			// A call waiting for approval, or a paused call: the answer
			// comes from the user's side.
		default:
			cs.results[fr.ID] = fr
		}
	}
}

// placeholder reports whether fr, a response in ev, is ADK's placeholder
// for a paused call rather than its answer.
func (cs *callStates) placeholder(ev *session.Event, fr *genai.FunctionResponse) bool {
	return cs.paused[fr.ID] && ev.Author != "user"
}

// answered reports whether call id has a result.
func (cs *callStates) answered(id string) bool { return cs.results[id] != nil }
