package toolcallback

import (
	"google.golang.org/adk/v2/session"
)

// A turn is what one user message sets off: the invocation that answers it
// and every resume that continues it (answers to the calls it paused on),
// up to the next user message. A client shows a turn as one assistant
// message, and the id of the turn's first invocation names it: a resume
// reports it as Resumption.Turn.

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

// turnOf returns the invocation id of the turn the event with id step
// belongs to: that of the latest user message before it. fallback is
// returned when the message is not among events (a history longer than
// what was read).
func turnOf(events session.Events, step, fallback string) string {
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
