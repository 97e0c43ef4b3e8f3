package usechat

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"google.golang.org/genai"

	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/toolcallback"
)

// Name is the name of the function this package serves: its URLs are
// {function URL}/..., or /Chat/... where every function shares one port.
const Name = "Chat"

// Errors of the requests themselves are errclass's; the team's come back
// as they are.
var (
	errBadRequest = errclass.ErrBadRequest
	errMediaType  = errclass.ErrMediaType
)

// Caller is who sent a request, as the deployment verified it: the user,
// and the limits of the turns they start.
type Caller struct {
	User   string
	Limits limits.Limits
}

// Identity verifies who sent a request.
type Identity func(r *http.Request) (Caller, error)

// exchange is one request of a page and what answers it: the response,
// the request, its log, the verified sender, and the device it comes from
// ("" where the request names none).
type exchange struct {
	w      http.ResponseWriter
	r      *http.Request
	log    *slog.Logger
	caller Caller
	device string
}

// Config bounds what Chat takes and how long it follows a turn.
type Config struct {
	// MaxBodyBytes bounds what is new in a body: a user message without
	// its files, one answer.
	MaxBodyBytes int64
	// MaxChatBodyBytes bounds a whole body (default 32 MiB); MaxFileBytes
	// one file of a message (default 10 MiB).
	MaxChatBodyBytes, MaxFileBytes int64
	// InvocationTimeout bounds one invocation: a replay follows a turn no
	// longer.
	InvocationTimeout time.Duration
	// KeepAlive is how often a quiet stream gets a keep-alive comment (0:
	// never).
	KeepAlive time.Duration
}

// Server serves a team to the AI SDK's useChat; it keeps nothing about a
// request between requests.
type Server struct {
	team  *toolcallback.Team
	cfg   Config
	ident Identity
	files *FileURLs // nil when files are off
}

// New returns a Server of team, its callers verified by ident; files signs
// the URLs of the chats' files (nil: files are off).
func New(team *toolcallback.Team, cfg Config, ident Identity, files *FileURLs) *Server {
	return &Server{team: team, cfg: cfg, ident: ident, files: files}
}

// Reply is how an invocation goes to a client of Baton's own routes: turn
// is the turn a resume continues ("" for a new turn), data the data chunks
// the stream starts with.
type Reply struct {
	Turn string
	Data map[string]any
}

// Respond sends an invocation to a client of Baton's own routes (Turn,
// ToolResult): a UI message stream, or one JSON document of the same
// chunks when the client accepts only JSON. It returns when the invocation
// has ended.
func (s *Server) Respond(w http.ResponseWriter, r *http.Request, log *slog.Logger, inv *toolcallback.Invocation, out Reply) {
	s.respond(w, r, log, inv, reply{turn: out.Turn, data: out.Data})
}

// Post serves POST /Chat: a new message, answers to paused calls, a
// regenerate or an edit.
func (s *Server) Post(w http.ResponseWriter, r *http.Request, log *slog.Logger) error {
	return s.chatPost(w, r, log)
}

// Resume serves GET /Chat/{chatId}/stream: the running turn, replayed.
func (s *Server) Resume(w http.ResponseWriter, r *http.Request, log *slog.Logger, chatID string) error {
	return s.chatResume(w, r, log, chatID)
}

// Messages serves GET /Chat/{chatId}: a page of the conversation as UI
// messages.
func (s *Server) Messages(w http.ResponseWriter, r *http.Request, chatID string) error {
	return s.chatMessages(w, r, chatID)
}

// File serves GET /Chat/{chatId}/files/{name}: a file, by its signed URL;
// rest is what follows the chat id in the path.
func (s *Server) File(w http.ResponseWriter, r *http.Request, chatID, rest string) error {
	return s.chatFile(w, r, chatID, rest)
}

// CheckFiles refuses a message with files when the deployment stores none.
func (s *Server) CheckFiles(c *genai.Content) error { return s.checkFiles(c) }

// userID is the verified user of r.
func (s *Server) userID(r *http.Request) (string, error) {
	c, err := s.ident(r)
	return c.User, err
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
