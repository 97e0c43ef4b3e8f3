package devserver

import (
	"sync"
	"testing"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/auth"
	"google.golang.org/api/option"

	"github.com/baton-run/baton/functions"
	"github.com/baton-run/baton/internal/authtest"
)

// TestLocalOperatorTwoRunners: runners started at once on one Auth
// emulator (go test ./local starts several) each make sure of the local
// operator, and none fails because another made it first.
func TestLocalOperatorTwoRunners(t *testing.T) {
	const project = "test-devserver"
	authtest.Emulator(t, project)
	ctx := t.Context()
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: project}, option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	client, err := app.Auth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := client.GetUserByEmail(ctx, localOperatorEmail); err == nil {
		if err := client.DeleteUser(ctx, rec.UID); err != nil {
			t.Fatal(err)
		}
	} else if !auth.IsUserNotFound(err) {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- ensureOperator(ctx, project, functions.DefaultOperatorClaim) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a runner's local operator: %v", err)
		}
	}
	rec, err := client.GetUserByEmail(ctx, localOperatorEmail)
	if err != nil {
		t.Fatal(err)
	}
	if rec.CustomClaims[functions.DefaultOperatorClaim] != true {
		t.Errorf("the local operator's claims: %v, want %s", rec.CustomClaims, functions.DefaultOperatorClaim)
	}
}
