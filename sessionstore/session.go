package sessionstore

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/internal/eventlist"
)

// Session is the session.Session this service hands out. Besides what
// ADK sees it carries the storage bookkeeping an append needs: the revision
// it was read at, the Firestore update time of its document (the
// compare-and-set token for that revision) and the chunk index.
type Session struct {
	app, user, id string

	// appendMu serialises appends through one handle, so they commit in
	// the order they were made.
	appendMu sync.Mutex

	mu     sync.RWMutex
	state  map[string]any
	events []*session.Event // as reads return them: rewound events left out
	// rewound are the events rewind marks took back (see rewind.go).
	rewound []*session.Event
	// complete says that events is the whole history, not a window.
	complete bool
	updated  time.Time
	revision int64
	version  time.Time
	chunks   []chunkMeta
	tail     []chunkElement
	// stateSize is the encoded size of the session-scoped state.
	stateSize int
	// tailKnown is false for handles from List, which do not read the tail
	// and so cannot append.
	tailKnown bool
	// lease, for a handle read under a lease (ReadRequest.Lease), fences its
	// appends instead of version.
	lease *Lease
	// stored is the lease as the session document held it when read.
	stored leaseDoc
	// docsOpen mirrors the document's mark that an append created
	// documents beside the session that may still be open (see
	// MayHaveOpenDocs).
	docsOpen bool
	// turnLog mirrors the document's log of recent turn times.
	turnLog []time.Time
	// tokens mirrors the document's count of the day's model tokens.
	tokens tokenCount
	// liveUntil mirrors the document's liveUntil, as read.
	liveUntil time.Time
	// staged are events readers see but not stored yet, oldest first
	// (see staged.go).
	staged []*StagedEvent
	// broken, once a staged event failed to be stored, fails every later
	// append: the handle is ahead of the store.
	broken error
}

var _ session.Session = (*Session)(nil)

// Of returns sess as this package's handle. A session this package did not
// hand out (from a Service's reads, ClaimNewSession or CreateWithEvents)
// fails: it is the one place a session.Session becomes a *Session, for
// what reaches this package through ADK's interfaces.
func Of(sess session.Session) (*Session, error) {
	ss, ok := sess.(*Session)
	if !ok || ss == nil {
		return nil, fmt.Errorf("session of type %T was not read from this package's Service", sess)
	}
	return ss, nil
}

func (s *Session) ID() string      { return s.id }
func (s *Session) AppName() string { return s.app }
func (s *Session) UserID() string  { return s.user }

func (s *Session) State() session.State { return &sessionState{s: s} }

func (s *Session) Events() session.Events {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.staged) > 0 {
		return eventlist.List(s.visibleEvents())
	}
	return eventlist.List(slices.Clone(s.events))
}

func (s *Session) LastUpdateTime() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.updated
}

type sessionState struct{ s *Session }

func (st *sessionState) Get(key string) (any, error) {
	st.s.mu.RLock()
	defer st.s.mu.RUnlock()
	v, ok := st.s.stagedState(key)
	if !ok {
		v, ok = st.s.state[key]
	}
	if !ok {
		return nil, session.ErrStateKeyNotExist
	}
	return v, nil
}

// Set changes the in-memory view only, as ADK's own services do; state is
// persisted through an event's StateDelta.
func (st *sessionState) Set(key string, value any) error {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	st.s.state[key] = value
	return nil
}

func (st *sessionState) All() iter.Seq2[string, any] {
	st.s.mu.RLock()
	snapshot := maps.Clone(st.s.state)
	for _, staged := range st.s.staged {
		maps.Copy(snapshot, staged.event.Actions.StateDelta)
	}
	st.s.mu.RUnlock()
	return maps.All(snapshot)
}
