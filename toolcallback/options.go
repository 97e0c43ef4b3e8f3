package toolcallback

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"

	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/workqueue"
)

// LeasePolicy says what a turn does when another invocation holds the
// session.
type LeasePolicy string

const (
	// LeaseReject fails at once with a *sessionstore.BusyError.
	LeaseReject LeasePolicy = "reject"
	// LeaseEnqueue waits up to Options.MaxWait for the session.
	LeaseEnqueue LeasePolicy = "enqueue"
)

// PendingPolicy says what a new message does to calls still pending.
type PendingPolicy string

const (
	// PendingCancel answers each pending call with a cancellation error,
	// then lets the message proceed.
	PendingCancel PendingPolicy = "cancel"
	// PendingReject refuses the message with a *PendingCallsError.
	PendingReject PendingPolicy = "reject"
)

// Options tunes a Team. Nil or zero fields take the defaults.
type Options struct {
	LeasePolicy   LeasePolicy   // default LeaseReject
	MaxWait       time.Duration // LeaseEnqueue's bound; default 10s
	PendingPolicy PendingPolicy // default PendingCancel
	// ResumeWait bounds how long a resume waits for a busy session (a
	// resume continues an interaction already under way, so it waits
	// whatever the lease policy). Default 12s: a little over LeaseTTL's
	// default, so an answer outwaits the lease of a holder that died.
	ResumeWait time.Duration
	// InvocationTimeout bounds one invocation, detached from the caller.
	// Default 2m.
	InvocationTimeout time.Duration
	// LeaseTTL is the term of a session lease. The holder renews it every
	// third of a term while it works, so a holder that dies frees the
	// session within one term. Default 10s.
	LeaseTTL time.Duration
	// CallTimeout is how long a paused call waits for its answer when its
	// tool sets no timeout (approvals always use it). Default 10m.
	CallTimeout time.Duration
	// AnswerGrace is how long after an answer Sweep leaves a step to the
	// request that recorded it before resuming it itself. Default 1m.
	AnswerGrace time.Duration
	// Retention is how long a finished ledger record is kept (its TTL
	// field) after it expires. Default 7 days.
	Retention time.Duration
	// MaxAnswerBytes limits one answer's JSON. Default 256 KiB.
	MaxAnswerBytes int
	// TokenKey signs call tokens; Token fails without one.
	TokenKey []byte
	// ApprovalsAnyDevice lets any of the user's clients answer approvals.
	// By default only the client that started the turn may.
	ApprovalsAnyDevice bool
	// StreamingMode of the runner. Default SSE, so text streams as partial
	// events.
	StreamingMode agent.StreamingMode
	// IdleRetention: a Team's Sweep deletes chats idle for longer, with all
	// their documents. Default 30 days.
	IdleRetention time.Duration
	// SessionStateOnly says the agents keep no app: or user: state (none is
	// stored and none is read), so a turn does not look up the app and
	// user state documents: two lookups fewer per turn, which Firestore
	// bills as reads whether or not the documents exist. With it set, an
	// agent reading such a key does not find it.
	SessionStateOnly bool
	// WarmChats and WarmBytes bound the copies of sessions a Team keeps
	// for warm turns (see the package doc): at most WarmChats chats, whose
	// sessions take at most WarmBytes in the store
	// (sessionstore.Session.StoredSize), the least recently used dropped first.
	// Defaults 1,000 chats and 32 MiB; WarmChats < 0 turns warm turns
	// off. Without SessionStateOnly a warm turn also reads the app and
	// user state documents beside the model, and its commit waits for
	// them to match its copy.
	WarmChats, WarmBytes int
	// CountTokens counts each user's model tokens per UTC day, from the
	// usage metadata of every model response, in the session document
	// the commit that stores the response writes anyway (no write of its
	// own; see package limits). A TurnRequest's Limits.UserTokensPerDay
	// needs it.
	CountTokens bool
	// CountServiceTokens also counts every model response's tokens toward
	// the deployment's day, in a shard of package limits' sharded count
	// (one more small document in the commit that stores the response):
	// a TurnRequest's Limits.ServiceTokensPerDay needs it.
	CountServiceTokens bool
	// IncludeThoughts asks the model, on every request of a turn or a
	// resume, for a summary of its thinking (genai's
	// ThinkingConfig.IncludeThoughts): thought parts stored with the
	// model's events, streamed as reasoning. The model's own thinking
	// settings stay as the agent set them.
	IncludeThoughts bool
	// Files stores the files of chats (package chatfiles): a user
	// message's inline files are saved there and the session keeps
	// references; the runner's tools save their artifacts there too. Nil:
	// files stay inline in the session, as ADK stores them.
	Files *chatfiles.Store
	// MaxFileBytes bounds a file a remote agent's result brings (kept in
	// Files): a larger one is not kept, and its answer says so. Default
	// 10 MiB (BATON_MAX_FILE_BYTES).
	MaxFileBytes int64
	// ChatSwitched, when set, is called after a Team's turn moved a chat
	// to another agent (chat.Agent; from is the previous one). It lets
	// parts that keep resources per chat, such as MCP connections, follow
	// the chat without this package knowing them.
	ChatSwitched func(ctx context.Context, chat *sessionstore.Chat, from string)
	// Queue carries background calls' work to the worker (Team.Work; see
	// Background). Nil: background calls are refused, each with an error
	// response the model reads.
	Queue *workqueue.Queue
	// ProgressInterval is how often, at most, a background call's latest
	// progress report is stored; an attempt holds the call's work for ten
	// intervals, renewed with the reports (or on their own every third of
	// that). Default 3s.
	ProgressInterval time.Duration
	// BackgroundPerUser bounds the background calls one user may have
	// running at once, over every chat; a call over it is refused (its
	// tool answers the model with an error). Default 5; negative: no bound.
	BackgroundPerUser int
	// EnqueueGrace is how long after a background call is stored the
	// sweeper (or the chat's next request) waits for its task to be
	// created before it creates it itself. Default 30s.
	EnqueueGrace time.Duration
	// RemotePushURL is the deployment's push callback for remote agents
	// (the RemotePush function): given to each remote with a token bound
	// to the call. Empty: no push is asked for, and remote calls are heard
	// by the sweeper's reads only (RemoteConfig.PollEvery).
	RemotePushURL string
	// ChatDeleted, when set, is called once a chat's deletion (DeleteChat,
	// DeleteAccount, or Sweep's of an idle chat) removed its sessions, with
	// the chat as it was stored, for the same parts.
	ChatDeleted func(ctx context.Context, chat *sessionstore.Chat)
	// TitleModel, when set, gives each new chat a short title after its
	// first exchange (title.go); without it a chat's title is the first
	// words of its first message.
	TitleModel model.LLM
	// AccountGone, when set, tells Sweep which of the users it names no
	// longer exist for the identity provider (a user deleted in Firebase
	// Authentication): their data is deleted (accounts.go). It is asked
	// about at most accountBatch users at a time.
	AccountGone func(ctx context.Context, users []string) ([]string, error)
	// AccountCheckEvery is how often Sweep walks every account asking
	// AccountGone about it. Default 24 hours.
	AccountCheckEvery time.Duration
	Logger            *slog.Logger

	// awaitingClaim, when set (by tests, export_test.go), is called when
	// the run starts waiting for the invocation's staged claim.
	awaitingClaim func()
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if out.LeasePolicy == "" {
		out.LeasePolicy = LeaseReject
	}
	if out.PendingPolicy == "" {
		out.PendingPolicy = PendingCancel
	}
	def(&out.MaxWait, 10*time.Second)
	def(&out.ResumeWait, 12*time.Second)
	def(&out.InvocationTimeout, 2*time.Minute)
	def(&out.LeaseTTL, 10*time.Second)
	def(&out.CallTimeout, 10*time.Minute)
	def(&out.AnswerGrace, time.Minute)
	def(&out.Retention, 7*24*time.Hour)
	def(&out.IdleRetention, 30*24*time.Hour)
	def(&out.ProgressInterval, 3*time.Second)
	def(&out.EnqueueGrace, 30*time.Second)
	if out.BackgroundPerUser == 0 {
		out.BackgroundPerUser = 5
	}
	def(&out.AccountCheckEvery, 24*time.Hour)
	if out.WarmChats == 0 {
		out.WarmChats = 1000
	}
	if out.WarmBytes <= 0 {
		out.WarmBytes = 32 << 20
	}
	if out.MaxAnswerBytes <= 0 {
		out.MaxAnswerBytes = 256 << 10
	}
	if out.MaxFileBytes <= 0 {
		out.MaxFileBytes = 10 << 20
	}
	if out.StreamingMode == "" {
		out.StreamingMode = agent.StreamingModeSSE
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out
}
