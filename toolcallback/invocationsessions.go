package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"

	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/userinput"
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
	chat   string        // the chat whose session it runs on ("" for none)
	tools  *pausingTools // the pausing tools its model requests offered
	// resumed are the records whose answers the invocation delivers: a
	// remote agent's may show surfaces with its response.
	resumed []*Call
	// title, when not nil, is the chat's title being made beside the
	// invocation: stored with the lease's release when it is ready by
	// then (title.go).
	title *titleJob

	mu sync.Mutex
	// handle is the session as the request read it, which the runner's
	// Get returns once instead of reading it again; nil once handed.
	handle *sessionstore.Session
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
	claimErr    error // what claimed received; guarded by mu
	// followUps are events stored on the runner's behalf after one it
	// appended (input.go), which readers get after it; guarded by mu.
	followUps []*session.Event

	// stageClaim: the first append stages the user's message and stores it
	// (taking the claimed lease) in the background, so the model is called
	// at once; the invocation is handed to the caller only once it is
	// stored. gate, when set, must pass before that commit is sent (a
	// check that reads what the turn's commit cannot be conditioned on,
	// such as the day's token count).
	stageClaim bool
	gate       func() error
	// claimStored is closed once a staged claim's commit reported;
	// claimStaged says whether one was staged at all.
	claimStored chan struct{}
	claimStaged bool
	// sess is the handle the runner appends through.
	sess *sessionstore.Session
	// heldBack are final replies staged to be stored with the lease's release
	// (see finish), not yet pushed to readers; last is the latest staged.
	heldBack []*session.Event
	last     *sessionstore.StagedEvent
	// created: an append of the run created ledger records; docsClosed:
	// the release may record that no record is open (closeDocs).
	created, docsClosed bool
}

// closeDocs says whether the release may record that no ledger record of
// the session is open: when closed, unless the run created records.
func (s *invocationSessions) closeDocs(closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docsClosed = closed && !s.created
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
	got, err := s.Service.Read(ctx, sessionstore.ReadRequest{App: req.AppName, User: req.UserID, SessionID: req.SessionID,
		Recent: req.NumRecentEvents, After: req.After, Shared: !s.e.opts.SessionStateOnly, Lease: s.held.lease})
	if err != nil {
		return nil, err
	}
	return &session.GetResponse{Session: got}, nil
}

// AppendEvent stores ev with the ledger records of the calls it pauses
// and, for the invocation's first event, what the request asked of it. A
// final reply is staged instead: stored by the next append, or with the
// lease's release when the invocation ends, and pushed to readers then.
func (s *invocationSessions) AppendEvent(ctx context.Context, handle session.Session, ev *session.Event) error {
	if ev == nil || ev.Partial {
		return s.Service.AppendEvent(ctx, handle, ev)
	}
	sess, err := sessionstore.Of(handle)
	if err != nil {
		return err
	}
	s.mu.Lock()
	opts := s.first
	s.first = sessionstore.AppendOptions{}
	s.sess = sess
	s.mu.Unlock()
	if opts.Claim == nil {
		// Through the handle, it would store the staged message itself
		// (and take the lease) before the gate passed.
		if err := s.awaitStagedClaim(); err != nil {
			return fmt.Errorf("append event %q: %w", ev.ID, err)
		}
	}
	again := userinput.HideStates(ev)
	s.tools.surfaces.Follow(sess)
	s.e.noteRemoteShows(sess.Events(), ev, s.resumed, &s.tools.surfaces)
	s.tools.surfaces.NoteShows(ev)
	records, listing, calls, err := s.e.records(ctx, sess, ev, s.tools, s.client, s.chat)
	if err == nil {
		err = s.e.opts.Files.SaveEventFiles(ctx, sess.UserID(), sess.ID(), ev)
	}
	// The tokens are counted with the event that reports them (package
	// limits).
	s.e.countTokens(&opts, limits.TokensUsed(ev.UsageMetadata), platform.Now(ctx))
	opts.Create = records
	opts.Writes = slices.Concat(opts.Writes, listing)
	if len(records) > 0 {
		s.mu.Lock()
		s.created = true
		s.mu.Unlock()
	}
	switch {
	case err != nil:
		if opts.Claim != nil {
			s.claimDone(ctx, err)
		}
	case opts.Claim != nil && s.stageClaim:
		err = s.stageClaimed(ctx, sess, ev, opts)
	case opts.Claim == nil && len(records) == 0 && len(again) == 0 && finalReply(ev):
		err = s.stageFinal(sess, ev, opts)
	default:
		err = s.Service.AppendEventWith(ctx, sess, ev, opts)
		if opts.Claim != nil {
			s.claimDone(ctx, err)
		}
		if err == nil {
			s.e.enqueueWork(ctx, calls) // stored: the background calls' work goes to the queue
		}
	}
	if err != nil {
		return fmt.Errorf("append event %q: %w", ev.ID, err)
	}
	countPaused(ctx, calls)
	countTokenUsage(ctx, s.e.agent, ev.ModelVersion, ev.UsageMetadata)
	if len(again) > 0 {
		return s.followUp(ctx, sess, ev, again)
	}
	return nil
}

