package sessionstore

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
)

// Firestore refuses documents over 1 MiB (1,048,576 bytes, field names and
// the document name included). The budgets below leave room for both.
const (
	// docBudget is the most bytes of state, chunk index and events one
	// document holds.
	docBudget = 1_000_000
	// elementOverhead approximates the cost of one stored event beyond its
	// JSON (the map, its two field names and the revision integer).
	elementOverhead = 24
	// chunkMetaBytes approximates the cost of one chunk index entry.
	chunkMetaBytes = 96
	// stateBudget is the most encoded state one document (session, user or
	// app) may hold.
	stateBudget = 900_000
)

// MaxIDBytes is Firestore's limit on a document id, and so on every id
// ValidateID accepts.
const MaxIDBytes = 1500

// sessionDoc is the stored form of a session: its metadata, its
// session-scoped state, the index of its sealed event chunks and its most
// recent events (the tail).
type sessionDoc struct {
	App     string    `firestore:"app"`
	User    string    `firestore:"user"`
	ID      string    `firestore:"id"`
	Scope   string    `firestore:"scope"` // "<root>/<app>", the List filter across users
	State   []byte    `firestore:"state"` // JSON object of session-scoped keys
	Created time.Time `firestore:"created"`
	// Updated is the timestamp of the last appended event (ADK's
	// LastUpdateTime), not the storage write time.
	Updated  time.Time      `firestore:"updated"`
	Revision int64          `firestore:"revision"`
	Chunks   []chunkMeta    `firestore:"chunks"`
	Tail     []chunkElement `firestore:"tail"`
	Lease    leaseDoc       `firestore:"lease"`
	// DocsClosed is false once an append created documents beside the
	// session (AppendOptions.Create), and true again only when their owner
	// says none is open (AppendOptions.DocsClosed): true means there is
	// nothing to look up. A document
	// stored before the field existed reads as false, "look it up".
	DocsClosed bool `firestore:"sideDocsClosed"`
	// TurnLog holds the times of the chat's recent turns, for its turn
	// rate limit (see Session.TurnLog).
	TurnLog []time.Time `firestore:"turnLog,omitempty"`
	// TokensDay and TokensUsed are the model tokens the session's events
	// reported on one UTC day ("2006-01-02"; see AppendOptions.Tokens and
	// SessionTokens).
	TokensDay  string `firestore:"tokensDay,omitempty"`
	TokensUsed int64  `firestore:"tokensUsed,omitempty"`
	// LiveUntil is, while a live segment holds the lease, when that lease
	// runs out unless renewed (see SessionsLive); removed on release.
	LiveUntil time.Time `firestore:"liveUntil,omitempty"`
}

// chunkMeta describes one sealed chunk document so that Get can pick the
// chunks a filter needs without reading the others.
type chunkMeta struct {
	N     int64     `firestore:"n"`
	Count int64     `firestore:"count"`
	First time.Time `firestore:"first"`
	Last  time.Time `firestore:"last"`
}

// chunkDoc holds a run of consecutive events. It is written once, when the
// session's tail is sealed, and never changes afterwards.
type chunkDoc struct {
	Events []chunkElement `firestore:"events"`
}

// chunkElement is one stored event, tagged with the revision that appended
// it (which also keeps equal events distinct under ArrayUnion).
type chunkElement struct {
	Revision int64     `firestore:"r"`
	Time     time.Time `firestore:"t"`
	Event    []byte    `firestore:"e"` // JSON of storedEvent
}

func (e chunkElement) size() int { return len(e.Event) + elementOverhead }

func elementsSize(els []chunkElement) int {
	n := 0
	for _, e := range els {
		n += e.size()
	}
	return n
}

// stateDoc is the stored form of app or user state. Each key is a separate
// field holding its JSON value, so an append can merge keys without reading.
type stateDoc struct {
	State map[string][]byte `firestore:"state"`
}

// storedEvent is the JSON form of a session.Event. Maps and slices have no
// omitempty, so nil and empty values come back as they went in. The fields
// ADK v2 added for workflows and isolation scopes are omitted when unset, so
// that ordinary events do not grow; Routes is a pointer for the same
// nil-versus-empty reason.
type storedEvent struct {
	ID                 string                `json:"id"`
	Timestamp          time.Time             `json:"ts"`
	InvocationID       string                `json:"inv"`
	Branch             string                `json:"branch"`
	Author             string                `json:"author"`
	Actions            session.EventActions  `json:"actions"`
	LongRunningToolIDs []string              `json:"longRunningToolIds"`
	Response           model.LLMResponse     `json:"response"`
	IsolationScope     string                `json:"isolationScope,omitempty"`
	Routes             *[]string             `json:"routes,omitempty"`
	RequestedInput     *session.RequestInput `json:"requestedInput,omitempty"`
	Output             any                   `json:"output,omitempty"`
	NodeInfo           *session.NodeInfo     `json:"nodeInfo,omitempty"`
}

