package functions

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/live"
)

// socket is a live conversation's client: the WebSocket, written by one
// writer at a time (gorilla/websocket allows no more). The conversation's
// frames wait until the instance has registered it (opened): a client that
// saw "ready" finds it replaceable.
type socket struct {
	ws     *websocket.Conn
	log    *slog.Logger
	mu     sync.Mutex
	opened chan struct{}
}

var _ live.Client = (*socket)(nil)

func newSocket(ws *websocket.Conn, log *slog.Logger) *socket {
	s := &socket{ws: ws, log: log, opened: make(chan struct{})}
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(3 * livePing)) })
	return s
}

// Audio sends the model's voice as a binary frame.
func (s *socket) Audio(pcm []byte) error {
	<-s.opened
	return s.write(websocket.BinaryMessage, pcm)
}

// Send sends m as a JSON text frame.
func (s *socket) Send(m live.Message) error {
	<-s.opened
	return s.send(m)
}

// open lets the conversation's frames through.
func (s *socket) open() { close(s.opened) }

func (s *socket) send(m live.Message) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return s.write(websocket.TextMessage, data)
}

func (s *socket) write(kind int, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.ws.SetWriteDeadline(time.Now().Add(liveWriteWait))
	return s.ws.WriteMessage(kind, data)
}

// sendError sends err as an error frame: its class (errclass.Of), whose
// code and message are those the HTTP routes answer it with; a server's
// fault's detail goes to the log only.
func (s *socket) sendError(err error) {
	c := errclass.Of(err)
	if c.Fault() {
		s.log.Error("live conversation failed", "error", err.Error())
	}
	_ = s.send(live.Error{Type: "error", Code: string(c.Code), Message: c.Message})
}

// fail ends the socket's conversation: an error frame when err is set,
// then the end frame with reason, then the close.
func (s *socket) fail(_ context.Context, err error, reason string) {
	if err != nil {
		s.sendError(err)
	}
	_ = s.send(live.End{Type: "end", Reason: reason})
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, reason), time.Now().Add(liveWriteWait))
}

// ping pings the client every livePing until done.
func (s *socket) ping(done <-chan struct{}) {
	tick := time.NewTicker(livePing)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			s.mu.Lock()
			err := s.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(liveWriteWait))
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

func (s *socket) close() { _ = s.ws.Close() }