// finalReply reports whether ev looks like the last event of its
// invocation: an agent's reply that calls nothing and pauses nothing.
func finalReply(ev *session.Event) bool {
	return ev.Author != "user" && len(ev.LongRunningToolIDs) == 0 && ev.IsFinalResponse()
}

// stageClaimed stages the user's message, which takes the claimed lease,
// and stores it in the background; the runner goes on to the model.
func (s *invocationSessions) stageClaimed(ctx context.Context, sess *sessionstore.Session, ev *session.Event, opts sessionstore.AppendOptions) error {
	st, err := s.Service.StageEvent(sess, ev, opts)
	if err != nil {
		s.claimDone(ctx, err)
		return err
	}
	s.mu.Lock()
	s.claimStaged = true
	s.mu.Unlock()
	go func() {
		defer close(s.claimStored)
		if s.gate != nil {
			if err := s.gate(); err != nil {
				s.claimDone(ctx, err) // nothing is stored: the handle keeps its staged message, and is dropped
				return
			}
		}
		s.claimDone(ctx, st.Commit(ctx))
	}()
	return nil
}

// claimError is the error the invocation's claim was refused with; nil
// while none was refused.
func (s *invocationSessions) claimError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimErr
}

// stageFinal stages a final reply, held back from readers until stored.
func (s *invocationSessions) stageFinal(sess *sessionstore.Session, ev *session.Event, opts sessionstore.AppendOptions) error {
	st, err := s.Service.StageEvent(sess, ev, opts)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.heldBack, s.last = append(s.heldBack, ev), st
	s.mu.Unlock()
	return nil
}

// holds reports whether ev is a staged reply not yet pushed.
func (s *invocationSessions) holds(ev *session.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.heldBack, ev)
}

// pushHeld stores the staged replies, if any, and pushes them to inv.
func (s *invocationSessions) pushHeld(ctx context.Context, inv *Invocation) error {
	s.mu.Lock()
	held, last := s.heldBack, s.last
	s.heldBack, s.last = nil, nil
	s.mu.Unlock()
	if last == nil {
		return nil
	}
	if err := last.Commit(ctx); err != nil {
		return err
	}
	for _, ev := range held {
		inv.push(ev)
	}
	return nil
}

// awaitStagedClaim waits until a staged claim's commit, if the run staged
// one, reported, and returns its error: the invocation's end, to know
// whether it holds the lease, and every append after the first, so that a
// turn refused for its budget, or planned on a stale copy, stores nothing.
// A run that ended before its first append staged none.
func (s *invocationSessions) awaitStagedClaim() error {
	s.mu.Lock()
	staged := s.claimStaged
	s.mu.Unlock()
	if !staged {
		return nil
	}
	if s.e.opts.awaitingClaim != nil {
		s.e.opts.awaitingClaim()
	}
	<-s.claimStored
	return s.claimError()
}

// finish ends the invocation's hold on the session: the staged replies
// are stored with the lease's release (or the lease released alone),
// then pushed to inv. It returns the handle when it is still the session
// as stored (sessionstore.Session.AsStored), for a later warm turn; nil
// otherwise.
func (s *invocationSessions) finish(ctx context.Context, inv *Invocation) *sessionstore.Session {
	h := s.held
	s.mu.Lock()
	sess, held, closed := s.sess, s.heldBack, s.docsClosed
	s.heldBack, s.last = nil, nil
	s.mu.Unlock()
	if sess == nil || h.stop == nil || sess.HeldLease() != h.lease {
		s.e.release(ctx, h)
		return nil
	}
	h.stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	release := sessionstore.ReleaseOptions{DocsClosed: closed}
	if s.chat != "" {
		release.Writes = []sessionstore.Write{s.Service.ChatIdle(sessionstore.ChatKey{App: s.e.app, User: sess.UserID(), ID: s.chat}, s.title.take())}
	}
	if err := s.Service.ReleaseSession(ctx, sess, release); err != nil {
		s.title.leave()
		s.e.opts.Logger.Warn("release lease", "session", sess.ID(), "error", err)
		if len(held) > 0 {
			inv.fail(fmt.Errorf("store the reply: %w", err))
			// The lease is still held if the reply's commit failed.
			if err := s.Service.ReleaseLease(ctx, h.lease); err != nil {
				s.e.opts.Logger.Warn("release lease", "session", sess.ID(), "error", err)
			}
		}
		return nil
	}
	for _, ev := range held {
		inv.push(ev)
	}
	if !sess.AsStored() {
		return nil
	}
	return sess
}

// followUp stores the confirmation call that pauses a tool which, run
// again with an answer, asked for input again (ADK stores none then), with
// its ledger record, and hands it to the invocation's readers after ev. A
// crash before it leaves a question without its call, which repair closes
// (interruptedReruns).
func (s *invocationSessions) followUp(ctx context.Context, sess *sessionstore.Session, ev *session.Event, again map[string]toolconfirmation.ToolConfirmation) error {
	conf := userinput.ConfirmationEvent(ctx, sess.Events(), ev, again)
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
		s.mu.Lock()
		s.claimErr = err
		s.mu.Unlock()
		s.claimed <- err
	})
}