func encodeEvent(e *session.Event) ([]byte, error) {
	se := storedEvent{
		ID:                 e.ID,
		Timestamp:          e.Timestamp,
		InvocationID:       e.InvocationID,
		Branch:             e.Branch,
		Author:             e.Author,
		Actions:            e.Actions,
		LongRunningToolIDs: e.LongRunningToolIDs,
		Response:           e.LLMResponse,
		IsolationScope:     e.IsolationScope,
		RequestedInput:     e.RequestedInput,
		Output:             e.Output,
		NodeInfo:           e.NodeInfo,
	}
	if e.Routes != nil {
		se.Routes = &e.Routes
	}
	b, err := json.Marshal(se)
	if err != nil {
		return nil, fmt.Errorf("encode event %q: %w", e.ID, err)
	}
	return b, nil
}

func decodeEvent(b []byte) (*session.Event, error) {
	var se storedEvent
	if err := json.Unmarshal(b, &se); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	e := &session.Event{
		LLMResponse:        se.Response,
		ID:                 se.ID,
		Timestamp:          se.Timestamp,
		InvocationID:       se.InvocationID,
		Branch:             se.Branch,
		Author:             se.Author,
		Actions:            se.Actions,
		LongRunningToolIDs: se.LongRunningToolIDs,
		IsolationScope:     se.IsolationScope,
		RequestedInput:     se.RequestedInput,
		Output:             se.Output,
		NodeInfo:           se.NodeInfo,
	}
	if se.Routes != nil {
		e.Routes = *se.Routes
	}
	return e, nil
}

// encodeState encodes a session-scoped state map as one JSON object.
func encodeState(state map[string]any) ([]byte, error) {
	if state == nil {
		state = map[string]any{}
	}
	b, err := json.Marshal(state)
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	if len(b) > stateBudget {
		return nil, fmt.Errorf("%w: session state is %d bytes, limit %d", ErrTooLarge, len(b), stateBudget)
	}
	return b, nil
}

func decodeState(b []byte) (map[string]any, error) {
	state := map[string]any{}
	if len(b) == 0 {
		return state, nil
	}
	if err := json.Unmarshal(b, &state); err != nil {
		return nil, fmt.Errorf("decode state: %w", err)
	}
	return state, nil
}

// encodeStateValues encodes each value of a scoped state delta on its own.
func encodeStateValues(delta map[string]any) (map[string][]byte, error) {
	out := make(map[string][]byte, len(delta))
	total := 0
	for k, v := range delta {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode state key %q: %w", k, err)
		}
		total += len(k) + len(b)
		out[k] = b
	}
	if total > stateBudget {
		return nil, fmt.Errorf("%w: state delta is %d bytes, limit %d", ErrTooLarge, total, stateBudget)
	}
	return out, nil
}

func decodeStateValues(fields map[string][]byte) (map[string]any, error) {
	out := make(map[string]any, len(fields))
	for k, b := range fields {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("decode state key %q: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// splitState splits a state map by scope. Keys keep their prefixes, so the
// app and user maps hold "app:x" and "user:y"; temp: keys are dropped.
func splitState(delta map[string]any) (app, user, sess map[string]any) {
	app, user, sess = map[string]any{}, map[string]any{}, map[string]any{}
	for k, v := range delta {
		switch {
		case strings.HasPrefix(k, session.KeyPrefixApp):
			app[k] = v
		case strings.HasPrefix(k, session.KeyPrefixUser):
			user[k] = v
		case strings.HasPrefix(k, session.KeyPrefixTemp):
		default:
			sess[k] = v
		}
	}
	return app, user, sess
}

// withoutTempDelta returns e, or a shallow copy of it whose state delta has
// no temp: keys when it had some.
func withoutTempDelta(e *session.Event) *session.Event {
	hasTemp := false
	for k := range e.Actions.StateDelta {
		hasTemp = hasTemp || isTemp(k)
	}
	if !hasTemp {
		return e
	}
	c := *e
	c.Actions.StateDelta = maps.Clone(e.Actions.StateDelta)
	maps.DeleteFunc(c.Actions.StateDelta, func(k string, _ any) bool { return isTemp(k) })
	return &c
}

func isTemp(key string) bool { return strings.HasPrefix(key, session.KeyPrefixTemp) }

// validateID checks that id can be used as a Firestore document id.
func validateID(kind, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalidID, kind)
	case len(id) > MaxIDBytes:
		return fmt.Errorf("%w: %s is %d bytes, limit %d", ErrInvalidID, kind, len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidID, kind)
	case strings.IndexByte(id, 0) >= 0:
		return fmt.Errorf("%w: %s contains NUL", ErrInvalidID, kind)
	case strings.Contains(id, "/"):
		return fmt.Errorf("%w: %s %q contains '/'", ErrInvalidID, kind, id)
	case id == "." || id == "..":
		return fmt.Errorf("%w: %s %q is reserved", ErrInvalidID, kind, id)
	case len(id) >= 4 && strings.HasPrefix(id, "__") && strings.HasSuffix(id, "__"):
		return fmt.Errorf("%w: %s %q matches the reserved form __x__", ErrInvalidID, kind, id)
	}
	return nil
}

// ValidateID reports whether id may name an app, user or session. It wraps
// ErrInvalidID when it may not. Callers that build their own document paths
// from ids (the pending-call ledger, the HTTP layer) use it too.
func ValidateID(kind, id string) error { return validateID(kind, id) }
