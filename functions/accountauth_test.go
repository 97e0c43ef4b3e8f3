package functions

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent/llmagent"

	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// TestStartsWithoutAccountCredentials: the check of the users with data
// (BATON_ACCOUNT_CHECK, on by default) makes its Firebase Auth client at
// the first sweep that needs it, so an instance without credentials for it
// still starts and serves; only the check fails, as unavailable. (Made at
// startup, the client's missing credentials failed every function's
// startup, which TestArchiveBuilds found.)
func TestStartsWithoutAccountCredentials(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "none.json"))
	t.Setenv("FIREBASE_AUTH_EMULATOR_HOST", "")
	cfg := testConfig()
	cfg.AccountCheck = time.Hour
	client := firestoretest.NewClient(t)
	keys := newTestKeyServer(t)
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: &modeltest.Strict{T: t}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(cfg, sessionstore.New(client, &sessionstore.Options{Root: cfg.Root}), []toolcallback.Member{{Agent: root}},
		&ServerOptions{SchedulerKeys: keys.Client()})
	if err != nil {
		t.Fatalf("NewServer without credentials for the account check: %v", err)
	}
	if s.accountAuth == nil {
		t.Fatal("the account check is off")
	}
	if _, err := s.accountAuth(t.Context()); !errors.Is(err, errclass.ErrUnavailable) {
		t.Errorf("the account check's client without credentials: %v, want unavailable", err)
	}
}
