package sessionstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// Migration says how MigrateHistory moves a conversation to another agent.
type Migration struct {
	From, To string    // the agents it leaves and joins
	At       time.Time // when
	// Outcome overrides, by call id, the result of calls the caller
	// settled (for example "cancelled").
	Outcome map[string]string
	// Args gives, by call id, the arguments a tool actually ran with when
	// they differ from the model's (an approver's edited payload).
	Args map[string]map[string]any
	// Approved gives, by call id, a person's decision on calls that needed
	// approval.
	Approved map[string]bool
	// Keep names state-delta keys a moved event keeps from the event it
	// was built from (the client's id of a user message), so that what
	// reads them finds them after the switch too.
	Keep []string
	// KeepMetadata names CustomMetadata keys a moved event keeps from the
	// event it was built from (the A2UI surfaces it showed), for the same
	// reason.
	KeepMetadata []string
}

// Switch names the agent switch that moved an event (see MovedBy).
type Switch struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	At   time.Time `json:"at"`
}

// MovedCall is one tool call that MigrateHistory turned into text, in
// structured form, so that a page can still show it as the call it was.
type MovedCall struct {
	Part   int            `json:"part"` // index of the record's text part in the event's content
	Agent  string         `json:"agent"`
	CallID string         `json:"callId"`
	Tool   string         `json:"tool"`
	Args   map[string]any `json:"args"`             // the arguments the tool ran with
	Result map[string]any `json:"result,omitempty"` // the tool's response, when it has one
	// Outcome replaces Result when there is none: why ("cancelled …",
	// "no result").
	Outcome  string `json:"outcome,omitempty"`
	Approved *bool  `json:"approved,omitempty"` // a person's decision, for calls that needed approval
	// ApprovalID is the id of ADK's confirmation request for a call that
	// needed approval: the id its approval was asked and answered with.
	ApprovalID string `json:"approvalId,omitempty"`
}

// CustomMetadata keys of the events MigrateHistory builds.
const (
	switchMetadataKey  = "baton_switch"
	recordsMetadataKey = "baton_records"
)

// MigrateHistory rewrites a session's events for another agent. User
// messages stay user messages; the old agent's text becomes the new agent's
// model turns; its tool calls and their responses, which the new agent could
// not resolve, become one short textual record each, a text part of its own
// such as
//
//	[dj called change_bgm(track=2): {"playing":2}]
//
// so the facts survive without a function call the new agent's model would
// reject. A record shows the arguments the tool ran with (m.Args) and its
// result, or m.Outcome. Partial events, thoughts and ADK's confirmation
// bookkeeping are dropped.
//
// Every event built is marked with the switch that moved it, unless an
// earlier switch had (events keep the mark of the switch that first moved
// them), and with the structured form of its records: see MovedBy.
func MigrateHistory(ctx context.Context, events session.Events, m Migration) []*session.Event {
	calls := callsIn(events)
	var out []*session.Event
	for ev := range events.All() {
		if e := migrateEvent(ctx, ev, calls, m); e != nil {
			out = append(out, e)
		}
	}
	return out
}

// historyCall is a tool call found in the history MigrateHistory moves,
// with its final result.
type historyCall struct {
	author     string
	fc         *genai.FunctionCall
	result     map[string]any
	approvalID string // its confirmation request's id, when it needed approval
}

// callsIn collects the tool calls of events, by call id, with their final
// results and the ids of the confirmations they were asked with (ADK's
// confirmation bookkeeping itself left out).
func callsIn(events session.Events) map[string]*historyCall {
	calls := map[string]*historyCall{}
	for ev := range events.All() {
		if ev.Partial || ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			switch {
			case p.FunctionCall != nil && p.FunctionCall.Name == toolconfirmation.FunctionCallName:
				if orig, err := toolconfirmation.OriginalCallFrom(p.FunctionCall); err == nil && calls[orig.ID] != nil {
					calls[orig.ID].approvalID = p.FunctionCall.ID
				}
			case p.FunctionCall != nil:
				calls[p.FunctionCall.ID] = &historyCall{author: ev.Author, fc: p.FunctionCall}
			case p.FunctionResponse != nil && p.FunctionResponse.Name != toolconfirmation.FunctionCallName:
				if c, ok := calls[p.FunctionResponse.ID]; ok {
					// Later responses replace earlier ones: a paused tool's
					// placeholder gives way to the real answer.
					c.result = p.FunctionResponse.Response
				}
			}
		}
	}
	return calls
}

// moved returns the textual record of c and its structured form, as m
// settles it.
func (m Migration) moved(c *historyCall) (string, MovedCall) {
	r := MovedCall{Agent: c.author, CallID: c.fc.ID, Tool: c.fc.Name, Args: c.fc.Args, Result: c.result, ApprovalID: c.approvalID}
	if args, ok := m.Args[c.fc.ID]; ok {
		r.Args = args
	}
	if approved, ok := m.Approved[c.fc.ID]; ok {
		r.Approved = &approved
	}
	outcome := resultText(c.result)
	if o, ok := m.Outcome[c.fc.ID]; ok {
		r.Result, outcome, r.Outcome = nil, o, o
	} else if c.result == nil {
		outcome, r.Outcome = "no result", "no result"
	}
	return fmt.Sprintf("[%s called %s(%s): %s]", c.author, c.fc.Name, argsText(r.Args), outcome), r
}

