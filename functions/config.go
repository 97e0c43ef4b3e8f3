package functions

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/workqueue"
)

// Config is everything the functions read from the environment, read once
// per instance by ConfigFromEnv.
type Config struct {
	Project  string // GOOGLE_CLOUD_PROJECT: Firestore project and token audience
	Database string // FIRESTORE_DATABASE
	AppName  string // BATON_APP_NAME: the ADK app name sessions are stored under
	Root     string // BATON_ROOT_COLLECTION: top-level Firestore collection

	LeasePolicy       toolcallback.LeasePolicy   // BATON_LEASE_POLICY: reject | enqueue
	LeaseMaxWait      time.Duration              // BATON_LEASE_MAX_WAIT: enqueue's bound
	PendingPolicy     toolcallback.PendingPolicy // BATON_PENDING_POLICY: cancel | reject
	CallTimeout       time.Duration              // BATON_CALL_TIMEOUT: default expiry of a paused call
	InvocationTimeout time.Duration              // BATON_INVOCATION_TIMEOUT: bound on one agent run
	TokenKey          []byte                     // BATON_TOKEN_KEY: HMAC key of call tokens (a secret)
	MaxBodyBytes      int64                      // BATON_MAX_BODY_BYTES: request body limit
	ChatLimits                                   // Chat's own limits and its files' bucket
	AllowedOrigins    []string                   // BATON_ALLOWED_ORIGINS: comma-separated CORS origins
	KeepAlive         time.Duration              // BATON_KEEPALIVE: SSE comment interval while the model is slow
	// RequestTimeout bounds a request's work before its stream starts
	// (authentication, lease, ledger checks); the invocation has its own.
	RequestTimeout time.Duration // BATON_REQUEST_TIMEOUT
	// IdleRetention: Sweep deletes chats idle for longer, with every
	// document under them.
	IdleRetention time.Duration // BATON_IDLE_RETENTION
	// AccountCheck is how often Sweep asks Firebase Authentication about
	// every user that has data, and deletes the data of those it no longer
	// has (docs/data.md); 0 never.
	AccountCheck time.Duration // BATON_ACCOUNT_CHECK: a duration, or off
	// TitleModel is the Gemini model that gives each new chat a short title
	// after its first exchange; "" gives none (the first words stay).
	TitleModel string // BATON_TITLE_MODEL: a model name, or off

	// SweepAudience and SweepInvoker identify the scheduler: Sweep accepts
	// only a Google-signed OIDC token with this audience and this service
	// account email.
	SweepAudience string // BATON_SWEEP_AUDIENCE
	SweepInvoker  string // BATON_SWEEP_INVOKER

	// A2AAudience and A2AInvokers let service callers use A2A: a
	// Google-signed OIDC token with this audience (the A2A function's
	// URL) whose verified email is one of these service accounts. Empty:
	// only Firebase ID tokens are accepted.
	A2AAudience string   // BATON_A2A_AUDIENCE
	A2AInvokers []string // BATON_A2A_INVOKERS: comma-separated emails
	// A2APushAllow lists the URL prefixes A2A push notifications may go
	// to, each ending in "/". Empty turns push notifications off.
	A2APushAllow []string // BATON_A2A_PUSH_ALLOW: comma-separated
	// RemotePushURL is where remote agents send their push notifications
	// (docs/remote-agents.md): the A2A function's URL with the path
	// RemotePushPath. Empty: remote calls are heard by polling only.
	RemotePushURL string // BATON_REMOTE_PUSH_URL

	// CheckRevoked also asks the Firebase Auth API, on every request, whether
	// the user's tokens were revoked or the user was disabled or deleted
	// (the Admin SDK's VerifyIDTokenAndCheckRevoked). It costs one more API
	// call per request, counted against the Auth API's quota; without it a
	// revoked token is accepted until it expires (at most an hour).
	CheckRevoked bool // BATON_CHECK_REVOKED

	// IncludeThoughts asks the model for a summary of its thinking on
	// every request; the streams carry it as reasoning
	// (toolcallback.Options.IncludeThoughts, docs/http-api.md).
	IncludeThoughts bool // BATON_INCLUDE_THOUGHTS

	// TurnLimits are the turn rate limits and token budgets of each kind
	// of caller (see limits.go and docs/limits.md).
	TurnLimits TurnLimits

	// WorkQueue is the Cloud Tasks queue of background calls
	// (projects/P/locations/L/queues/Q); empty: background calls are
	// refused. WorkURL is where it delivers them (the Work function),
	// with an OIDC token of WorkInvoker for WorkAudience (default
	// WorkURL), which Work alone accepts; WorkDeadline is each delivery's
	// dispatch deadline (docs/background.md).
	WorkQueue    string        // BATON_WORK_QUEUE
	WorkURL      string        // BATON_WORK_URL
	WorkAudience string        // BATON_WORK_AUDIENCE
	WorkInvoker  string        // BATON_WORK_INVOKER
	WorkDeadline time.Duration // BATON_WORK_DEADLINE
	// BackgroundPerUser bounds the background calls a user may have
	// running at once (toolcallback.Options.BackgroundPerUser).
	BackgroundPerUser int // BATON_BACKGROUND_PER_USER

	// LiveModel is the Gemini Live model of live mode (docs/live.md).
	LiveModel string // BATON_LIVE_MODEL
	// LiveLocation is the Vertex AI location of the live model's client,
	// when it differs from the agents' (GOOGLE_CLOUD_LOCATION): Gemini 3
	// text models are served from "global", Live models from regions.
	// Empty: GOOGLE_CLOUD_LOCATION. Ignored with a Gemini API key.
	LiveLocation string // BATON_LIVE_LOCATION
	// LiveTimeout ends a live conversation before the platform's request
	// timeout cuts its socket; the client reconnects to go on.
	LiveTimeout time.Duration // BATON_LIVE_TIMEOUT

	// DevIdentity takes the user id from the X-Baton-User header instead of
	// a verified token. For the local runner only: ConfigFromEnv refuses it
	// on Cloud Run (K_SERVICE set).
	DevIdentity bool // BATON_DEV_IDENTITY

	// TraceExport says where the instance's spans go: TraceExportNone or
	// TraceExportCloudTrace (see InstallTracing).
	TraceExport string // BATON_TRACE_EXPORT
	// Operators may use the console (/admin, docs/operator.md): each a
	// verified email of a Firebase user or, in development identity
	// mode, a user id; users whose custom claim OperatorClaim is true are
	// operators too.
	Operators     []string // BATON_OPERATORS: comma-separated
	OperatorClaim string   // BATON_OPERATOR_CLAIM
	// FirebaseAPIKey is the Firebase Web API key the console page signs
	// operators in with (not a secret: every Firebase web app ships it).
	FirebaseAPIKey string // BATON_FIREBASE_API_KEY
	// MetricExport says where the instance's metrics go:
	// MetricExportNone or MetricExportCloudMonitoring (see
	// InstallMetrics).
	MetricExport string // BATON_METRIC_EXPORT

	// AuthEmulator is the Firebase Auth emulator the Admin SDK talks to
	// instead of Firebase Auth, accepting its unsigned tokens. The SDK reads
	// the variable itself; ConfigFromEnv reads it to refuse it on Cloud Run.
	AuthEmulator string // FIREBASE_AUTH_EMULATOR_HOST
}

