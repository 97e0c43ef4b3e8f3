package toolcallback

import (
	"context"
	"time"

	"github.com/baton-run/baton/sessionstore"
)

// The per-agent engine is unexported; these aliases let the tests drive one
// directly, as before it was.
type (
	Engine      = engine
	TurnRequest = turnRequest
)

var New = newEngine

func (e *engine) Turn(ctx context.Context, req turnRequest) (*Invocation, error) {
	if err := validIDs("user id", req.UserID, "session id", req.SessionID, "client id", req.ClientID); err != nil {
		return nil, err
	}
	return e.turn(ctx, req, nil)
}

// Resume is Team.Resume for a session id rather than a chat id.
func (e *engine) Resume(ctx context.Context, r Result) (*Resumption, error) {
	if r.Token != "" {
		doc, snap, err := e.tokenCall(ctx, &r)
		if err != nil {
			return nil, err
		}
		return e.resume(ctx, r, doc, snap)
	}
	// The tests name the session in r.ChatID.
	if err := validIDs("user id", r.UserID, "session id", r.ChatID, "client id", r.ClientID, "call id", r.CallID); err != nil {
		return nil, err
	}
	doc, snap, err := e.readCall(ctx, e.callRef(r.UserID, r.ChatID, r.CallID))
	if err != nil {
		return nil, err
	}
	// As Team.Resume: the short path when the session can be read, so
	// that the crash tests kill at its writes too.
	if sess, err := e.getSession(ctx, nil, r.UserID, r.ChatID, 0, true); err == nil {
		if res, err := e.fastResume(ctx, r, doc, snap, sess); res != nil || err != nil {
			return res, err
		}
	}
	return e.resume(ctx, r, doc, snap)
}

func (e *engine) Pending(ctx context.Context, user, sid, client string) ([]*Call, error) {
	calls, _, err := e.pending(ctx, user, sid, client)
	return calls, err
}

func (e *engine) Sweep(ctx context.Context, now time.Time) (SweepReport, error) {
	return e.sweep(ctx, now)
}

func (e *engine) Token(c *Call) (string, error) { return e.token(c) }

// Chat reads a chat, for its active session and agent.
func (t *Team) Chat(ctx context.Context, user, chatID string) (*sessionstore.Chat, error) {
	return t.sessions.GetChat(ctx, t.app, user, chatID)
}
