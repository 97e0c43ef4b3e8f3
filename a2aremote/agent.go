package a2aremote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"golang.org/x/oauth2"
)

// ErrRefused: the remote refused a request for good (bad parameters, an
// unknown task, an operation it does not support, no access); sending it
// again changes nothing. Other errors (the network, a 5xx) are worth
// another attempt.
var ErrRefused = errors.New("refused by the remote agent")

// Config declares one remote agent.
type Config struct {
	// CardURL is where the remote's agent card is read: a base URL (its
	// /.well-known/agent-card.json is read) or the card's own URL (ending
	// in .json).
	CardURL string
	// Header is sent with every request to the remote: its credentials
	// (an Authorization header, an API key).
	Header http.Header
	// TokenSource, when set, gives the Authorization header of every
	// request to the remote, renewed as its tokens expire: for a
	// credential that lives an hour, as a Google-signed ID token from
	// google.golang.org/api/idtoken.NewTokenSource does. It wins over an
	// Authorization in Header.
	TokenSource oauth2.TokenSource
	// AllowPrivate lets the remote be on a loopback, private or link-local
	// address (a local runner, a test, a peer on a private network).
	AllowPrivate bool
	// Timeout bounds one request to the remote; default 30 seconds.
	Timeout time.Duration
}

// Agent is one remote agent, its card resolved on first use and kept for
// the instance's life.
type Agent struct {
	cfg  Config
	base *url.URL
	http *http.Client
	// bare is http without the configured headers: for files on a host
	// other than the card's.
	bare *http.Client

	mu     sync.Mutex
	client *a2aclient.Client
	card   *a2a.AgentCard
}

// New returns the remote agent cfg declares; nothing is read until it is
// used.
func New(cfg Config) (*Agent, error) {
	u, err := url.Parse(cfg.CardURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("remote agent card URL %q: want an http(s) URL", cfg.CardURL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	hc := httpClient(cfg.AllowPrivate, cfg.Timeout)
	bare := *hc
	if cfg.TokenSource != nil {
		// x/oauth2's transport sets the header from the source's current
		// token; ReuseTokenSource asks for a new one only when it expires.
		// Inside headers, so that its Authorization is the one sent.
		hc.Transport = &oauth2.Transport{Source: oauth2.ReuseTokenSource(nil, cfg.TokenSource), Base: hc.Transport}
	}
	if len(cfg.Header) > 0 {
		hc.Transport = headers{next: hc.Transport, h: cfg.Header}
	}
	hc.Transport = refusals{next: hc.Transport}
	return &Agent{cfg: cfg, base: u, http: hc, bare: &bare}, nil
}

// headers adds a remote's configured headers to each request.
type headers struct {
	next http.RoundTripper
	h    http.Header
}

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}

// refusals turns the remote's HTTP 401 and 403 into a2a's errors for
// them, which classify counts as refusals: a2a-go reports any status but
// 200 as a plain "unexpected HTTP status", which would be retried (a bad
// credential until the call's timeout).
type refusals struct{ next http.RoundTripper }

func (t refusals) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	var refused error
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		refused = a2a.ErrUnauthenticated
	case http.StatusForbidden:
		refused = a2a.ErrUnauthorized
	default:
		return resp, nil
	}
	resp.Body.Close()
	return nil, fmt.Errorf("%w: HTTP %s", refused, resp.Status)
}

// connect resolves the card and builds the client, once.
func (a *Agent) connect(ctx context.Context) (*a2aclient.Client, *a2a.AgentCard, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client != nil {
		return a.client, a.card, nil
	}
	resolver := agentcard.NewResolver(a.http)
	resolver.CardParser = parseCard
	base, opts := a.cfg.CardURL, []agentcard.ResolveOption(nil)
	if strings.HasSuffix(a.base.Path, ".json") {
		root := *a.base
		root.Path, root.RawQuery = "/", ""
		base, opts = root.String(), []agentcard.ResolveOption{agentcard.WithPath(a.base.Path)}
	}
	card, err := resolver.Resolve(ctx, base, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("read the card of %s: %w", a.cfg.CardURL, err)
	}
	for _, iface := range card.SupportedInterfaces {
		u, err := url.Parse(iface.URL)
		if err != nil || u.Host != a.base.Host || (u.Scheme != "https" && u.Scheme != "http") {
			return nil, nil, fmt.Errorf("%w: the card of %s names an endpoint elsewhere (%q)", ErrBlockedAddress, a.cfg.CardURL, iface.URL)
		}
	}
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithDefaultsDisabled(),
		a2aclient.WithJSONRPCTransport(a.http),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: a.http}))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", a.cfg.CardURL, err)
	}
	a.client, a.card = client, card
	return client, card, nil
}

