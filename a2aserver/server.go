package a2aserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/server/adka2a/v2"

	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// Authenticator returns the verified caller of a request, or an error,
// answered as errclass classifies it: one wrapping ErrUnauthenticated is
// 401, errclass.ErrForbidden 403, errclass.ErrUnavailable 503 (whatever
// vouches for tokens could not be reached).
type Authenticator func(r *http.Request) (Caller, error)

// Caller is who sent a request: the user id, and the limits of the turns
// the caller's messages start.
type Caller struct {
	User   string
	Limits limits.Limits
}

// limitsAttribute holds a Caller's Limits in a2a-go's user attributes, as
// JSON text: a2a-go may carry the call context to the execution as JSON.
const limitsAttribute = "baton.limits"

// callerLimits reads the limits limitsAttribute holds; none when absent.
func callerLimits(u *a2asrv.User) limits.Limits {
	var l limits.Limits
	if raw, ok := u.Attributes[limitsAttribute].(string); ok {
		_ = json.Unmarshal([]byte(raw), &l) // written by the interceptor from a Limits
	}
	return l
}

// ErrUnauthenticated is what an Authenticator wraps when a request carries
// no acceptable credentials: errclass's.
var ErrUnauthenticated = errclass.ErrUnauthenticated

// Options tunes a Server. Nil or zero fields take the defaults.
type Options struct {
	// Name and Description of the agent card. Default: the app name, and
	// the agents' descriptions.
	Name, Description string
	// MaxBodyBytes limits a request body. Default 256 KiB.
	MaxBodyBytes int64
	// Retention is how long a task's documents are kept after its last
	// change (their TTL field). Default 7 days.
	Retention time.Duration
	// ExecutionTimeout bounds one execution, detached from its request.
	// Default 3m; a task still working after twice that is taken to have
	// lost its execution.
	ExecutionTimeout time.Duration
	// PushAllow lists the URL prefixes push notifications may go to. Empty
	// turns push notifications off.
	PushAllow []string
	// PushClient posts push notifications. Default: a client with a 10 s
	// timeout.
	PushClient *http.Client
	// PushAttempts bounds the tries of one notification (default 3), the
	// first retry after PushBackoff (default 1s), doubling.
	PushAttempts int
	PushBackoff  time.Duration
	// SecuritySchemes the agent card lists, and which of them a caller may
	// use (any one). Default: an HTTP bearer scheme.
	SecuritySchemes a2a.NamedSecuritySchemes
	Logger          *slog.Logger
}

func (o *Options) withDefaults(app string) Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.Name == "" {
		out.Name = app
	}
	if out.MaxBodyBytes <= 0 {
		out.MaxBodyBytes = 256 << 10
	}
	if out.Retention <= 0 {
		out.Retention = 7 * 24 * time.Hour
	}
	if out.ExecutionTimeout <= 0 {
		out.ExecutionTimeout = 3 * time.Minute
	}
	if out.PushClient == nil {
		out.PushClient = &http.Client{Timeout: 10 * time.Second}
	}
	if out.PushAttempts <= 0 {
		out.PushAttempts = 3
	}
	if out.PushBackoff <= 0 {
		out.PushBackoff = time.Second
	}
	if out.SecuritySchemes == nil {
		out.SecuritySchemes = a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT"}}
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out
}

// Server serves a team over A2A's JSON-RPC binding, versions 1.0 and 0.3
// on one URL, and its agent card at /.well-known/agent-card.json below it.
type Server struct {
	auth    Authenticator
	card    *a2a.AgentCard
	v1, v0  http.Handler
	opts    Options
	store   *TaskStore
	maxBody int64
}

// New returns a Server for team (its members' agents give the card's
// skills), storing tasks through client beside sessions' chats.
func New(client *firestore.Client, sessions *sessionstore.Service, team *toolcallback.Team, auth Authenticator, opts *Options) *Server {
	app := team.App()
	o := opts.withDefaults(app)
	stale := 2 * o.ExecutionTimeout
	store := newTaskStore(client, sessions, app, o.Retention, stale)
	events := newEventQueues(store)
	queue := &localQueue{events: events, timeout: o.ExecutionTimeout}
	exec := &executor{team: team, store: store, log: o.Logger, stale: stale}
	store.checkMessage = exec.checkAnswers
	handlerOpts := []a2asrv.RequestHandlerOption{
		a2asrv.WithLogger(o.Logger),
		a2asrv.WithClusterMode(a2asrv.ClusterConfig{TaskStore: store, QueueManager: events, WorkQueue: queue}),
		a2asrv.WithCallInterceptors(&interceptor{log: o.Logger}),
	}
	if len(o.PushAllow) > 0 {
		handlerOpts = append(handlerOpts, a2asrv.WithPushNotifications(&pushStore{tasks: store, allow: o.PushAllow},
			&pushSender{tasks: store, allow: o.PushAllow, client: o.PushClient, attempts: o.PushAttempts, backoff: o.PushBackoff, log: o.Logger}))
	}
	handler := dedupeHandler{RequestHandler: cancelHandler{RequestHandler: a2asrv.NewHandler(exec, handlerOpts...), store: store}, store: store}
	s := &Server{auth: auth, opts: o, store: store, maxBody: o.MaxBodyBytes,
		v1: a2asrv.NewJSONRPCHandler(handler), v0: a2av0.NewJSONRPCHandler(handler)}
	var agents []agent.Agent
	for _, m := range team.Members() {
		agents = append(agents, m.Agent)
	}
	s.card = s.buildCard(agents)
	return s
}

