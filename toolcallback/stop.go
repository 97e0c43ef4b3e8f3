package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/transcript"
)

// stoppedNote is that event's text when the model had streamed nothing of
// its current response.
const stoppedNote = "(Stopped.)"

// stoppedCallError is the response of a call a stop closed.
const stoppedCallError = "stopped: the user stopped the turn before this call finished; it may or may not have taken effect"

// stopListenDelay is how long an invocation runs before it listens for a
// stop request.
const stopListenDelay = 500 * time.Millisecond

// StopReport says what Team.Stop found and did.
type StopReport struct {
	// Running: an invocation was running in the chat and was asked to
	// stop.
	Running bool
	// Ended: that invocation has ended, within the wait Stop was given.
	Ended bool
	// Cancelled lists the calls of a paused turn that the stop cancelled.
	Cancelled []string
}

// Stop stops what runs in the chat, whichever instance runs it, and
// reports what it found: an invocation running (asked to stop; Stop waits
// up to wait for it to end), a turn paused on calls (they are cancelled
// and closed in the transcript), or nothing (no write). An unknown chat,
// or another user's, is sessionstore.ErrNotFound.
func (t *Team) Stop(ctx context.Context, user, chatID string, wait time.Duration) (*StopReport, error) {
	if err := validIDs("user id", user, "chat id", chatID); err != nil {
		return nil, err
	}
	st, err := t.sessions.ReadChat(ctx, sessionstore.ChatRead{App: t.app, User: user, ChatID: chatID, SessionID: t.memory.guess(user, chatID)})
	if err != nil {
		return nil, err
	}
	chat, sess := st.Chat, st.Session
	if chat == nil {
		return nil, fmt.Errorf("%w: chat %q", sessionstore.ErrNotFound, chatID)
	}
	if chat.Finished() {
		return &StopReport{}, nil // deleted: nothing is left to run
	}
	t.memory.points(user, chatID, chat.SessionID)
	e := t.engine(chat.Agent)
	if sess == nil {
		sess, err = e.loadRecent(ctx, nil, user, chat.SessionID)
		if errors.Is(err, sessionstore.ErrNotFound) {
			return &StopReport{}, nil // the chat's first turn never ran
		}
		if err != nil {
			return nil, err
		}
	}
	if fence, live := sess.LiveLease(ctx); live {
		if err := t.sessions.RequestStop(ctx, t.app, user, sess.ID(), fence); err != nil {
			return nil, err
		}
		return &StopReport{Running: true, Ended: awaitIdle(ctx, t.sessions, t.app, user, sess.ID(), wait)}, nil
	}
	if !sess.MayHaveOpenDocs() {
		return &StopReport{}, nil
	}
	return e.stopPaused(ctx, user, sess.ID())
}

// awaitIdle waits up to wait for the session's lease to be free, and
// reports whether it was.
func awaitIdle(ctx context.Context, sessions *sessionstore.Service, app, user, sid string, wait time.Duration) bool {
	if wait <= 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for c, err := range sessions.Watch(ctx, app, user, sid, 1) {
		if err != nil {
			return errors.Is(err, sessionstore.ErrNotFound)
		}
		if !c.Busy {
			return true
		}
	}
	return false
}

// stopPaused stops a turn paused on calls: under the session's lease, its
// pending calls are cancelled and closed in the transcript. A session
// with no pending call is left as it is.
func (e *engine) stopPaused(ctx context.Context, user, sid string) (*StopReport, error) {
	pending, err := e.ledger.Pending(ctx, user, sid)
	if err != nil || len(pending) == 0 {
		return &StopReport{}, err
	}
	h, err := e.acquire(ctx, user, sid, "stop", 0)
	if errors.Is(err, sessionstore.ErrNotFound) {
		return &StopReport{}, nil
	}
	if err != nil {
		return nil, err // busy: a turn or a resume started meanwhile
	}
	defer e.release(ctx, h)
	sess, err := e.loadRecent(ctx, h.lease, user, sid)
	if err != nil {
		return nil, err
	}
	docs, err := e.closeOpenCalls(ctx, sess)
	if err != nil {
		return nil, err
	}
	report := &StopReport{}
	for _, d := range docs {
		if d.Status == StatusCancelled {
			report.Cancelled = append(report.Cancelled, d.ID)
		}
	}
	note := e.stopNote(ctx, "baton-stop-"+platform.NewUUID(ctx), nil, "")
	return report, e.closeStopped(ctx, sess, docs, note, func(*session.Event) {})
}

// stopNote is the final assistant event of a stopped turn: text (the
// model's unfinished response, when it had streamed some) as the model
// that streamed it (like, when not nil).
func (e *engine) stopNote(ctx context.Context, invocation string, like *session.Event, text string) *session.Event {
	ev := session.NewEvent(ctx, invocation)
	ev.Author = e.agent
	if like != nil {
		ev.Author, ev.Branch = like.Author, like.Branch
	}
	if strings.TrimSpace(text) == "" {
		text = stoppedNote
	}
	ev.Content = genai.NewContentFromText(text, genai.RoleModel)
	ev.CustomMetadata = map[string]any{transcript.StopNoteKey: true}
	return ev
}

