package sessionstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// MigrateHistory rewrites a session's events for another agent. User
// messages stay user messages; the old agent's text becomes the new agent's
// model turns; its tool calls and their responses, which the new agent could
// not resolve, become one short textual record each, such as
//
//	[dj called change_bgm(track=2): {"playing":2}]
//
// so the facts survive without a function call the new agent's model would
// reject. outcome overrides the recorded result of calls the caller settled
// (for example "cancelled"). Partial events, thoughts and ADK's confirmation
// bookkeeping are dropped.
func MigrateHistory(ctx context.Context, events session.Events, toAgent string, outcome map[string]string) []*session.Event {
	type call struct {
		author string
		fc     *genai.FunctionCall
		result string
	}
	calls := map[string]*call{}
	// First pass: collect calls and their final results.
	for ev := range events.All() {
		if ev.Partial || ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			switch {
			case p.FunctionCall != nil && p.FunctionCall.Name != toolconfirmation.FunctionCallName:
				calls[p.FunctionCall.ID] = &call{author: ev.Author, fc: p.FunctionCall, result: "no result"}
			case p.FunctionResponse != nil && p.FunctionResponse.Name != toolconfirmation.FunctionCallName:
				if c, ok := calls[p.FunctionResponse.ID]; ok {
					// Later responses replace earlier ones: a paused tool's
					// placeholder gives way to the real answer.
					c.result = resultText(p.FunctionResponse.Response)
				}
			}
		}
	}
	for id, o := range outcome {
		if c, ok := calls[id]; ok {
			c.result = o
		}
	}

	var out []*session.Event
	for ev := range events.All() {
		if ev.Partial || ev.Content == nil {
			continue
		}
		var texts, records []string
		for _, p := range ev.Content.Parts {
			switch {
			case p.Thought:
			case p.Text != "":
				texts = append(texts, p.Text)
			case p.FunctionCall != nil:
				if c, ok := calls[p.FunctionCall.ID]; ok {
					records = append(records, fmt.Sprintf("[%s called %s(%s): %s]", c.author, c.fc.Name, argsText(c.fc.Args), c.result))
				}
			}
		}
		if len(texts) == 0 && len(records) == 0 {
			continue
		}
		user := ev.Author == "user"
		text := strings.Join(append(texts, records...), "\n")
		m := session.NewEvent(ctx, ev.InvocationID)
		m.Timestamp = ev.Timestamp
		if user && len(records) == 0 {
			m.Author = "user"
			m.Content = genai.NewContentFromText(text, genai.RoleUser)
		} else {
			m.Author = toAgent
			m.Content = genai.NewContentFromText(text, genai.RoleModel)
		}
		out = append(out, m)
	}
	return out
}

// resultText is a short form of a tool's result for the textual record.
func resultText(r map[string]any) string {
	if e, ok := r["error"]; ok {
		return fmt.Sprintf("error: %v", e)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "ok"
	}
	const limit = 300
	if len(b) > limit {
		return string(b[:limit]) + "…"
	}
	return string(b)
}

// argsText writes arguments as k=v, sorted.
func argsText(args map[string]any) string {
	keys := slices.Sorted(maps.Keys(args))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		b, _ := json.Marshal(args[k])
		v := string(b)
		if s, ok := args[k].(string); ok && !strings.ContainsAny(s, " ,()") {
			v = s
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ", ")
}

// CreateWithEvents creates a session already holding events, in one atomic
// write: the session document with its tail and any sealed chunks. State
// follows Create's rules (temp: dropped; app: and user: merged into their
// documents).
func (s *Service) CreateWithEvents(ctx context.Context, req *session.CreateRequest, events []*session.Event) (*session.CreateResponse, error) {
	n, err := newSession(ctx, req)
	if err != nil {
		return nil, err
	}
	id, appDelta, userDelta, stateBytes := n.id, n.appDelta, n.userDelta, n.stateBytes
	ref := s.sessionDoc(req.AppName, req.UserID, id)
	fixed := len(req.AppName) + len(req.UserID) + 2*len(id) + len(s.root) + 256
	var chunks []chunkMeta
	var sealed [][]chunkElement
	var tail []chunkElement
	updated := platform.Now(ctx)
	for i, e := range events {
		stored := withoutTempDelta(e)
		b, err := encodeEvent(stored)
		if err != nil {
			return nil, err
		}
		el := chunkElement{Revision: int64(i + 1), Time: e.Timestamp, Event: b}
		if fixed+len(stateBytes)+(len(sealed)+1)*chunkMetaBytes+elementsSize(tail)+el.size() > docBudget && len(tail) > 0 {
			chunks = append(chunks, sealChunk(int64(len(sealed)), tail))
			sealed = append(sealed, tail)
			tail = nil
		}
		if fixed+len(stateBytes)+len(sealed)*chunkMetaBytes+el.size() > docBudget {
			return nil, fmt.Errorf("%w: event %q", ErrTooLarge, e.ID)
		}
		tail = append(tail, el)
		updated = e.Timestamp
	}
	if len(sealed) > 400 {
		return nil, fmt.Errorf("%w: history of %d chunks", ErrTooLarge, len(sealed))
	}
	now := platform.Now(ctx)
	batch := s.client.Batch()
	for n, els := range sealed {
		batch.Create(chunkDocRef(ref, int64(n)), chunkDoc{Events: els})
	}
	if chunks == nil {
		chunks = []chunkMeta{}
	}
	if tail == nil {
		tail = []chunkElement{}
	}
	batch.Create(ref, sessionDoc{
		App: req.AppName, User: req.UserID, ID: id, Scope: s.scope(req.AppName),
		State: stateBytes, Created: now, Updated: updated, Revision: int64(len(events)),
		Chunks: chunks, Tail: tail,
	})
	if err := s.addStateMerges(batch, req.AppName, req.UserID, appDelta, userDelta); err != nil {
		return nil, err
	}
	if _, err := batch.Commit(ctx); err != nil {
		if status.Code(err) == codes.AlreadyExists {
			return nil, fmt.Errorf("%w: %q", ErrAlreadyExists, id)
		}
		return nil, fmt.Errorf("create session %q: %w", id, translate(err))
	}
	got, err := s.Get(ctx, &session.GetRequest{AppName: req.AppName, UserID: req.UserID, SessionID: id})
	if err != nil {
		return nil, err
	}
	return &session.CreateResponse{Session: got.Session}, nil
}

// SessionScopedState returns the keys of a session's state that belong to
// the session itself (no app:, user: or temp: prefix).
func SessionScopedState(sess session.Session) map[string]any {
	all := map[string]any{}
	for k, v := range sess.State().All() {
		all[k] = v
	}
	return sessionScoped(all)
}
