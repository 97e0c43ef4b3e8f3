package console_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/console"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// benchChats is how many chats the console's benchmark stores.
const benchChats = 10_000

// BenchmarkConsole10000Chats stores 10,000 chats of 1,000 users in the
// emulator (each chat document and its session; 2,000 of them paused on a
// call, 200 running, 100 with a lease stuck an hour, 100 with a call an
// hour overdue) and measures a page of 50 of each list, the first and
// the tenth (through the cursors), with the Firestore operations each
// costs: one query per page, whatever the number of chats.
//
//	./test -run '^$' -bench BenchmarkConsole10000Chats -benchtime 20x ./console
//
// Seeding takes a minute or two on the emulator; docs/cost.md has the
// figures.
func BenchmarkConsole10000Chats(b *testing.B) {
	client, counter := firestoretest.NewCountingClient(b)
	sessions := sessionstore.New(client, nil)
	a, err := llmagent.New(llmagent.Config{Name: "dj", Model: &modeltest.Strict{T: b}})
	if err != nil {
		b.Fatal(err)
	}
	team, err := toolcallback.NewTeam(sessions, "app", []toolcallback.Member{{Agent: a}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	c := console.New(team, sessions, nil)
	start := time.Now()
	if err := seed(b.Context(), sessions); err != nil {
		b.Fatal(err)
	}
	b.Logf("stored %d chats in %s", benchChats, time.Since(start).Round(time.Second))
	for _, state := range console.States {
		for _, deep := range []bool{false, true} {
			name := fmt.Sprintf("%s/page=1", state)
			if deep {
				name = fmt.Sprintf("%s/page=10", state)
			}
			b.Run(name, func(b *testing.B) {
				q := console.ChatQuery{State: state, Limit: 50}
				if deep {
					for range 9 {
						p, err := c.Chats(b.Context(), q)
						if err != nil {
							b.Fatal(err)
						}
						if p.Next == "" {
							b.Skipf("%s has fewer than 10 pages", state)
						}
						q.Cursor = p.Next
					}
				}
				before := counter.Snapshot()
				rows := 0
				for b.Loop() {
					p, err := c.Chats(b.Context(), q)
					if err != nil {
						b.Fatal(err)
					}
					rows = len(p.Rows)
				}
				ops := counter.Snapshot().Sub(before)
				b.ReportMetric(float64(rows), "rows")
				b.ReportMetric(float64(ops.Lookups())/float64(b.N), "reads/op")
				b.ReportMetric(float64(ops.RoundTrips)/float64(b.N), "roundtrips/op")
			})
		}
	}
	b.Run("timeline", func(b *testing.B) {
		before := counter.Snapshot()
		for b.Loop() {
			if _, err := c.ChatTimeline(b.Context(), "user-0007", "chat-00007"); err != nil {
				b.Fatal(err)
			}
		}
		ops := counter.Snapshot().Sub(before)
		b.ReportMetric(float64(ops.Lookups())/float64(b.N), "reads/op")
		b.ReportMetric(float64(ops.RoundTrips)/float64(b.N), "roundtrips/op")
	})
}

// seed stores the benchmark's chats, 16 at a time.
func seed(ctx context.Context, sessions *sessionstore.Service) error {
	l := ledger.New(sessions, "app", nil)
	now := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, benchChats)
	slots := make(chan struct{}, 16)
	for i := range benchChats {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs <- seedChat(ctx, sessions, l, now, i)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// seedChat stores chat i: its session and chat documents, and what its
// state needs.
func seedChat(ctx context.Context, sessions *sessionstore.Service, l *ledger.Ledger, now time.Time, i int) error {
	user, chat := fmt.Sprintf("user-%04d", i%1000), fmt.Sprintf("chat-%05d", i)
	sid := sessionstore.ChatSessionID(chat, 0)
	if _, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: user, SessionID: sid}); err != nil {
		return err
	}
	if err := sessions.CreateChat(ctx, &sessionstore.Chat{App: "app", UserID: user, ID: chat, Agent: "dj", SessionID: sid,
		Created: now, LastActivity: now.Add(-time.Duration(i) * time.Second)}); err != nil {
		return err
	}
	var err error
	switch {
	case i%5 == 0: // 2,000 waiting, 100 of them an hour overdue
		expires := now.Add(time.Hour)
		if i%100 == 0 {
			expires = now.Add(-time.Hour)
		}
		w, _, rerr := l.Record(&ledger.Call{ID: "call-" + chat, App: "app", Agent: "dj", UserID: user, SessionID: sid, Invocation: "inv",
			ClientID: "tab", Tool: "book_table", Kind: ledger.KindApproval, Step: "step", OriginalID: "call-" + chat,
			Status: ledger.StatusPending, Created: now.Add(-time.Duration(i) * time.Second), Expires: expires})
		if rerr != nil {
			return rerr
		}
		_, err = sessions.Commit(ctx, w)
	case i%50 == 1: // 200 running
		_, err = sessions.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: user, SessionID: sid, Holder: "tab/1", TTL: time.Hour})
	case i%100 == 3: // 100 stuck an hour
		early := platform.WithTimeProvider(ctx, func() time.Time { return now.Add(-time.Hour) })
		_, err = sessions.AcquireLease(early, sessionstore.LeaseRequest{App: "app", User: user, SessionID: sid, Holder: "dead/1", TTL: 10 * time.Second})
	}
	return err
}