// DefaultTitleModel is the model that titles new chats when
// BATON_TITLE_MODEL is not set: the agents' default model, small enough for
// a few words.
const DefaultTitleModel = "gemini-3.8-flash"

// DefaultOperatorClaim is the custom claim that makes a Firebase user an
// operator when BATON_OPERATOR_CLAIM is not set.
const DefaultOperatorClaim = "baton_operator"

// DefaultLiveModel is the live model when BATON_LIVE_MODEL is not set:
// Gemini 3.8 Live, the stable Live model the Gemini API and Vertex AI both
// name so (docs/configuration.md says when and where that was checked).
const DefaultLiveModel = "gemini-3.8-live"

// EnvVar documents one environment variable the functions read.
type EnvVar struct {
	Name     string
	Default  string // "" when the variable is required or optional without default
	Required bool   // on Cloud Run
	Secret   bool
}

// EnvVars lists every variable ConfigFromEnv reads. The deployment sets each
// one or leaves it to its default; a test holds Terraform to this list.
var EnvVars = []EnvVar{
	{Name: "GOOGLE_CLOUD_PROJECT", Required: true},
	{Name: "FIRESTORE_DATABASE", Default: "(default)"},
	{Name: "BATON_APP_NAME", Default: "baton"},
	{Name: "BATON_ROOT_COLLECTION", Default: sessionstore.DefaultRoot},
	{Name: "BATON_LEASE_POLICY", Default: string(toolcallback.LeaseReject)},
	{Name: "BATON_LEASE_MAX_WAIT", Default: "10s"},
	{Name: "BATON_PENDING_POLICY", Default: string(toolcallback.PendingCancel)},
	{Name: "BATON_CALL_TIMEOUT", Default: "10m"},
	{Name: "BATON_INVOCATION_TIMEOUT", Default: "2m"},
	{Name: "BATON_TOKEN_KEY", Secret: true},
	{Name: "BATON_MAX_BODY_BYTES", Default: "262144"},
	{Name: "BATON_MAX_CHAT_BODY_BYTES", Default: "33554432"},
	{Name: "BATON_MAX_FILE_BYTES", Default: "10485760"},
	{Name: "BATON_FILES_BUCKET"},
	{Name: "BATON_ALLOWED_ORIGINS"},
	{Name: "BATON_KEEPALIVE", Default: "15s"},
	{Name: "BATON_REQUEST_TIMEOUT", Default: "30s"},
	{Name: "BATON_IDLE_RETENTION", Default: "720h"},
	{Name: "BATON_ACCOUNT_CHECK", Default: "24h"},
	{Name: "BATON_TITLE_MODEL", Default: DefaultTitleModel},
	{Name: "BATON_SWEEP_AUDIENCE"},
	{Name: "BATON_SWEEP_INVOKER"},
	{Name: "BATON_A2A_AUDIENCE"},
	{Name: "BATON_A2A_INVOKERS"},
	{Name: "BATON_A2A_PUSH_ALLOW"},
	{Name: "BATON_REMOTE_PUSH_URL"},
	{Name: "BATON_CHECK_REVOKED", Default: "false"},
	{Name: "BATON_INCLUDE_THOUGHTS", Default: "false"},
	{Name: "BATON_USER_TURNS_PER_MINUTE", Default: "30"},
	{Name: "BATON_CHAT_TURNS_PER_MINUTE", Default: "20"},
	{Name: "BATON_USER_TOKENS_PER_DAY", Default: "0"},
	{Name: "BATON_ANON_USER_TURNS_PER_MINUTE", Default: "10"},
	{Name: "BATON_ANON_USER_TOKENS_PER_DAY", Default: "0"},
	{Name: "BATON_SERVICE_TURNS_PER_MINUTE", Default: "120"},
	{Name: "BATON_SERVICE_TOKENS_PER_DAY", Default: "0"},
	{Name: "BATON_LIVE_SEGMENTS_PER_USER", Default: "2"},
	{Name: "BATON_WORK_QUEUE"},
	{Name: "BATON_WORK_URL"},
	{Name: "BATON_WORK_AUDIENCE"},
	{Name: "BATON_WORK_INVOKER"},
	{Name: "BATON_WORK_DEADLINE", Default: "30m"},
	{Name: "BATON_BACKGROUND_PER_USER", Default: "5"},
	{Name: "BATON_SERVICE_TOKENS_CAP", Default: "0"},
	{Name: "BATON_NEW_ANONYMOUS_PER_DAY", Default: "0"},
	{Name: "BATON_OPERATORS"},
	{Name: "BATON_OPERATOR_CLAIM", Default: DefaultOperatorClaim},
	{Name: "BATON_FIREBASE_API_KEY"},
	{Name: "BATON_METRIC_EXPORT", Default: MetricExportNone},
	{Name: "BATON_LIVE_MODEL", Default: DefaultLiveModel},
	{Name: "BATON_LIVE_LOCATION"},
	{Name: "BATON_LIVE_TIMEOUT", Default: "55m"},
	{Name: "BATON_DEV_IDENTITY", Default: "false"},
	{Name: "BATON_TRACE_EXPORT", Default: TraceExportNone},
	{Name: "FIREBASE_AUTH_EMULATOR_HOST"}, // local runner and tests only
	{Name: "K_SERVICE"},                   // set by Cloud Run; only read to refuse dev identity and the emulator there
}

