package account

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// Name is the name of the function this package serves: its URLs are
// {function URL}/..., or /Account/... where every function shares one
// port.
const Name = "Account"

// Identity verifies who sent a request and returns the user.
type Identity func(r *http.Request) (string, error)

// Server serves the Account function: a person's data as a whole.
//
//	GET    /Account          {"user", "deleting"}: whether a deletion is under way
//	GET    /Account/export   everything Baton keeps for the caller, as one ZIP
//	DELETE /Account          all of it deleted: 204 when done, 202 while under way
type Server struct {
	team     *toolcallback.Team
	sessions *sessionstore.Service
	files    *chatfiles.Store // nil: the deployment stores no files
	counter  *limits.Counter
	ident    Identity
	log      *slog.Logger
}

// New returns the Account function of team, whose chats sessions stores
// and files keeps the files of (nil: none), its callers verified by ident.
func New(team *toolcallback.Team, sessions *sessionstore.Service, files *chatfiles.Store, ident Identity, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{team: team, sessions: sessions, files: files, counter: limits.NewCounter(sessions, team.App()), ident: ident, log: log}
}

// Get serves GET /Account.
func (s *Server) Get(w http.ResponseWriter, r *http.Request) error {
	user, err := s.ident(r)
	if err != nil {
		return err
	}
	deleting, err := s.team.AccountDeletion(r.Context(), user)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"user": user, "deleting": deleting})
	return nil
}

// Export serves GET /Account/export: the ZIP, streamed. Once it started,
// a failure ends it there (logged), the download incomplete.
func (s *Server) Export(w http.ResponseWriter, r *http.Request) error {
	user, err := s.ident(r)
	if err != nil {
		return err
	}
	now := platform.Now(r.Context()).UTC()
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", `attachment; filename="baton-export-`+now.Format("2006-01-02")+`.zip"`)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if err := s.export(r.Context(), w, user, now); err != nil {
		s.log.WarnContext(r.Context(), "export ended early", "error", err.Error())
	}
	return nil
}

// deleteMargin is what a deletion leaves of the request's time to answer.
const deleteMargin = 2 * time.Second

// Delete serves DELETE /Account: everything deleted (toolcallback's
// DeleteAccount), 204; or, when something kept a chat held or the
// request's time ran out, 202 with the deletion under way (the sweeper
// finishes it; GET /Account says deleting until then).
func (s *Server) Delete(w http.ResponseWriter, r *http.Request) error {
	user, err := s.ident(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-deleteMargin))
		defer cancel()
	}
	report, err := s.team.DeleteAccount(ctx, user)
	switch {
	case errors.Is(err, toolcallback.ErrDeletionPending) || err != nil && ctx.Err() != nil && r.Context().Err() == nil:
		writeJSON(w, http.StatusAccepted, map[string]string{"status": "deleting"})
		return nil
	case err != nil:
		return err
	}
	s.log.InfoContext(ctx, "account deleted", "chats", report.Chats, "documents", report.Documents)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
