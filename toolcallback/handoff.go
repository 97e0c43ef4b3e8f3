package toolcallback

import (
	"context"

	"google.golang.org/adk/v2/session"
)

// handoff is what a request read before starting its invocation and hands
// to it: the session handle the runner's Get returns instead of reading
// the session again, and the lease the first append takes (when the
// request did not take it before). It travels in the invocation's context.
type handoff struct {
	sess session.Session
	hold *hold
}

type handoffKey struct{}

func withHandoff(ctx context.Context, h *handoff) context.Context {
	return context.WithValue(ctx, handoffKey{}, h)
}

func handoffFrom(ctx context.Context) *handoff {
	h, _ := ctx.Value(handoffKey{}).(*handoff)
	return h
}

// Get returns the handle the request handed over, once, for the session it
// holds; any other Get reads the store. The handle is current: the request
// holds the session's lease, or takes it with its first append, which
// fails if the session changed since the handle was read.
func (l ledgerSessions) Get(ctx context.Context, req *session.GetRequest) (*session.GetResponse, error) {
	if h := handoffFrom(ctx); h != nil && h.sess != nil && req.NumRecentEvents == 0 && req.After.IsZero() &&
		h.sess.AppName() == req.AppName && h.sess.UserID() == req.UserID && h.sess.ID() == req.SessionID {
		sess := h.sess
		h.sess = nil
		return &session.GetResponse{Session: sess}, nil
	}
	return l.Service.Get(ctx, req)
}
