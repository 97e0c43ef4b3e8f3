package toolcallback

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/transcript"
)

// interruptedKey marks, in an event's CustomMetadata, the note Baton stores
// for a message whose invocation died before answering it.
const interruptedKey = "baton_interrupted"

// interruptedText is that note, as the model and the page read it.
const interruptedText = "(No answer: the server stopped while working on this. Please send it again.)"

// repairTail makes the tail of sess valid for the model after a holder
// died, under the session's lease. lead are responses the caller delivers
// in the same content (settled ledger calls); known are the ids of calls
// the ledger still answers, which must not be closed here.
//
// What a session can hold after the process running its invocation died,
// and what repairTail does about it:
//
//   - A call of a pausing tool, stored with its ledger record: it stays
//     pending; Pending lists it and it can be answered. (The record and the
//     call are one commit, so there is no call without a record.)
//   - Any other call without a response (the model asked for an ordinary
//     tool, or for an approval tool before ADK stored its confirmation
//     request, and the process died before the tool's response was
//     stored): it is closed with an error response saying the call was
//     interrupted and may or may not have taken effect.
//   - A user message, or responses to calls the ledger no longer holds
//     open, that no model event follows: the invocation that should have
//     answered them died. An agent event marked interruptedKey says so, in
//     the transcript the model reads and the page shows; the user can ask
//     again.
//
// An approval tool's response saying confirmation is required, stored by a
// process that died before ADK stored the confirmation request, stays as
// it is: the model sees that the call was not confirmed. A tool's question
// whose confirmation call was never stored, and a call whose confirmation
// (an approval, an answer to a question) was delivered but whose tool, run
// again, died before responding, are closed like interrupted calls
// (interruptedReruns).
func (e *engine) repairTail(ctx context.Context, sess *sessionstore.Session, lead []*genai.Part, known map[string]bool) error {
	events := sess.Events()
	if transcript.Unanswered(events, known) {
		ev := session.NewEvent(ctx, "baton-interrupted-"+platform.NewUUID(ctx))
		ev.Author = e.agent
		ev.Content = genai.NewContentFromText(interruptedText, genai.RoleModel)
		ev.CustomMetadata = map[string]any{interruptedKey: true}
		if err := e.sessions.AppendEvent(ctx, sess, ev); err != nil {
			return fmt.Errorf("record interrupted message: %w", err)
		}
	}
	parts := append(lead, transcript.InterruptedCalls(events, known)...)
	if len(parts) == 0 {
		return nil
	}
	ev := session.NewEvent(ctx, "baton-settle-"+platform.NewUUID(ctx))
	ev.Author = "user"
	ev.Content = &genai.Content{Role: genai.RoleUser, Parts: parts}
	if err := e.sessions.AppendEvent(ctx, sess, ev); err != nil {
		return fmt.Errorf("record settled calls: %w", err)
	}
	return nil
}

// knownCalls are the call ids (model and confirmation ids) of ledger
// records.
func knownCalls(docs []*Call) map[string]bool {
	known := map[string]bool{}
	for _, d := range docs {
		known[d.ID], known[d.OriginalID] = true, true
	}
	return known
}

// repairIfIdle repairs the tail of sess (read with the ledger's unresumed
// records docs) if its lease is free, and returns the session as it now
// is; a live holder (or a dead one whose lease has not lapsed yet) leaves
// it to a later access.
func (e *engine) repairIfIdle(ctx context.Context, sess *sessionstore.Session, docs []*Call) (*sessionstore.Session, error) {
	user, sid := sess.UserID(), sess.ID()
	h, err := e.acquire(ctx, user, sid, "repair", 0)
	if errors.Is(err, sessionstore.ErrBusy) {
		return sess, nil
	}
	if err != nil {
		return nil, err
	}
	defer e.release(ctx, h)
	// Read again under the lease: a turn may have run in between.
	if sess, err = e.loadRecent(ctx, h.lease, user, sid); err != nil {
		return nil, err
	}
	if docs, err = e.ledger.Unresumed(ctx, user, sid); err != nil {
		return nil, err
	}
	return sess, e.repairTail(ctx, sess, nil, knownCalls(docs))
}
