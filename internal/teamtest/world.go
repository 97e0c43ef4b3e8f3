package teamtest

import (
	"context"
	"slices"
	"testing"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/localgcs"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

const (
	// App is the app the teams of the tests serve.
	App = "app"
	// TokenKey signs the call tokens of a team whose options name no key.
	TokenKey = "test-key-0123456789abcdef0123456789"
	// Bucket is the bucket of the chats' files (Options.Files).
	Bucket = "files"
)

// Options says what a world's instances are built with. Nil is one agent,
// "assistant", on the world's model with every demo tool, and a team's
// default options.
type Options struct {
	// Team are the options of every instance's team. The world keeps the
	// pointer (a change made before an instance is built applies to it),
	// and sets TokenKey in it when it has none.
	Team *toolcallback.Options
	// Agents are an instance's members; nil: the world's Assistant.
	Agents func(w *World, in *Instance) []toolcallback.Member
	// MCP are the MCP servers of each instance's registry (Instance.MCP);
	// the team ends a chat's MCP sessions after an agent switch or the
	// chat's deletion, as functions wires it.
	MCP []mcpregistry.Server
	// Files serves a bucket in process (World.GCS, World.Artifacts) and
	// gives each team a store of the chats' files on it.
	Files bool
}

// World is one app on a fresh project of the emulator: the strict
// scripted model its agents answer with, the demo tools, and the first of
// its instances. More instances, on the same connection or on a process
// of their own, share the project.
type World struct {
	T testing.TB
	*Instance
	Model *modeltest.Strict
	Tools *Tools
	// GCS and Artifacts are the chats' files (Options.Files; nil
	// without).
	GCS       *localgcs.Server
	Artifacts artifact.Service

	opts Options
}

// Instance is one serverless instance of the app: its Firestore client
// and the count of that client's calls, its session store, its MCP
// registry (with Options.MCP) and its team.
type Instance struct {
	Client   *firestore.Client
	Counter  *firestoretest.Counter
	Sessions *sessionstore.Service
	MCP      *mcpregistry.Registry
	Team     *toolcallback.Team
}

// New returns a world on a fresh project whose model follows script, with
// its first instance.
func New(t testing.TB, opts *Options, script ...modeltest.Reply) *World {
	t.Helper()
	client, counter := firestoretest.NewCountingClient(t)
	return On(t, client, counter, opts, &modeltest.Strict{T: t, Script: script})
}

// On returns a world whose first instance is on client (counted by
// counter, which may be nil), with its agents on model: for tests that
// choose the project and the model of each instance themselves.
func On(t testing.TB, client *firestore.Client, counter *firestoretest.Counter, opts *Options, model *modeltest.Strict) *World {
	t.Helper()
	w := &World{T: t, Model: model, Tools: NewTools(t)}
	if opts != nil {
		w.opts = *opts
	}
	if w.opts.Team == nil {
		w.opts.Team = &toolcallback.Options{}
	}
	if w.opts.Team.TokenKey == nil {
		w.opts.Team.TokenKey = []byte(TokenKey)
	}
	if w.opts.Files {
		w.startFiles()
	}
	w.Instance = w.NewInstance(client, counter)
	return w
}

func (w *World) startFiles() {
	t := w.T
	t.Helper()
	gcs, err := localgcs.Start(Bucket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gcs.Stop)
	if w.Artifacts, err = gcs.Artifacts(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.GCS = gcs
}

// TeamOptions are the options of the world's teams; changes apply to the
// instances built after them.
func (w *World) TeamOptions() *toolcallback.Options { return w.opts.Team }

// NewInstance returns another instance of the app on client (nil: the
// first instance's, a second instance sharing its connection and its
// counter).
func (w *World) NewInstance(client *firestore.Client, counter *firestoretest.Counter) *Instance {
	w.T.Helper()
	if client == nil {
		client, counter = w.Client, w.Counter
	}
	in := &Instance{Client: client, Counter: counter, Sessions: sessionstore.New(client, nil)}
	if w.opts.MCP != nil {
		reg, err := mcpregistry.New(in.Sessions, w.opts.MCP, nil)
		if err != nil {
			w.T.Fatal(err)
		}
		w.T.Cleanup(func() { reg.Close() })
		in.MCP = reg
	}
	if w.opts.Agents != nil {
		in.Team = w.newTeam(in, w.opts.Agents(w, in))
	} else {
		in.Team = w.newTeam(in, w.Assistant())
	}
	return in
}

// Reopen returns an instance in a process of its own: on a new client of
// the project, with its own connection and counter.
func (w *World) Reopen() *Instance {
	w.T.Helper()
	client, counter := firestoretest.Reopen(w.T, w.Client)
	return w.NewInstance(client, counter)
}

// Assistant is the default members: "assistant", on the world's model,
// with every demo tool.
func (w *World) Assistant() []toolcallback.Member {
	w.T.Helper()
	return []toolcallback.Member{w.Member(llmagent.Config{Name: "assistant", Model: w.Model, Tools: w.Tools.All()})}
}

// Member returns the LLM agent cfg describes as a team member.
func (w *World) Member(cfg llmagent.Config) toolcallback.Member {
	w.T.Helper()
	return Member(w.T, cfg)
}

// Member returns the LLM agent cfg describes as a team member.
func Member(t testing.TB, cfg llmagent.Config) toolcallback.Member {
	t.Helper()
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatalf("agent %q: %v", cfg.Name, err)
	}
	return toolcallback.Member{Agent: a}
}

// TeamOn returns a team of members on client with the world's options and
// files: an instance whose agents a test builds itself.
func (w *World) TeamOn(client *firestore.Client, members ...toolcallback.Member) *toolcallback.Team {
	w.T.Helper()
	return w.newTeam(&Instance{Client: client, Sessions: sessionstore.New(client, nil)}, members)
}

// newTeam returns a team of members on in's session store with the
// world's options, its files (Options.Files) and in's MCP registry wired.
func (w *World) newTeam(in *Instance, members []toolcallback.Member) *toolcallback.Team {
	w.T.Helper()
	o := *w.opts.Team
	if w.Artifacts != nil && o.Files == nil {
		o.Files = chatfiles.New(w.Artifacts, App, nil)
	}
	if in.MCP != nil {
		WireMCP(w.T, &o, in.MCP)
	}
	return NewTeam(w.T, in.Sessions, &o, members...)
}

// NewTeam returns a team of App on sessions, with opts (nil: the
// defaults) and a TokenKey when opts has none.
func NewTeam(t testing.TB, sessions *sessionstore.Service, opts *toolcallback.Options, members ...toolcallback.Member) *toolcallback.Team {
	t.Helper()
	var o toolcallback.Options
	if opts != nil {
		o = *opts
	}
	if o.TokenKey == nil {
		o.TokenKey = []byte(TokenKey)
	}
	team, err := toolcallback.NewTeam(sessions, App, members, &o)
	if err != nil {
		t.Fatalf("NewTeam: %v", err)
	}
	return team
}

// WireMCP has the team opts build end a chat's sessions of reg after an
// agent switch (those the new agent does not declare) and when Sweep
// deletes the chat, as functions does; a failure fails t.
func WireMCP(t testing.TB, opts *toolcallback.Options, reg *mcpregistry.Registry) {
	opts.ChatSwitched = func(ctx context.Context, chat *sessionstore.Chat, from string) {
		if err := reg.Switched(ctx, chat, from); err != nil {
			t.Errorf("Switched: %v", err)
		}
	}
	opts.ChatDeleted = func(ctx context.Context, chat *sessionstore.Chat) {
		if err := reg.CloseChat(ctx, chat); err != nil {
			t.Errorf("CloseChat: %v", err)
		}
	}
}

// SessionOf returns the id of the ADK session user's chat points at.
func (w *World) SessionOf(user, chat string) string {
	w.T.Helper()
	c, err := w.Sessions.GetChat(w.T.Context(), App, user, chat)
	if err != nil {
		w.T.Fatalf("GetChat(%q) error = %v", chat, err)
	}
	return c.SessionID
}

// History returns the stored events of the session user's chat points
// at, whole.
func (w *World) History(user, chat string) []*session.Event {
	w.T.Helper()
	return Stored(w.T, w.Sessions, user, w.SessionOf(user, chat))
}

// Stored returns the stored events of user's session sid, whole.
func Stored(t testing.TB, sessions *sessionstore.Service, user, sid string) []*session.Event {
	t.Helper()
	got, err := sessions.Get(t.Context(), &session.GetRequest{AppName: App, UserID: user, SessionID: sid})
	if err != nil {
		t.Fatalf("Get(%q) error = %v", sid, err)
	}
	return slices.Collect(got.Session.Events().All())
}

// Pending lists the calls of user's chat that client may answer.
func (w *World) Pending(user, chat, client string) []*toolcallback.Call {
	w.T.Helper()
	state, err := w.Team.Pending(w.T.Context(), toolcallback.PendingRequest{UserID: user, ChatID: chat, ClientID: client})
	if err != nil {
		w.T.Fatalf("Pending() error = %v", err)
	}
	return state.Calls
}