func (s *Server) buildCard(agents []agent.Agent) *a2a.AgentCard {
	card := &a2a.AgentCard{
		Name: s.opts.Name, Description: s.opts.Description, Version: "1",
		Capabilities: a2a.AgentCapabilities{Streaming: true, PushNotifications: len(s.opts.PushAllow) > 0,
			Extensions: []a2a.AgentExtension{a2uiExtension}},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		SecuritySchemes:    s.opts.SecuritySchemes,
		Skills:             []a2a.AgentSkill{},
	}
	var descriptions []string
	for _, a := range agents {
		card.Skills = append(card.Skills, adka2a.BuildAgentSkills(a)...)
		if a.Description() != "" {
			descriptions = append(descriptions, a.Name()+": "+a.Description())
		}
	}
	if card.Description == "" {
		card.Description = strings.Join(descriptions, "\n")
	}
	for name := range s.opts.SecuritySchemes {
		card.SecurityRequirements = append(card.SecurityRequirements, a2a.SecurityRequirements{name: {}})
	}
	return card
}

// ServeHTTP serves the agent card (GET) and JSON-RPC (POST).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, a2asrv.WellKnownAgentCardPath) {
		s.serveCard(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeRPCError(w, fmt.Errorf("%w: use POST", errclass.ErrMethod))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.maxBody+1))
	if err != nil {
		writeRPC(w, http.StatusBadRequest, map[string]any{"code": rpcCodes[a2a.ErrParseError], "message": "parse error: unreadable body"})
		return
	}
	if int64(len(body)) > s.maxBody {
		writeRPCError(w, &errclass.LimitError{What: "the request body", Limit: s.maxBody, Env: "BATON_MAX_BODY_BYTES"})
		return
	}
	c, err := s.auth(r)
	if err != nil {
		if errclass.Of(err).Fault() {
			s.opts.Logger.WarnContext(r.Context(), "a2a authentication unavailable", "error", err)
		}
		writeRPCError(w, err)
		return
	}
	var peek struct {
		Method string `json:"method"`
	}
	if err := json.Unmarshal(body, &peek); err != nil {
		writeRPC(w, http.StatusOK, map[string]any{"code": rpcCodes[a2a.ErrParseError], "message": "parse error: malformed JSON"})
		return
	}
	ctx := context.WithValue(context.WithValue(r.Context(), userKey{}, c), headerKey{}, w.Header())
	r = r.WithContext(context.WithValue(ctx, requestKey{}, &requestID{}))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if strings.Contains(peek.Method, "/") {
		// 0.3 names its methods "message/send", 1.0 "SendMessage". a2a-go's
		// 0.3 handler writes its JSON-RPC errors without a content type; a
		// stream sets its own over this one.
		w.Header().Set("Content-Type", "application/json")
		s.v0.ServeHTTP(w, r)
		return
	}
	s.v1.ServeHTTP(w, r)
}