// ConfigFromEnv reads the configuration through lookup (os.LookupEnv in
// production) and validates it.
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	get := func(name string) string {
		if v, ok := lookup(name); ok && v != "" {
			return v
		}
		for _, e := range EnvVars {
			if e.Name == name {
				return e.Default
			}
		}
		return ""
	}
	var errs []error
	duration := func(name string) time.Duration {
		d, err := time.ParseDuration(get(name))
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive duration such as 30s", name, get(name)))
		}
		return d
	}
	c := Config{
		Project:           get("GOOGLE_CLOUD_PROJECT"),
		Database:          get("FIRESTORE_DATABASE"),
		AppName:           get("BATON_APP_NAME"),
		Root:              get("BATON_ROOT_COLLECTION"),
		LeasePolicy:       toolcallback.LeasePolicy(get("BATON_LEASE_POLICY")),
		LeaseMaxWait:      duration("BATON_LEASE_MAX_WAIT"),
		PendingPolicy:     toolcallback.PendingPolicy(get("BATON_PENDING_POLICY")),
		CallTimeout:       duration("BATON_CALL_TIMEOUT"),
		InvocationTimeout: duration("BATON_INVOCATION_TIMEOUT"),
		TokenKey:          []byte(get("BATON_TOKEN_KEY")),
		KeepAlive:         duration("BATON_KEEPALIVE"),
		RequestTimeout:    duration("BATON_REQUEST_TIMEOUT"),
		IdleRetention:     duration("BATON_IDLE_RETENTION"),
		SweepAudience:     get("BATON_SWEEP_AUDIENCE"),
		SweepInvoker:      get("BATON_SWEEP_INVOKER"),
		A2AAudience:       get("BATON_A2A_AUDIENCE"),
		A2AInvokers:       list(get("BATON_A2A_INVOKERS")),
		A2APushAllow:      list(get("BATON_A2A_PUSH_ALLOW")),
		RemotePushURL:     get("BATON_REMOTE_PUSH_URL"),
		TraceExport:       get("BATON_TRACE_EXPORT"),
		LiveModel:         get("BATON_LIVE_MODEL"),
		LiveLocation:      get("BATON_LIVE_LOCATION"),
		LiveTimeout:       duration("BATON_LIVE_TIMEOUT"),
		WorkQueue:         get("BATON_WORK_QUEUE"),
		WorkURL:           get("BATON_WORK_URL"),
		WorkAudience:      get("BATON_WORK_AUDIENCE"),
		WorkInvoker:       get("BATON_WORK_INVOKER"),
		WorkDeadline:      duration("BATON_WORK_DEADLINE"),
		AuthEmulator:      get("FIREBASE_AUTH_EMULATOR_HOST"),
		Operators:         list(get("BATON_OPERATORS")),
		OperatorClaim:     get("BATON_OPERATOR_CLAIM"),
		FirebaseAPIKey:    get("BATON_FIREBASE_API_KEY"),
		MetricExport:      get("BATON_METRIC_EXPORT"),
	}
	c.AllowedOrigins = list(get("BATON_ALLOWED_ORIGINS"))
	if v := get("BATON_TITLE_MODEL"); v != "off" {
		c.TitleModel = v
	}
	if v := get("BATON_ACCOUNT_CHECK"); v != "off" {
		c.AccountCheck = duration("BATON_ACCOUNT_CHECK")
	}
	var err error
	if c.MaxBodyBytes, err = strconv.ParseInt(get("BATON_MAX_BODY_BYTES"), 10, 64); err != nil || c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("BATON_MAX_BODY_BYTES=%q: want a positive byte count", get("BATON_MAX_BODY_BYTES")))
	}
	errs = append(errs, c.ChatLimits.read(get)...)
	errs = append(errs, c.TurnLimits.read(get)...)
	errs = append(errs, c.readSwitches(get)...)
	if c.BackgroundPerUser, err = strconv.Atoi(get("BATON_BACKGROUND_PER_USER")); err != nil || c.BackgroundPerUser <= 0 {
		errs = append(errs, fmt.Errorf("BATON_BACKGROUND_PER_USER=%q: want a positive count", get("BATON_BACKGROUND_PER_USER")))
	}
	errs = append(errs, c.check(get("K_SERVICE") != "")...)
	return c, errors.Join(errs...)
}