// parseCard reads an agent card as A2A 1.0 writes it, or else as 0.3
// does: a2a-go's 1.0 parser refuses a card in both shapes at once, which
// is what a2a-go's compatible servers, Baton's among them, serve.
func parseCard(b []byte) (*a2a.AgentCard, error) {
	card, err := agentcard.DefaultCardParser(b)
	if err == nil {
		return card, nil
	}
	if old, oerr := a2av0.NewAgentCardParser()(b); oerr == nil && len(old.SupportedInterfaces) > 0 {
		return old, nil
	}
	return nil, err
}

// Pushes reports whether the remote says it sends push notifications
// (its card's capabilities); it reads the card on first use.
func (a *Agent) Pushes(ctx context.Context) (bool, error) {
	_, card, err := a.connect(ctx)
	if err != nil {
		return false, err
	}
	return card.Capabilities.PushNotifications, nil
}

// Message is one message to send on a remote task.
type Message struct {
	// ID is the message's id: derived from the call (and the question it
	// answers), so that a send repeated after a crash carries the same id
	// and a remote that deduplicates by message id takes it once.
	ID string
	// TaskID and ContextID continue a task; "" starts one.
	TaskID, ContextID string
	Text              string
	// Data, when set, goes as a data part beside the text.
	Data map[string]any
	// PushURL and PushToken ask the remote to notify PushURL of the task's
	// updates, echoing PushToken; none when PushURL is "".
	PushURL, PushToken string
}

// Send sends m and returns the task as the remote answered (it returns
// at once: the task goes on in the background, and its result comes by
// notification or by Get). A remote that answers with a message instead
// of a task has completed: that message is the result.
func (a *Agent) Send(ctx context.Context, m Message) (*Task, error) {
	client, card, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(m.Text))
	msg.ID, msg.TaskID, msg.ContextID = m.ID, a2a.TaskID(m.TaskID), m.ContextID
	if m.Data != nil {
		msg.Parts = append(msg.Parts, a2a.NewDataPart(m.Data))
	}
	cfg := &a2a.SendMessageConfig{ReturnImmediately: true}
	if m.PushURL != "" && card.Capabilities.PushNotifications {
		cfg.PushConfig = &a2a.PushConfig{URL: m.PushURL, Token: m.PushToken}
	}
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: cfg})
	if err != nil {
		return nil, classify("send a message", err)
	}
	switch r := res.(type) {
	case *a2a.Task:
		return taskOf(r), nil
	case *a2a.Message:
		return &Task{ID: string(r.TaskID), ContextID: r.ContextID, State: Completed, Parts: partsOf(r.Parts)}, nil
	}
	return nil, fmt.Errorf("send a message: unexpected answer %T", res)
}

// Get reads task id (tasks/get).
func (a *Agent) Get(ctx context.Context, id string) (*Task, error) {
	client, _, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}
	t, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(id)})
	if err != nil {
		return nil, classify("read task", err)
	}
	return taskOf(t), nil
}

// Cancel asks the remote to cancel task id (tasks/cancel). A task that
// is already over is no error.
func (a *Agent) Cancel(ctx context.Context, id string) error {
	client, _, err := a.connect(ctx)
	if err != nil {
		return err
	}
	_, err = client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(id)})
	if errors.Is(err, a2a.ErrTaskNotCancelable) || errors.Is(err, a2a.ErrTaskNotFound) {
		return nil
	}
	if err != nil {
		return classify("cancel task", err)
	}
	return nil
}

// classify marks the remote's refusals (ErrRefused); the rest stay worth
// another attempt.
func classify(what string, err error) error {
	for _, final := range []error{a2a.ErrInvalidParams, a2a.ErrInvalidRequest, a2a.ErrMethodNotFound, a2a.ErrTaskNotFound,
		a2a.ErrUnsupportedOperation, a2a.ErrUnsupportedContentType, a2a.ErrUnauthenticated, a2a.ErrUnauthorized,
		a2a.ErrVersionNotSupported, a2a.ErrPushNotificationNotSupported, ErrBlockedAddress} {
		if errors.Is(err, final) {
			return fmt.Errorf("%s: %w: %w", what, ErrRefused, err)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}