// serveCard answers the agent card, its interfaces at the URL it was asked
// from, in the JSON both protocol versions read.
func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	scheme := "https"
	if r.TLS == nil && r.Header.Get("X-Forwarded-Proto") != "https" {
		scheme = "http"
	}
	base := scheme + "://" + r.Host + strings.TrimSuffix(r.URL.Path, a2asrv.WellKnownAgentCardPath)
	card := *s.card
	card.SupportedInterfaces = []*a2a.AgentInterface{
		{URL: base, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
		{URL: base, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
	}
	a2asrv.NewAgentCardHandler(a2av0.NewStaticAgentCardProducer(&card)).ServeHTTP(w, r)
}

type userKey struct{}

// headerKey holds the response's header in a request's context, for the
// interceptor to name the extensions the request activated.
type headerKey struct{}

// interceptor puts the verified user into a2a-go's call context, checks
// that ids can name Firestore documents and that a message is one Baton
// can run, before anything is stored, and keeps internal error details out
// of responses.
type interceptor struct{ log *slog.Logger }

func (i *interceptor) Before(ctx context.Context, cc *a2asrv.CallContext, req *a2asrv.Request) (context.Context, any, error) {
	ctx, err := i.before(ctx, cc, req)
	if err != nil {
		return ctx, nil, rpcError(err)
	}
	return ctx, nil, nil
}

// before is Before's checks; its errors are classified (errclass).
func (i *interceptor) before(ctx context.Context, cc *a2asrv.CallContext, req *a2asrv.Request) (context.Context, error) {
	c, _ := ctx.Value(userKey{}).(Caller)
	if c.User == "" {
		return ctx, ErrUnauthenticated
	}
	limits, err := json.Marshal(c.Limits)
	if err != nil {
		return ctx, err
	}
	cc.User = a2asrv.NewAuthenticatedUser(c.User, map[string]any{limitsAttribute: string(limits)})
	if p, ok := req.Payload.(*a2a.SendMessageRequest); ok {
		if err := checkMessage(ctx, cc, p.Message); err != nil {
			return ctx, err
		}
	}
	for _, id := range payloadIDs(req.Payload) {
		if id == "" {
			continue
		}
		if err := sessionstore.ValidateID("id", id); err != nil {
			return ctx, err
		}
	}
	return ctx, nil
}

// checkMessage checks that a message is one Baton can run, and activates
// the A2UI extension when the message asks for it: the response names it
// in its A2A-Extensions header (and 0.3's), as the specification asks of a
// server (a2a-go v2.4.0's JSON-RPC handler does not).
func checkMessage(ctx context.Context, cc *a2asrv.CallContext, msg *a2a.Message) error {
	if msg == nil {
		return fmt.Errorf("%w: message is required", errclass.ErrBadRequest)
	}
	m, err := splitMessage(msg)
	if err != nil {
		return err
	}
	if requestsA2UI(cc.ServiceParams()) || msg.Metadata[capabilitiesKey] != nil {
		cc.Extensions().Activate(&a2uiExtension)
		if h, ok := ctx.Value(headerKey{}).(http.Header); ok {
			for _, key := range extensionHeaders {
				h.Set(key, A2UIExtensionURI)
			}
		}
	}
	if len(m.answers) > 0 && msg.TaskID == "" {
		return fmt.Errorf("%w: function responses answer the calls of an input-required task: send them with its taskId", errclass.ErrBadRequest)
	}
	return nil
}

// payloadIDs are the ids a request names, which become Firestore paths.
func payloadIDs(payload any) []string {
	switch p := payload.(type) {
	case *a2a.SendMessageRequest:
		return []string{string(p.Message.TaskID), p.Message.ContextID}
	case *a2a.GetTaskRequest:
		return []string{string(p.ID)}
	case *a2a.CancelTaskRequest:
		return []string{string(p.ID)}
	case *a2a.SubscribeToTaskRequest:
		return []string{string(p.ID)}
	case *a2a.GetTaskPushConfigRequest:
		return []string{string(p.TaskID), p.ID}
	case *a2a.ListTaskPushConfigRequest:
		return []string{string(p.TaskID)}
	case *a2a.DeleteTaskPushConfigRequest:
		return []string{string(p.TaskID), p.ID}
	case *a2a.PushConfig:
		return []string{string(p.TaskID), p.ID}
	}
	return nil
}

// publicErrors are the errors whose text a caller may read: a2a-go's,
// and Baton's once rpcError has made them A2A's.
var publicErrors = []error{
	a2a.ErrParseError, a2a.ErrInvalidRequest, a2a.ErrMethodNotFound, a2a.ErrInvalidParams, a2a.ErrTaskNotFound,
	a2a.ErrTaskNotCancelable, a2a.ErrPushNotificationNotSupported, a2a.ErrUnsupportedOperation,
	a2a.ErrUnsupportedContentType, a2a.ErrUnauthenticated, a2a.ErrUnauthorized, a2a.ErrServerError,
	a2a.ErrVersionNotSupported, a2a.ErrExtendedCardNotConfigured,
}

func (i *interceptor) After(ctx context.Context, cc *a2asrv.CallContext, resp *a2asrv.Response) error {
	if resp.Err == nil || errors.Is(resp.Err, errDuplicateMessage) {
		return nil // a message sent again: dedupeHandler answers with its task
	}
	if errors.Is(resp.Err, taskstore.ErrConcurrentModification) {
		// Another message on the task (a duplicate answer) was taken first.
		resp.Err = fmt.Errorf("%w: the task changed while this message was taken; get the task to see where it is", a2a.ErrServerError)
		return nil
	}
	for _, e := range publicErrors {
		if errors.Is(resp.Err, e) {
			return nil
		}
	}
	if errclass.Of(resp.Err).Fault() {
		i.log.ErrorContext(ctx, "a2a", "method", cc.Method(), "error", resp.Err)
	}
	resp.Err = rpcError(resp.Err)
	return nil
}
