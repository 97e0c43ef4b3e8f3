package functions

// Live: GET /Chat/{chatId}/live upgrades to a WebSocket that holds a live
// conversation of the chat (package live; docs/live.md has the mode,
// docs/http-api.md the frames). The caller's identity comes from the
// socket's first text frame, checked as /Chat checks a token, before any
// model connection opens; the device id from ?device= or that frame; the
// agent from ?agent=. Errors become an error frame whose code is the one
// status gives the HTTP routes, then an end frame and the socket's close.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/live"
)

// errLiveOff: the deployment has no live model.
var errLiveOff = errclass.ErrLiveOff

// Bounds of a live socket: the wait for the first frame, for one write,
// and between pings (which keep proxies from closing a quiet socket, and
// tell a dead peer from a silent one).
const (
	liveAuthWait  = 10 * time.Second
	liveWriteWait = 10 * time.Second
	livePing      = 20 * time.Second
)

// liveFrame is a text frame the client sends (docs/http-api.md).
type liveFrame struct {
	Auth          string       `json:"auth,omitempty"`
	User          string       `json:"user,omitempty"`
	Device        string       `json:"device,omitempty"`
	ActivityStart *struct{}    `json:"activityStart,omitempty"`
	ActivityEnd   *struct{}    `json:"activityEnd,omitempty"`
	Content       *liveContent `json:"content,omitempty"`
	Answer        *live.Answer `json:"answer,omitempty"`
	Close         bool         `json:"close,omitempty"`
}

type liveContent struct {
	Parts []struct {
		Text string `json:"text"`
	} `json:"parts"`
}

// chatLive serves GET /Chat/{chatId}/live.
func (s *Server) chatLive(w http.ResponseWriter, r *http.Request, log *slog.Logger, chatID string) error {
	if s.live == nil {
		return errLiveOff
	}
	up := websocket.Upgrader{CheckOrigin: s.liveOrigin, ReadBufferSize: 16 << 10, WriteBufferSize: 16 << 10}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return nil // the upgrader answered
	}
	sock := newSocket(ws, log)
	defer sock.close()
	ws.SetReadLimit(s.cfg.MaxBodyBytes)
	req, err := s.liveRequest(r, ws, chatID)
	var conv *live.Conversation
	if err == nil {
		conv, err = s.openLive(r.Context(), req, sock)
	}
	if err != nil {
		sock.fail(r.Context(), err, live.EndClosed)
		return nil
	}
	log.InfoContext(r.Context(), "live conversation", "chat", chatID, "device", req.DeviceID)
	if !s.conversations.add(req, conv) {
		go conv.Close() // the instance is stopping (CloseLive)
	}
	sock.open()
	defer s.conversations.remove(req, conv)
	go sock.ping(conv.Done())
	go s.readLive(context.WithoutCancel(r.Context()), ws, sock, conv)
	reason, err := conv.Wait()
	sock.fail(r.Context(), err, reason)
	return nil
}

