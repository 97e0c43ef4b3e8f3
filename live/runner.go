package live

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"google.golang.org/genai"

	"github.com/baton-run/baton/geminilive"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/toolcallback"
)

// Model is the live model conversations talk to.
type Model struct {
	Client *genai.Client
	Name   string
	// Setup is the connection's base configuration: modalities, voice,
	// transcriptions, activity detection. Nil: DefaultSetup. The agent's
	// instruction and tools are added to it, and every tool is declared
	// NON_BLOCKING.
	Setup *genai.LiveConnectConfig
}

// DefaultSetup answers with audio, transcribes both sides and leaves
// activity detection to the model.
func DefaultSetup() *genai.LiveConnectConfig {
	return &genai.LiveConnectConfig{
		ResponseModalities:       []genai.Modality{genai.ModalityAudio},
		InputAudioTranscription:  &genai.AudioTranscriptionConfig{},
		OutputAudioTranscription: &genai.AudioTranscriptionConfig{},
	}
}

// Options are a Runner's optional settings.
type Options struct {
	// CountTokens counts each model turn's tokens in the session document,
	// as the team counts a turn's (toolcallback.Options.CountTokens).
	CountTokens bool
	// MaxDuration ends a conversation (EndTimeout) before the platform cuts
	// its socket: Cloud Run holds a request for at most its timeout. Zero:
	// 55 minutes.
	MaxDuration time.Duration
	// HandleEvery is the least time between two writes of the model's
	// resumption handle on their own; a handle goes out with the next
	// event stored before. Zero: 10 s.
	HandleEvery time.Duration
	Logger      *slog.Logger
}

// Runner opens live conversations on a team's chats.
type Runner struct {
	team  *toolcallback.Team
	model Model
	opts  Options
}

// New returns a Runner of conversations between team's chats and model.
func New(team *toolcallback.Team, model Model, opts *Options) (*Runner, error) {
	if model.Client == nil || model.Name == "" {
		return nil, errors.New("live: Model needs a Client and a Name")
	}
	r := &Runner{team: team, model: model}
	if opts != nil {
		r.opts = *opts
	}
	if r.model.Setup == nil {
		r.model.Setup = DefaultSetup()
	}
	if r.opts.MaxDuration <= 0 {
		r.opts.MaxDuration = 55 * time.Minute
	}
	if r.opts.HandleEvery <= 0 {
		r.opts.HandleEvery = 10 * time.Second
	}
	if r.opts.Logger == nil {
		r.opts.Logger = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

// ModelName is the live model's name.
func (r *Runner) ModelName() string { return r.model.Name }

// Request opens a conversation on a user's chat, for one of the user's
// devices, with the agent Agent ("": the chat's), held to Limits.
type Request struct {
	UserID, ChatID, DeviceID string
	Agent                    string
	Limits                   limits.Limits
}

// Open opens a live segment of the chat (toolcallback.Team.OpenLive:
// refused as a turn would be, or because a live segment holds the chat,
// IsLive), then the model session: resumed from the handle the chat's last
// segment stored while it is valid, else seeded with the chat's history.
// The conversation then runs until Close, a stop, a lost lease, a failure
// or MaxDuration; Wait says which.
func (r *Runner) Open(ctx context.Context, req Request, client Client) (*Conversation, error) {
	seg, _, err := r.team.OpenLive(ctx, toolcallback.TurnRequest{
		UserID: req.UserID, ChatID: req.ChatID, ClientID: req.DeviceID, Agent: req.Agent, Limits: req.Limits,
	})
	if err != nil {
		return nil, err
	}
	c := newConversation(r, req, seg, client)
	if err := c.start(ctx); err != nil {
		seg.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return c, nil
}

// connect captures the segment's agent and opens the model session.
func (c *Conversation) connect(ctx context.Context) error {
	cfg, err := c.seg.Runner()
	if err != nil {
		return err
	}
	c.agent, err = geminilive.Capture(c.seg.Context(ctx), cfg, c.req.UserID, c.seg.Session.ID())
	if err != nil {
		return err
	}
	stored := storedHandle(ctx, c.seg.Session)
	known, pending := c.splitOpen(stored)
	c.model, err = geminilive.Open(ctx, geminilive.Config{
		Client: c.r.model.Client, Model: c.r.model.Name, Setup: nonBlocking(c.agent.ConnectConfig(c.r.model.Setup)),
		Handle: stored.Handle, Known: known, Pending: pending, History: c.history, Logger: c.r.opts.Logger,
	})
	return err
}

// nonBlocking is setup with every function declared NON_BLOCKING: the
// model goes on talking while a tool runs, a browser answers or a person
// decides (a tool may turn out to need an approval only once it runs).
func nonBlocking(setup *genai.LiveConnectConfig) *genai.LiveConnectConfig {
	var tools []*genai.Tool
	for _, t := range setup.Tools {
		copied := *t
		copied.FunctionDeclarations = nil
		for _, d := range t.FunctionDeclarations {
			decl := *d
			decl.Behavior = genai.BehaviorNonBlocking
			copied.FunctionDeclarations = append(copied.FunctionDeclarations, &decl)
		}
		tools = append(tools, &copied)
	}
	setup.Tools = tools
	return setup
}

// history is the chat's conversation to seed a new model session with:
// as ADK would send the agent's model, without the calls still waiting
// (their answers go as call-and-response pairs) nor responses to them
// (an approval's "confirmation required").
func (c *Conversation) history(ctx context.Context) ([]*genai.Content, error) {
	a := c.agent
	if c.connected() {
		// The session has grown since the segment opened: capture again.
		cfg, err := c.seg.Runner()
		if err != nil {
			return nil, err
		}
		if a, err = geminilive.Capture(c.seg.Context(ctx), cfg, c.req.UserID, c.seg.Session.ID()); err != nil {
			return nil, err
		}
	}
	waiting := c.waitingCalls()
	var out []*genai.Content
	for _, content := range a.History(waiting...) {
		var parts []*genai.Part
		for _, p := range content.Parts {
			if p.FunctionResponse == nil || !slices.Contains(waiting, p.FunctionResponse.ID) {
				parts = append(parts, p)
			}
		}
		if len(parts) > 0 {
			out = append(out, &genai.Content{Role: content.Role, Parts: parts})
		}
	}
	return out, nil
}
