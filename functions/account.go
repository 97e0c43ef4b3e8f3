package functions

// The Account function (package account): a person's data as a whole.
//
//	GET    /Account          whether a deletion of the caller's data is under way
//	GET    /Account/export   everything Baton keeps for the caller, as one ZIP
//	DELETE /Account          all of it deleted: 204, or 202 while under way
//
// And what Sweep asks Firebase Authentication about the users that have
// data (accountGone), so that a user deleted there loses their data here
// without anyone calling Baton.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"firebase.google.com/go/v4/auth"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/genai"

	"github.com/baton-run/baton/console"
	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/toolcallback"
)

// accountRoutes routes the Account function's paths.
func (s *Server) accountRoutes(w http.ResponseWriter, r *http.Request, _ *slog.Logger) error {
	rest := r.URL.EscapedPath()
	if i := strings.Index(rest, "/"+NameAccount); i >= 0 {
		rest = rest[i+len(NameAccount)+1:]
	}
	switch rest = strings.Trim(rest, "/"); {
	case r.Method == http.MethodGet && rest == "":
		return s.account.Get(w, r)
	case r.Method == http.MethodGet && rest == "export":
		return s.account.Export(w, r)
	case r.Method == http.MethodDelete && rest == "":
		return s.account.Delete(w, r)
	}
	return fmt.Errorf("%w: GET or DELETE /Account, GET /Account/export", errBadRequest)
}

// accountGone asks Firebase Authentication, through client, which of users
// it no longer has (one GetUsers call, at most 100 users).
func accountGone(client *auth.Client) func(ctx context.Context, users []string) ([]string, error) {
	return func(ctx context.Context, users []string) ([]string, error) {
		ids := make([]auth.UserIdentifier, len(users))
		for i, u := range users {
			ids[i] = auth.UIDIdentifier{UID: u}
		}
		res, err := client.GetUsers(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("%w: ask Firebase Authentication about users: %v", errclass.ErrUnavailable, err)
		}
		gone := make([]string, 0, len(res.NotFound))
		for _, id := range res.NotFound {
			if uid, ok := id.(auth.UIDIdentifier); ok {
				gone = append(gone, uid.UID)
			}
		}
		return gone, nil
	}
}

// newTitleModel is the model that titles new chats (cfg.TitleModel), nil
// when titles are off or no Gemini client can be made from the
// environment (GOOGLE_API_KEY, or Vertex AI's variables).
func newTitleModel(cfg Config, log *slog.Logger) model.LLM {
	if cfg.TitleModel == "" {
		return nil
	}
	m, err := gemini.NewModel(context.Background(), cfg.TitleModel, &genai.ClientConfig{})
	if err != nil {
		log.Info("chat titles are the first words of their first message: no title model", "reason", err.Error())
		return nil
	}
	return m
}

// accountAuthClient returns how Sweep gets the Firebase Auth client it
// asks about users (cfg.AccountCheck); nil when the check is off. GetUsers
// needs the Admin SDK's credentials, which the identity client has only
// with BATON_CHECK_REVOKED (or against the Auth emulator, where any client
// may ask); otherwise one is made with the instance's credentials, at the
// first sweep that needs it rather than at startup: an instance without
// credentials still serves every request, and only the check fails (Sweep
// says so, and tries again at its next run).
func accountAuthClient(cfg Config, given, identity *auth.Client) func(ctx context.Context) (*auth.Client, error) {
	switch {
	case cfg.AccountCheck <= 0:
		return nil
	case given != nil:
		return func(context.Context) (*auth.Client, error) { return given, nil }
	case cfg.CheckRevoked || cfg.AuthEmulator != "":
		return func(context.Context) (*auth.Client, error) { return identity, nil }
	}
	var (
		mu     sync.Mutex
		client *auth.Client
	)
	return func(ctx context.Context) (*auth.Client, error) {
		mu.Lock()
		defer mu.Unlock()
		if client != nil {
			return client, nil
		}
		c, err := newAuthClient(ctx, cfg.Project, true)
		if err != nil {
			return nil, fmt.Errorf("%w: a Firebase Auth client to check the users with data: %v", errclass.ErrUnavailable, err)
		}
		client = c
		return client, nil
	}
}

// dataOptions sets what the team does for a person's data: new chats'
// titles (opts.TitleModel, else cfg.TitleModel's) and Sweep's check of
// the users with data (cfg.AccountCheck), through the Auth client set once
// the identity is (s.accountAuth; none with the development identity).
func (s *Server) dataOptions(topts *toolcallback.Options, opts *ServerOptions) {
	topts.TitleModel = opts.TitleModel
	if topts.TitleModel == nil {
		topts.TitleModel = newTitleModel(s.cfg, s.log)
	}
	if s.cfg.AccountCheck <= 0 {
		return
	}
	topts.AccountCheckEvery = s.cfg.AccountCheck
	topts.AccountGone = func(ctx context.Context, users []string) ([]string, error) {
		if s.accountAuth == nil {
			return nil, nil // no identity provider to ask
		}
		client, err := s.accountAuth(ctx)
		if err != nil {
			return nil, err
		}
		return accountGone(client)(ctx, users)
	}
}

// consoleAccount gives the operator's console the account deletion a
// user's own DELETE /Account runs, and the ratings the user gave.
type consoleAccount struct{ team *toolcallback.Team }

// DeleteAccount deletes user's data; one left under way (a chat held) is
// Sweep's to finish, as for the user's own request.
func (a consoleAccount) DeleteAccount(ctx context.Context, user string) error {
	_, err := a.team.DeleteAccount(ctx, user)
	if errors.Is(err, toolcallback.ErrDeletionPending) {
		return nil
	}
	return err
}

// Feedback is the ratings user gave in chats, one read per chat.
func (a consoleAccount) Feedback(ctx context.Context, user string, chats []string) ([]console.Feedback, error) {
	var out []console.Feedback
	for _, chat := range chats {
		ratings, err := a.team.Feedback().All(ctx, user, chat)
		if err != nil {
			return nil, err
		}
		for message, r := range ratings {
			out = append(out, console.Feedback{Chat: chat, Message: message, Rating: r.Rating, Comment: r.Comment, At: r.Updated})
		}
	}
	slices.SortFunc(out, func(a, b console.Feedback) int { return b.At.Compare(a.At) }) // the newest first
	return out, nil
}