// liveOrigin accepts a socket from a page of the same host, of an allowed
// origin, or from a client that is no browser (no Origin).
func (s *Server) liveOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || slices.Contains(s.cfg.AllowedOrigins, "*") || slices.Contains(s.cfg.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// liveRequest reads the socket's first frame and checks the identity it
// carries as a request's headers would be checked: a Firebase ID token
// ({"auth"}), or in development identity mode a user's name ({"user"}).
func (s *Server) liveRequest(r *http.Request, ws *websocket.Conn, chatID string) (live.Request, error) {
	_ = ws.SetReadDeadline(time.Now().Add(liveAuthWait))
	defer ws.SetReadDeadline(time.Time{})
	kind, data, err := ws.ReadMessage()
	if err != nil {
		return live.Request{}, fmt.Errorf("%w: no first frame: %v", errUnauthenticated, err)
	}
	var f liveFrame
	if kind != websocket.TextMessage || decodeFrame(data, &f) != nil || (f.Auth == "" && f.User == "") {
		return live.Request{}, fmt.Errorf("%w: the first frame must be {\"auth\": \"<ID token>\"}", errUnauthenticated)
	}
	id := r.Clone(r.Context())
	id.Header = http.Header{}
	if f.Auth != "" {
		id.Header.Set("Authorization", "Bearer "+f.Auth)
	}
	if f.User != "" {
		id.Header.Set("X-Baton-User", f.User)
	}
	c, err := s.ident.caller(r.Context(), id)
	if err != nil {
		return live.Request{}, err
	}
	q := r.URL.Query()
	device := q.Get("device")
	if f.Device != "" && device != "" && f.Device != device {
		return live.Request{}, fmt.Errorf("%w: the device of the first frame and of ?device= differ", errBadRequest)
	}
	if device == "" {
		device = f.Device
	}
	if device == "" {
		return live.Request{}, fmt.Errorf("%w: send the device id as ?device= or in the first frame", errBadRequest)
	}
	return live.Request{UserID: c.user, ChatID: chatID, DeviceID: device, Agent: q.Get("agent"), Limits: s.limitsOf(r.Context(), c)}, nil
}

// openLive opens the conversation. A conversation of the chat that the
// same device holds on this instance (its tab lost the socket and comes
// back) ends first, as replaced; one it holds on another instance, or
// that died with its instance, is taken over by the new segment
// (toolcallback.Holder.YieldsTo).
func (s *Server) openLive(ctx context.Context, req live.Request, sock *socket) (*live.Conversation, error) {
	s.conversations.replace(req)
	return s.live.Open(ctx, req, sock)
}

// readLive passes the client's frames to the conversation until the
// socket closes or the conversation ends.
func (s *Server) readLive(ctx context.Context, ws *websocket.Conn, sock *socket, conv *live.Conversation) {
	defer conv.Close()
	for {
		_ = ws.SetReadDeadline(time.Now().Add(3 * livePing))
		kind, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		if kind == websocket.BinaryMessage {
			_ = conv.Audio(data)
			continue
		}
		var f liveFrame
		err = decodeFrame(data, &f)
		switch {
		case err != nil:
		case f.Close:
			return
		case f.ActivityStart != nil:
			err = conv.SpeechStarts()
		case f.ActivityEnd != nil:
			err = conv.SpeechEnds()
		case f.Content != nil:
			err = conv.Text(liveText(f.Content))
		case f.Answer != nil:
			err = conv.Answer(ctx, *f.Answer)
		default:
			err = fmt.Errorf("%w: a frame with nothing to do", errBadRequest)
		}
		if err != nil {
			sock.sendError(err)
		}
	}
}

// decodeFrame decodes a client's text frame: no unknown field.
func decodeFrame(data []byte, f *liveFrame) error {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return nil
}

func liveText(c *liveContent) string {
	var parts []string
	for _, p := range c.Parts {
		parts = append(parts, p.Text)
	}
	return strings.Join(parts, "")
}

// conversations are this instance's live conversations, by chat, so that
// a device coming back replaces its own at once.
type conversations struct {
	mu      sync.Mutex
	m       map[string]liveEntry
	closing bool // CloseLive was called: no more
}

type liveEntry struct {
	device string
	conv   *live.Conversation
}

func chatKey(req live.Request) string { return req.UserID + "/" + req.ChatID }

// add keeps conv, unless the instance is stopping (false).
func (c *conversations) add(req live.Request, conv *live.Conversation) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	if c.m == nil {
		c.m = map[string]liveEntry{}
	}
	c.m[chatKey(req)] = liveEntry{device: req.DeviceID, conv: conv}
	return true
}

func (c *conversations) remove(req live.Request, conv *live.Conversation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[chatKey(req)]; ok && e.conv == conv {
		delete(c.m, chatKey(req))
	}
}

// CloseLive ends this instance's live conversations, as their clients
// leaving would (each stores what was said, releases its chat and tells
// its client, which reconnects to any instance), and those that open from
// now on: for an instance about to stop.
func (s *Server) CloseLive() {
	s.conversations.mu.Lock()
	s.conversations.closing = true
	var all []*live.Conversation
	for _, e := range s.conversations.m {
		all = append(all, e.conv)
	}
	s.conversations.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range all {
		wg.Go(c.Close)
	}
	wg.Wait()
}

// replace ends the conversation of req's chat on this instance, when the
// same device holds it.
func (c *conversations) replace(req live.Request) {
	c.mu.Lock()
	e, ok := c.m[chatKey(req)]
	c.mu.Unlock()
	if ok && e.device == req.DeviceID {
		e.conv.Replace()
	}
}
