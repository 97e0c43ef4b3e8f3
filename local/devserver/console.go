package devserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/auth"
	"google.golang.org/api/option"

	"github.com/baton-run/baton/functions"
)

// The local operator: go run ./local makes one, so that the console at
// /admin can be opened at once (docs/operator.md, "Locally"). With the
// Auth emulator it is a Firebase user with a verified email and the
// operator claim, whose password the console's sign-in form is given; in
// development identity mode, the user id "operator", listed in
// BATON_OPERATORS.
const (
	localOperatorEmail    = "operator@baton.local"
	localOperatorPassword = "local-operator"
	localOperatorDevID    = "operator"
)

// emulatorAuth is the Admin SDK's client of the Auth emulator of project.
func emulatorAuth(ctx context.Context, project string) (*auth.Client, error) {
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: project}, option.WithoutAuthentication())
	if err != nil {
		return nil, err
	}
	return app.Auth(ctx)
}

// ensureUsers makes the local operator and the users uids in the Auth
// emulator (Options.AuthUsers; they may exist from an earlier run, or
// another runner's, of the same emulator): the emulator's tokens are
// accepted only for users it has.
func ensureUsers(ctx context.Context, cfg functions.Config, uids []string) error {
	if err := ensureOperator(ctx, cfg.Project, cfg.OperatorClaim); err != nil || len(uids) == 0 {
		return err
	}
	client, err := emulatorAuth(ctx, cfg.Project)
	if err != nil {
		return fmt.Errorf("auth users: %w", err)
	}
	for _, uid := range uids {
		_, err := client.CreateUser(ctx, (&auth.UserToCreate{}).UID(uid))
		if err != nil && !auth.IsUIDAlreadyExists(err) {
			return fmt.Errorf("auth user %s: %w", uid, err)
		}
	}
	return nil
}

// ensureOperator makes the local operator in the Auth emulator (it may
// exist from an earlier run of the same emulator).
func ensureOperator(ctx context.Context, project, claim string) error {
	client, err := emulatorAuth(ctx, project)
	if err != nil {
		return fmt.Errorf("local operator: %w", err)
	}
	rec, err := client.GetUserByEmail(ctx, localOperatorEmail)
	if auth.IsUserNotFound(err) {
		rec, err = client.CreateUser(ctx, (&auth.UserToCreate{}).Email(localOperatorEmail).Password(localOperatorPassword).EmailVerified(true))
		if auth.IsEmailAlreadyExists(err) {
			// Another runner on the same Auth emulator made it meanwhile.
			rec, err = client.GetUserByEmail(ctx, localOperatorEmail)
		}
	}
	if err != nil {
		return fmt.Errorf("local operator: %w", err)
	}
	if err := client.SetCustomUserClaims(ctx, rec.UID, map[string]any{claim: true}); err != nil {
		return fmt.Errorf("local operator: %w", err)
	}
	return nil
}

// consoleConfig serves /admin/config.json in a local run: the Admin
// function's, with the local operator's credentials for the sign-in form.
func consoleConfig(cfg functions.Config, signIn *pageAuth) http.Handler {
	c := map[string]any{"mode": "dev", "localOperator": map[string]any{"email": localOperatorDevID}}
	if signIn != nil {
		c = map[string]any{"mode": "firebase", "projectId": cfg.Project, "apiKey": authEmulatorAPIKey,
			"authDomain": cfg.Project + ".firebaseapp.com", "emulator": "http://" + signIn.addr,
			"localOperator": map[string]any{"email": localOperatorEmail, "password": localOperatorPassword}}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(c)
	})
}