// readSwitches reads the configuration's true-or-false settings.
func (c *Config) readSwitches(get func(string) string) []error {
	var errs []error
	for _, sw := range []struct {
		name string
		to   *bool
	}{{"BATON_DEV_IDENTITY", &c.DevIdentity}, {"BATON_CHECK_REVOKED", &c.CheckRevoked}, {"BATON_INCLUDE_THOUGHTS", &c.IncludeThoughts}} {
		v, err := strconv.ParseBool(get(sw.name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want true or false", sw.name, get(sw.name)))
		}
		*sw.to = v
	}
	return errs
}

// check reports what is wrong with a configuration read from the
// environment; onCloudRun says K_SERVICE is set.
func (c *Config) check(onCloudRun bool) []error {
	var errs []error
	for _, p := range c.A2APushAllow {
		if err := checkPushPrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("BATON_A2A_PUSH_ALLOW: %w", err))
		}
	}
	errs = append(errs, c.checkWork()...)
	if len(c.A2AInvokers) > 0 && c.A2AAudience == "" {
		errs = append(errs, errors.New("BATON_A2A_INVOKERS needs BATON_A2A_AUDIENCE (without one idtoken checks no audience)"))
	}
	if c.DevIdentity && onCloudRun {
		errs = append(errs, errors.New("BATON_DEV_IDENTITY=true is for the local runner and is refused on Cloud Run (K_SERVICE is set)"))
	}
	if c.AuthEmulator != "" && onCloudRun {
		errs = append(errs, errors.New("FIREBASE_AUTH_EMULATOR_HOST makes the Admin SDK accept unsigned tokens and is refused on Cloud Run (K_SERVICE is set)"))
	}
	if c.Project == "" && !c.DevIdentity {
		errs = append(errs, errors.New("GOOGLE_CLOUD_PROJECT is required"))
	}
	if c.LeasePolicy != toolcallback.LeaseReject && c.LeasePolicy != toolcallback.LeaseEnqueue {
		errs = append(errs, fmt.Errorf("BATON_LEASE_POLICY=%q: want reject or enqueue", c.LeasePolicy))
	}
	if c.PendingPolicy != toolcallback.PendingCancel && c.PendingPolicy != toolcallback.PendingReject {
		errs = append(errs, fmt.Errorf("BATON_PENDING_POLICY=%q: want cancel or reject", c.PendingPolicy))
	}
	if c.MetricExport != MetricExportNone && c.MetricExport != MetricExportCloudMonitoring {
		errs = append(errs, fmt.Errorf("BATON_METRIC_EXPORT=%q: want %s or %s", c.MetricExport, MetricExportNone, MetricExportCloudMonitoring))
	}
	if c.OperatorClaim == "" || strings.ContainsAny(c.OperatorClaim, " ,") {
		errs = append(errs, fmt.Errorf("BATON_OPERATOR_CLAIM=%q: want a claim name", c.OperatorClaim))
	}
	if c.TraceExport != TraceExportNone && c.TraceExport != TraceExportCloudTrace {
		errs = append(errs, fmt.Errorf("BATON_TRACE_EXPORT=%q: want %s or %s", c.TraceExport, TraceExportNone, TraceExportCloudTrace))
	}
	if len(c.TokenKey) > 0 && len(c.TokenKey) < 32 {
		errs = append(errs, errors.New("BATON_TOKEN_KEY: want at least 32 bytes"))
	}
	for _, id := range []struct{ kind, v string }{{"BATON_APP_NAME", c.AppName}, {"BATON_ROOT_COLLECTION", c.Root}} {
		if err := sessionstore.ValidateID(id.kind, id.v); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkWork reports what is wrong with the background work's settings.
func (c *Config) checkWork() []error {
	if c.WorkQueue == "" {
		return nil
	}
	var errs []error
	if c.WorkURL == "" || c.WorkInvoker == "" {
		errs = append(errs, errors.New("BATON_WORK_QUEUE needs BATON_WORK_URL and BATON_WORK_INVOKER"))
	}
	if c.WorkDeadline > workqueue.MaxDeadline || c.WorkDeadline < workqueue.MinDeadline {
		errs = append(errs, fmt.Errorf("BATON_WORK_DEADLINE=%s: want %s to %s (Cloud Tasks' dispatch deadlines)", c.WorkDeadline,
			workqueue.MinDeadline, workqueue.MaxDeadline))
	}
	if c.WorkDeadline <= c.InvocationTimeout+workMargin {
		errs = append(errs, fmt.Errorf("BATON_WORK_DEADLINE=%s: want more than BATON_INVOCATION_TIMEOUT (%s) plus %s, for the work, its record and the agent it resumes",
			c.WorkDeadline, c.InvocationTimeout, workMargin))
	}
	return errs
}

// list splits a comma-separated variable, dropping empty entries.
func list(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// checkPushPrefix accepts an absolute http(s) URL ending in "/": a prefix
// such as "https://hooks.example.com" would also let
// "https://hooks.example.com.evil.example/" through.
func checkPushPrefix(p string) error {
	u, err := url.Parse(p)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || !strings.HasSuffix(p, "/") {
		return fmt.Errorf("%q: want an http(s) URL prefix ending in /", p)
	}
	return nil
}

// ChatLimits are what Chat reads beyond MaxBodyBytes (see usechat/chatbody.go and
// docs/files-and-long-chats.md): the whole body, which repeats the
// history, is bound by MaxChatBodyBytes; each file of the new message by
// MaxFileBytes; the rest of what is new by MaxBodyBytes.
type ChatLimits struct {
	MaxChatBodyBytes int64 // BATON_MAX_CHAT_BODY_BYTES
	MaxFileBytes     int64 // BATON_MAX_FILE_BYTES
	// FilesBucket is the Cloud Storage bucket of the chats' files (see
	// usechat/files.go). Empty: files are refused, unless ServerOptions.Files
	// gives a store.
	FilesBucket string // BATON_FILES_BUCKET
}

func (c *ChatLimits) read(get func(string) string) []error {
	c.FilesBucket = get("BATON_FILES_BUCKET")
	var errs []error
	for _, n := range []struct {
		name string
		v    *int64
	}{{"BATON_MAX_CHAT_BODY_BYTES", &c.MaxChatBodyBytes}, {"BATON_MAX_FILE_BYTES", &c.MaxFileBytes}} {
		var err error
		if *n.v, err = strconv.ParseInt(get(n.name), 10, 64); err != nil || *n.v <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive byte count", n.name, get(n.name)))
		}
	}
	return errs
}