// closeStopped stores, under the lease sess was read with, what a stop
// leaves: a response for every call the agent does not have one for
// (docs: the ledger's records not yet resumed, as now recorded), the
// records marked resumed, then note, whose commit records that no record
// is open. push hands each stored event to the invocation's readers.
//
// Crash at any write: records cancelled but not delivered are delivered
// by the next turn (settleOpenCalls); responses stored without the note
// are answered by repairTail's note.
func (e *engine) closeStopped(ctx context.Context, sess *sessionstore.Session, docs []*Call, note *session.Event, push func(*session.Event)) error {
	if parts := stopResponses(sess, docs); len(parts) > 0 {
		ev := session.NewEvent(ctx, note.InvocationID)
		ev.Author = "user"
		ev.Content = &genai.Content{Role: genai.RoleUser, Parts: parts}
		if err := e.sessions.AppendEvent(ctx, sess, ev); err != nil {
			return err
		}
		push(ev)
	}
	if err := e.ledger.MarkResumed(ctx, docs); err != nil {
		return err
	}
	if err := e.sessions.AppendEventWith(ctx, sess, note, sessionstore.AppendOptions{DocsClosed: true}); err != nil {
		return err
	}
	push(note)
	return nil
}

// stopResponses are the responses a stop gives: recorded answers the
// agent does not have, and an error saying the turn was stopped for every
// call cancelled or never finished.
func stopResponses(sess *sessionstore.Session, docs []*Call) []*genai.Part {
	todo := undelivered(sess, docs)
	parts := responseParts(todo, false)
	for i, d := range todo {
		if d.Status == StatusCancelled {
			parts[i].FunctionResponse.Response = map[string]any{"error": stoppedCallError}
		}
	}
	for _, p := range transcript.InterruptedCalls(sess.Events(), knownCalls(docs)) {
		p.FunctionResponse.Response = map[string]any{"error": stoppedCallError}
		parts = append(parts, p)
	}
	return parts
}

// stopWatch is a running invocation's side of a stop: the runner runs
// under ctx, which a stop request cancels, and the watch keeps the text
// the model has streamed of its current response.
type stopWatch struct {
	ctx    context.Context
	cancel context.CancelFunc
	asked  atomic.Bool

	mu         sync.Mutex
	invocation string         // the invocation's id, from its events
	last       *session.Event // the latest partial event of the current response
	text       strings.Builder
}

// watchStop returns the stop watch of an invocation running under ctx
// with the lease of h: from stopListenDelay on, until ctx ends, it
// listens for a stop request.
func (e *engine) watchStop(ctx context.Context, h *heldLease) *stopWatch {
	sw := &stopWatch{}
	sw.ctx, sw.cancel = context.WithCancel(ctx)
	go func() {
		delay := time.NewTimer(stopListenDelay)
		defer delay.Stop()
		select {
		case <-sw.ctx.Done():
			return
		case <-delay.C:
		}
		// A listen stream that fails is opened again: a live segment
		// listens for as long as its conversation lasts.
		for {
			err := e.sessions.AwaitStop(sw.ctx, h.lease)
			switch {
			case err == nil:
				e.opts.Logger.Info("stop requested", "session", h.lease.SessionID)
				sw.asked.Store(true)
				sw.cancel()
				return
			case sw.ctx.Err() != nil:
				return
			}
			e.opts.Logger.Warn("listen for a stop request", "session", h.lease.SessionID, "error", err)
			select {
			case <-sw.ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return sw
}

// streaming reports whether partial events of a response were noted
// since the last final event.
func (sw *stopWatch) streaming() bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.last != nil
}

// note follows the invocation's events: the text of the partial events
// since the last final one is what a stop keeps.
func (sw *stopWatch) note(ev *session.Event) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.invocation == "" {
		sw.invocation = ev.InvocationID
	}
	if !ev.Partial {
		sw.last = nil
		sw.text.Reset()
		return
	}
	if ev.Content == nil || ev.Author == "user" {
		return
	}
	if sw.last != nil && (sw.last.Author != ev.Author || sw.last.Branch != ev.Branch) {
		sw.text.Reset()
	}
	sw.last = ev
	for _, p := range ev.Content.Parts {
		if p != nil && !p.Thought {
			sw.text.WriteString(p.Text)
		}
	}
}

// endStopped runs after a stopped invocation's runner returned, under its
// lease: it closes what the invocation left (closeStopped) and hands the
// events to inv's readers. cut says the runner returned an error; one
// that finished first (its answer stored, the session needing nothing)
// leaves nothing to close unless it paused on calls.
func (e *engine) endStopped(ctx context.Context, h *heldLease, run invocationRun, sw *stopWatch, cut bool, inv *Invocation) error {
	sess, err := e.loadRecent(ctx, h.lease, run.user, run.session)
	if err != nil {
		return err
	}
	docs, err := e.closeOpenCalls(ctx, sess)
	if err != nil {
		return err
	}
	cancelled := slices.ContainsFunc(docs, func(d *Call) bool { return d.Status == StatusCancelled })
	if !cut && !cancelled && !transcript.NeedsRepair(sess.Events(), knownCalls(docs)) {
		return nil
	}
	sw.mu.Lock()
	invocation, like, text := sw.invocation, sw.last, sw.text.String()
	sw.mu.Unlock()
	if invocation == "" {
		invocation = "baton-stop-" + platform.NewUUID(ctx)
	}
	return e.closeStopped(ctx, sess, docs, e.stopNote(ctx, invocation, like, text), inv.push)
}
