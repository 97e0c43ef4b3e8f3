package usechat

// Sending an invocation to the client: the UI message stream (or, for
// Turn and ToolResult clients that accept only JSON, one document of the
// same chunks), shared by Turn, ToolResult and Chat.

import (
	"context"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
	"github.com/baton-run/baton/uistream"
)

// reply says how an invocation goes to its client.
type reply struct {
	// turn is the invocation id of the turn a resume continues (see
	// transcript.StartsTurn), "" for a new turn. It is the id of the
	// turn's assistant message: every stream of one turn, the first and
	// each resume, starts with it, so the client continues one message,
	// and any instance can tell it from the session.
	turn string
	// data are the data chunks the stream starts with.
	data map[string]any
	// page: the client is a useChat page (Chat), which always reads the
	// stream, and device the device that may answer the turn's browser
	// calls (see uistream.Encoder.SetDevice).
	page   bool
	device string
	// files gives the files of the stream's events their URLs (a page's:
	// see Server.fileLinks); nil: the stream carries no file chunks.
	files fileLinks
}

// respond sends an invocation to the client: a UI message stream, or one
// JSON document of the same chunks when a client other than a page
// accepts only JSON. It returns when the invocation has ended, even if
// the client went away, so the instance keeps the request (and its CPU)
// until the agent is done.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, log *slog.Logger, inv *toolcallback.Invocation, out reply) {
	if !out.page && wantsJSON(r) {
		var c uistream.Collector
		messageID := stream(r.Context(), uistream.NewEncoder(&c, ""), log, inv, out.turn, out.data)
		writeJSON(w, http.StatusOK, turnJSON{MessageID: messageID, Chunks: c.Chunks})
		return
	}
	_, enc, stop := s.openStream(w, "", out)
	defer stop()
	stream(r.Context(), enc, log, inv, out.turn, out.data)
}

// openStream starts a UI message stream on w: its encoder, whose start
// chunk carries messageID (when not empty), for a page when out.page, and
// a keep-alive comment every BATON_KEEPALIVE until stop is called.
func (s *Server) openStream(w http.ResponseWriter, messageID string, out reply) (sse *uistream.SSE, enc *uistream.Encoder, stop func()) {
	sse = uistream.NewSSE(w)
	enc = uistream.NewEncoder(sse, messageID)
	if out.page {
		enc.SetDevice(out.device)
	}
	if out.files != nil {
		enc.SetFiles(out.files)
	}
	return sse, enc, keepAlive(sse, s.cfg.KeepAlive)
}

// keepAlive writes a keep-alive comment to sse every d (none when d is 0)
// until the returned function is called.
func keepAlive(sse *uistream.SSE, d time.Duration) (stop func()) {
	if d <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = sse.KeepAlive()
			}
		}
	}()
	return func() { close(done) }
}

// stoppedMetadata is the metadata of the assistant message of a stopped
// turn, in its streams and in GET /Chat/{chatId}.
var stoppedMetadata = map[string]any{"stopped": true}

type turnJSON struct {
	MessageID string           `json:"messageId"`
	Chunks    []uistream.Chunk `json:"chunks"` // the same chunks the stream would carry
}

// stream encodes the invocation's events as they arrive and returns the
// message id its start chunk carried: turn, or for a new turn the
// invocation id its first event brings (the start chunk waits for it).
func stream(ctx context.Context, enc *uistream.Encoder, log *slog.Logger, inv *toolcallback.Invocation, turn string, data map[string]any) string {
	started := false
	start := func(ev *session.Event) {
		if started {
			return
		}
		started = true
		if turn == "" && ev != nil {
			turn = ev.InvocationID
		}
		if turn == "" {
			turn = "msg-" + platform.NewUUID(ctx) // the invocation failed before its first event
		}
		_ = enc.SetMessageID(turn)
		_ = enc.Start()
		for name, d := range data {
			_ = enc.Data(name, d)
		}
	}
	for ev, err := range inv.Events() {
		start(ev)
		if err != nil {
			log.Error("invocation failed", "error", err.Error())
			_ = enc.Error("the agent failed; please try again")
			continue
		}
		// Send errors mean the client left; the invocation goes on.
		_ = enc.Event(withSavedFiles(ev), func(c *genai.FunctionCall) uistream.CallKind {
			switch {
			case transcript.IsBackground(ev, c.ID):
				return uistream.CallBackground
			case slices.Contains(ev.LongRunningToolIDs, c.ID):
				return uistream.CallBrowser
			}
			return uistream.CallServer
		})
		_ = enc.Surfaces(ev)
		if transcript.IsStopNote(ev) {
			_ = enc.Metadata(stoppedMetadata)
		}
		if ev.ErrorCode != "" && !ev.Partial {
			log.Warn("model error", "code", ev.ErrorCode, "message", ev.ErrorMessage)
			_ = enc.Error("the model could not answer: " + ev.ErrorCode)
		}
	}
	start(nil)
	_ = enc.Finish()
	return turn
}

func wantsJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "text/event-stream":
			return false
		case "application/json":
			return true
		}
	}
	return false
}
