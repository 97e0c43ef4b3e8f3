package transcript

import (
	"slices"

	"google.golang.org/adk/v2/session"
)

// BackgroundKey lists, in a stored event's CustomMetadata, the ids of
// the event's calls whose work runs in the background (a toolcallback
// Background tool's): the server runs them, off the request, and their
// answer comes later, from the worker. A reader shows such a call as
// running, not as one a client must answer.
const BackgroundKey = "baton_background"

// NoteBackground marks call id of ev as background work, before ev is
// stored.
func NoteBackground(ev *session.Event, id string) {
	if ev.CustomMetadata == nil {
		ev.CustomMetadata = map[string]any{}
	}
	ids := BackgroundCalls(ev)
	if !slices.Contains(ids, id) {
		ev.CustomMetadata[BackgroundKey] = append(ids, id)
	}
}

// BackgroundCalls are the ids of ev's calls marked background work.
func BackgroundCalls(ev *session.Event) []string {
	if ev == nil {
		return nil
	}
	switch v := ev.CustomMetadata[BackgroundKey].(type) {
	case []string:
		return slices.Clone(v)
	case []any: // as read back from storage
		var out []string
		for _, id := range v {
			if s, ok := id.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// IsBackground reports whether call id of ev is background work.
func IsBackground(ev *session.Event, id string) bool {
	return slices.Contains(BackgroundCalls(ev), id)
}

// AwaitsWork reports whether the turn events hold (the events of one
// turn, in order) waits on background work: a call marked background with
// no answer after it from the user's side (the worker's result, or why
// the call was closed).
func AwaitsWork(turn []*session.Event) bool {
	open := map[string]bool{}
	for _, ev := range turn {
		if ev.Partial || ev.Content == nil {
			continue
		}
		for _, id := range BackgroundCalls(ev) {
			open[id] = true
		}
		if ev.Author != "user" {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p != nil && p.FunctionResponse != nil {
				delete(open, p.FunctionResponse.ID)
			}
		}
	}
	return len(open) > 0
}
