package ledger_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
)

func ExampleNew() {
	ctx := context.Background()
	sessions, err := sessionstore.Open(ctx, "my-project", "", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer sessions.Close()
	calls := ledger.New(sessions, "demo", nil)
	// A turn paused on calls: who answers first wins.
	open, err := calls.Unresumed(ctx, "user-1", "chat-1~0")
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range open {
		if c.Status != ledger.StatusPending {
			continue
		}
		_, err := calls.Answer(ctx, c, ledger.Answer{Output: map[string]any{"playing": 2}}, "tab-1", time.Now())
		if errors.Is(err, ledger.ErrChanged) {
			log.Printf("call %s was answered or closed by someone else first", c.ID)
		}
	}
}