// migrateEvent rewrites one event for m's new agent, or returns nil when
// nothing of it is kept (a partial event, thoughts only, a response).
func migrateEvent(ctx context.Context, ev *session.Event, calls map[string]*historyCall, m Migration) *session.Event {
	if ev.Partial || ev.Content == nil {
		return nil
	}
	sw, earlier, moved := MovedBy(ev)
	byPart := map[int]MovedCall{}
	for _, r := range earlier {
		byPart[r.Part] = r
	}
	var texts, recordTexts []string
	var records, fresh []MovedCall
	for i, p := range ev.Content.Parts {
		switch {
		case p.Thought:
		case p.Text != "":
			if r, ok := byPart[i]; ok {
				r.Part = len(texts)
				records = append(records, r)
			}
			texts = append(texts, p.Text)
		case p.FunctionCall != nil:
			if c, ok := calls[p.FunctionCall.ID]; ok {
				text, r := m.moved(c)
				recordTexts = append(recordTexts, text)
				fresh = append(fresh, r)
			}
		}
	}
	if len(texts) == 0 && len(recordTexts) == 0 {
		return nil
	}
	// Records follow the event's text, in call order.
	for i := range fresh {
		fresh[i].Part = len(texts) + i
	}
	records = append(records, fresh...)
	if !moved {
		sw = Switch{From: m.From, To: m.To, At: m.At}
	}
	e := movedEvent(ctx, ev, append(texts, recordTexts...), records, sw, m.To)
	for _, k := range m.Keep {
		if v, ok := ev.Actions.StateDelta[k]; ok {
			e.Actions.StateDelta[k] = v // session.NewEvent made the map
		}
	}
	for _, k := range m.KeepMetadata {
		if v, ok := ev.CustomMetadata[k]; ok {
			e.CustomMetadata[k] = v // movedEvent made the map
		}
	}
	return e
}

// movedEvent is the event that carries texts for ev: the user's when ev
// was a user message holding no record, agent's otherwise; marked with the
// switch sw and the records it holds.
func movedEvent(ctx context.Context, ev *session.Event, texts []string, records []MovedCall, sw Switch, agent string) *session.Event {
	e := session.NewEvent(ctx, ev.InvocationID)
	e.Timestamp = ev.Timestamp
	var parts []*genai.Part
	for _, t := range texts {
		parts = append(parts, genai.NewPartFromText(t))
	}
	if ev.Author == "user" && len(records) == 0 {
		e.Author = "user"
		e.Content = &genai.Content{Role: genai.RoleUser, Parts: parts}
	} else {
		e.Author = agent
		e.Content = &genai.Content{Role: genai.RoleModel, Parts: parts}
	}
	e.CustomMetadata = map[string]any{switchMetadataKey: sw}
	if len(records) > 0 {
		e.CustomMetadata[recordsMetadataKey] = records
	}
	return e
}

// MovedBy reports whether an agent switch moved ev (MigrateHistory built
// it), which switch first did, and the tool calls its text parts hold.
func MovedBy(ev *session.Event) (Switch, []MovedCall, bool) {
	var sw Switch
	if ev == nil || !metadataAs(ev.CustomMetadata[switchMetadataKey], &sw) {
		return Switch{}, nil, false
	}
	var records []MovedCall
	metadataAs(ev.CustomMetadata[recordsMetadataKey], &records)
	return sw, records, true
}

// metadataAs decodes a CustomMetadata value into v: the value is the
// struct MigrateHistory stored, or its JSON form once read back.
func metadataAs(value, v any) bool {
	if value == nil {
		return false
	}
	b, err := json.Marshal(value)
	return err == nil && json.Unmarshal(b, v) == nil
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
	ref := s.sessionRef(req.AppName, req.UserID, id)
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
		Chunks: chunks, Tail: tail, DocsClosed: true,
	})
	if err := s.addStateMerges(batch, req.AppName, req.UserID, appDelta, userDelta); err != nil {
		return nil, err
	}
	_, err = batch.Commit(ctx)
	switch err = FirestoreError(err); {
	case errors.Is(err, ErrAlreadyExists):
		return nil, fmt.Errorf("%w: %q", ErrAlreadyExists, id)
	case err != nil:
		return nil, fmt.Errorf("create session %q: %w", id, err)
	}
	got, err := s.Get(ctx, &session.GetRequest{AppName: req.AppName, UserID: req.UserID, SessionID: id})
	if err != nil {
		return nil, err
	}
	return &session.CreateResponse{Session: got.Session}, nil
}

// ScopedState returns the keys of the session's state that belong to
// the session itself (no app:, user: or temp: prefix).
func (ss *Session) ScopedState() map[string]any {
	all := map[string]any{}
	for k, v := range ss.State().All() {
		all[k] = v
	}
	return sessionScoped(all)
}
