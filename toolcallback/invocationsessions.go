package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"

	"github.com/baton-run/baton/sessionstore"
)

// invocationSessions is the session service of one invocation: the engine
// builds a runner around it per invocation (runner.New is cheap), so it
// holds what the request prepared for the runner instead of passing it
// through the context. It stores an event that pauses calls in the same
// commit as their ledger records, so no stored event holds a paused call
// without its record, and since the runner yields an event only once it is
// stored, no client sees a call before its record exists.
type invocationSessions struct {
	*sessionstore.Service
	e      *engine
	client string        // the client that started the invocation
	tools  *pausingTools // the pausing tools its model requests offered

	mu sync.Mutex
	// handle is the session as the request read it, which the runner's
	// Get returns once instead of reading it again; nil once handed.
	handle session.Session
	// held is the session's lease, held by the request or claimed by the
	// first append; the runner's own reads are made under it.
	held *heldLease
	// first is what the invocation's first append does besides storing
	// the user's message: take the claimed lease, mark the ledger's
	// records closed. Used once.
	first sessionstore.AppendOptions
	// claimed receives the outcome of the append that takes first.Claim,
	// or of the invocation ending without one.
	claimed     chan error
	claimedOnce sync.Once
	// followUps are events stored on the runner's behalf after one it
	// appended (input.go), which readers get after it; guarded by mu.
	followUps []*session.Event
}

// Get returns the handle the request read, once, for the session it names;
// any other Get reads the store, under the invocation's lease. The handle
// is current: the request holds the session's lease, or takes it with its
// first append, which fails if the session changed since the handle was
// read.
func (s *invocationSessions) Get(ctx context.Context, req *session.GetRequest) (*session.GetResponse, error) {
	s.mu.Lock()
	h := s.handle
	if h != nil && req.NumRecentEvents == 0 && req.After.IsZero() &&
		h.AppName() == req.AppName && h.UserID() == req.UserID && h.ID() == req.SessionID {
		s.handle = nil
		s.mu.Unlock()
		return &session.GetResponse{Session: h}, nil
	}
	s.mu.Unlock()
	return s.Service.Get(sessionstore.WithLease(ctx, s.held.lease), req)
}

// AppendEvent stores ev with the ledger records of the calls it pauses
// and, for the invocation's first event, what the request asked of it.
func (s *invocationSessions) AppendEvent(ctx context.Context, sess session.Session, ev *session.Event) error {
	if ev == nil || ev.Partial {
		return s.Service.AppendEvent(ctx, sess, ev)
	}
	s.mu.Lock()
	opts := s.first
	s.first = sessionstore.AppendOptions{}
	s.mu.Unlock()
	again := hideInputStates(ev)
	records, err := s.ledgerRecords(sess, ev)
	if err == nil {
		err = s.e.storeEventFiles(ctx, sess, ev) // files.go
	}
	if n := tokensUsed(ev.UsageMetadata); n > 0 && s.e.opts.CountTokens {
		// The tokens are counted with the event that reports them.
		opts.Writes = append(opts.Writes, tokenWrite(s.e.sessions, s.e.app, sess.UserID(), platform.Now(ctx), n))
	}
	if err == nil {
		opts.Create = records
		err = s.Service.AppendEventWith(ctx, sess, ev, opts)
	}
	if opts.Claim != nil {
		s.claimDone(ctx, err)
	}
	if err != nil {
		return fmt.Errorf("append event %q: %w", ev.ID, err)
	}
	if len(again) > 0 {
		return s.followUp(ctx, sess, ev, again)
	}
	return nil
}

// followUp stores the confirmation call that pauses a tool which, run
// again with an answer, asked for input again (ADK stores none then), with
// its ledger record, and hands it to the invocation's readers after ev. A
// crash before it leaves a question without its call, which repair closes
// (interruptedReruns).
func (s *invocationSessions) followUp(ctx context.Context, sess session.Session, ev *session.Event, again map[string]toolconfirmation.ToolConfirmation) error {
	conf := inputConfirmationEvent(ctx, sess.Events(), ev, again)
	if conf == nil {
		return nil
	}
	if err := s.AppendEvent(ctx, sess, conf); err != nil {
		return err
	}
	s.mu.Lock()
	s.followUps = append(s.followUps, conf)
	s.mu.Unlock()
	return nil
}

// takeFollowUps returns the events stored on the runner's behalf since the
// last call.
func (s *invocationSessions) takeFollowUps() []*session.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.followUps
	s.followUps = nil
	return out
}

// ledgerRecords are the records of the calls ev pauses, for the commit
// that stores it.
func (s *invocationSessions) ledgerRecords(sess session.Session, ev *session.Event) ([]sessionstore.DocCreate, error) {
	var docs []sessionstore.DocCreate
	for _, d := range pausedBy(s.tools, sess.Events(), ev) {
		if err := sessionstore.ValidateID("call id", d.id); err != nil {
			return nil, err
		}
		doc, err := s.e.newCallDoc(sess.UserID(), sess.ID(), d, s.client)
		if err != nil {
			return nil, err
		}
		docs = append(docs, sessionstore.DocCreate{Ref: s.e.callRef(sess.UserID(), sess.ID(), d.id), Data: doc})
	}
	return docs, nil
}

// errNoClaimingAppend is the claim's outcome when the invocation ended
// before storing the user's message.
var errNoClaimingAppend = errors.New("invocation ended before storing the message")

// claimDone reports the outcome of the claiming append and, if it took
// the lease, starts renewing it. Only the first report counts.
func (s *invocationSessions) claimDone(ctx context.Context, err error) {
	if s.claimed == nil {
		return
	}
	s.claimedOnce.Do(func() {
		if err == nil {
			s.e.keep(ctx, s.held)
		}
		s.claimed <- err
	})
}
