package toolcallback

import (
	"context"
	"fmt"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/sessionstore"
)

// ledgerSessions is the session service the engine's runner appends
// through: an event that pauses calls is stored in the same commit as their
// ledger records, so no stored event holds a paused call without its
// record, and since the runner yields an event only once it is stored, no
// client sees a call before its record exists.
type ledgerSessions struct {
	*sessionstore.Service
	e *engine
}

func (l ledgerSessions) AppendEvent(ctx context.Context, sess session.Session, ev *session.Event) error {
	st := runStateFrom(ctx)
	if st == nil || ev == nil || ev.Partial {
		return l.Service.AppendEvent(ctx, sess, ev)
	}
	var docs []sessionstore.SideDoc
	for _, d := range pausedBy(st, sess.Events(), ev) {
		if err := sessionstore.ValidateID("call id", d.id); err != nil {
			return err
		}
		doc, err := l.e.newCallDoc(sess.UserID(), sess.ID(), d, st.client)
		if err != nil {
			return err
		}
		docs = append(docs, sessionstore.SideDoc{Ref: l.e.callRef(sess.UserID(), sess.ID(), d.id), Data: doc})
	}
	if err := l.Service.AppendEventWith(ctx, sess, ev, docs); err != nil {
		return fmt.Errorf("append event %q: %w", ev.ID, err)
	}
	return nil
}
