package ledger

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/sessionstore"
)

// Await waits until c's record is no longer pending, and returns it as
// then recorded (answered, expired or cancelled); an error once ctx is
// done.
func (l *Ledger) Await(ctx context.Context, c *Call) (*Call, error) {
	it := l.ref(c.UserID, c.SessionID, c.ID).Snapshots(ctx)
	defer it.Stop()
	for {
		snap, err := it.Next()
		if err != nil {
			return nil, sessionstore.FirestoreError(err)
		}
		got, err := decode(snap)
		if err != nil {
			return nil, err
		}
		if got.Status != StatusPending {
			return got, nil
		}
	}
}

// Answers yields each record of a session that has an answer its agent
// does not have yet (answered, not resumed), once, as answers are
// recorded on any instance, until ctx ends: one listener on the session's
// records.
func (l *Ledger) Answers(ctx context.Context, user, sid string) iter.Seq2[*Call, error] {
	return func(yield func(*Call, error) bool) {
		q := l.calls(user, sid).Where(fieldStatus, "==", string(StatusResolved)).Where(fieldResumed, "==", false)
		it := q.Snapshots(ctx)
		defer it.Stop()
		seen := map[string]bool{}
		for {
			snap, err := it.Next()
			if err != nil {
				if ctx.Err() == nil {
					yield(nil, sessionstore.FirestoreError(err))
				}
				return
			}
			docs, err := snap.Documents.GetAll()
			if err != nil {
				yield(nil, sessionstore.FirestoreError(err))
				return
			}
			for _, doc := range docs {
				if seen[doc.Ref.ID] {
					continue
				}
				seen[doc.Ref.ID] = true
				if c, err := decode(doc); !yield(c, err) {
					return
				}
			}
		}
	}
}

// Questions follows a session's in-call questions, from any instance,
// until ctx ends: it yields each question pending when it starts or asked
// later (one already expired is left out: its asker died), and each of
// those again once closed (answered, expired or cancelled), as recorded.
// It listens to the session's pending questions: a read per question,
// none while nobody asks.
func (l *Ledger) Questions(ctx context.Context, user, sid string) iter.Seq2[*Call, error] {
	return func(yield func(*Call, error) bool) {
		q := l.calls(user, sid).Where(fieldInCall, "==", true).Where(fieldStatus, "==", string(StatusPending))
		it := q.Snapshots(ctx)
		defer it.Stop()
		shown := map[string]bool{} // the questions yielded as asked
		for {
			snap, err := it.Next()
			if err != nil {
				if ctx.Err() == nil {
					yield(nil, fmt.Errorf("follow in-call questions: %w", sessionstore.FirestoreError(err)))
				}
				return
			}
			for _, ch := range snap.Changes {
				c, err := l.questionChange(ctx, user, sid, ch, shown)
				if c == nil && err == nil {
					continue
				}
				if !yield(c, err) || err != nil {
					return
				}
			}
		}
	}
}

// questionChange reads what a change of Questions' results says: a
// question asked, or one of those shown closed, as now recorded; nil for
// anything else.
func (l *Ledger) questionChange(ctx context.Context, user, sid string, ch firestore.DocumentChange, shown map[string]bool) (*Call, error) {
	switch {
	case ch.Kind == firestore.DocumentAdded:
		c, err := decode(ch.Doc)
		if err != nil || !platform.Now(ctx).Before(c.Expires) {
			return nil, err
		}
		shown[ch.Doc.Ref.ID] = true
		return c, nil
	case ch.Kind == firestore.DocumentRemoved && shown[ch.Doc.Ref.ID]:
		delete(shown, ch.Doc.Ref.ID)
		c, err := l.Get(ctx, user, sid, ch.Doc.Ref.ID)
		if errors.Is(err, ErrNotFound) {
			return nil, nil // collected already: nothing to show
		}
		return c, err
	}
	return nil, nil
}
