package limits_test

import (
	"context"
	"errors"
	"log"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
)

func ExampleNewCounter() {
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "my-project")
	if err != nil {
		log.Fatal(err)
	}
	sessions := sessionstore.New(client, nil)
	counter := limits.NewCounter(sessions, "demo") // one per instance
	// A turn of ada's: at most 10 a minute, and 100,000 model tokens a day.
	reading := counter.Begin(ctx, "ada", limits.Limits{UserTurnsPerMinute: 10, UserTokensPerDay: 100_000}, time.Now())
	docs, err := sessions.ReadDocs(ctx, reading.Docs()...) // a turn reads them with its chat
	if err != nil {
		log.Fatal(err)
	}
	meter, err := reading.Meter(docs)
	if err != nil {
		log.Fatal(err)
	}
	var refused *limits.LimitError
	if err := meter.Check(nil); errors.As(err, &refused) { // nil: a chat not stored yet
		log.Printf("refused: retry after %s", refused.RetryAfter)
		return
	}
	// The commit that stores the message counts the turn: it carries
	// meter.Writes() and meter.ChatLog(nil) (sessionstore.AppendOptions'
	// Writes and TurnLog) and tells meter.Committed its time.
}
