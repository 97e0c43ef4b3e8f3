package toolcallback_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/transcript"

	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// The rewind's paths join TestCrashAtEveryWrite's: whatever write the
// process dies after, the chat takes its next turn, the strict model
// accepts it, and the messages the rewind kept are still the chat's.
func init() {
	crashPaths = append(crashPaths,
		crashPath{
			name: "regenerate-a-step-with-a-browser-call-and-an-approval",
			setupScript: []reply{textReply("hello"), callReply(
				call("c1", "change_bgm", map[string]any{"track": 3}),
				call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"}))},
			setup: func(w *crashWorld, team *toolcallback.Team) error {
				if err := w.idTurn(team, "m1", "hi", true); err != nil {
					return err
				}
				w.gone = []string{"change_bgm", "book_table"}
				return w.idTurn(team, "m2", "play and book", false)
			},
			script: []reply{textReply("regenerated")},
			run: func(w *crashWorld, team *toolcallback.Team) []*session.Event {
				return w.rewind(team, toolcallback.RewindRequest{Message: "m2"})
			},
			took: tookRewind,
		},
		crashPath{
			name:        "edit-the-first-message",
			setupScript: []reply{textReply("one"), textReply("two")},
			setup: func(w *crashWorld, team *toolcallback.Team) error {
				if err := w.idTurn(team, "m1", "first", false); err != nil {
					return err
				}
				w.gone = []string{"second"}
				return w.idTurn(team, "m2", "second", false)
			},
			script: []reply{textReply("edited")},
			run: func(w *crashWorld, team *toolcallback.Team) []*session.Event {
				return w.rewind(team, toolcallback.RewindRequest{Message: "m1", Content: genai.NewContentFromText("first, edited", genai.RoleUser)})
			},
			took: tookRewind,
		},
	)
}

// idTurn runs a turn with the client's message id id; keep says whether
// the chat must still hold it after the doomed part.
func (w *crashWorld) idTurn(team *toolcallback.Team, id, text string, keep bool) error {
	_, _, err := runTurn(w.t.Context(), team, crashTurn("", id, text))
	if err == nil && keep {
		w.kept = append(w.kept, text)
	}
	return err
}

// rewind runs a rewind that may die; it returns what the client was
// streamed.
func (w *crashWorld) rewind(team *toolcallback.Team, req toolcallback.RewindRequest) []*session.Event {
	req.UserID, req.ChatID, req.ClientID = "user-1", crashChat, crashClient
	events, _ := runRewind(w.t.Context(), team, req)
	return events
}

// tookRewind: one commit stores the rewind mark in the session and
// closes the open ledger records, if any; the turn's message is stored
// after it.
func tookRewind(w *crashWorld, commits []*firestorepb.CommitRequest) error {
	mark := slices.IndexFunc(commits, func(c *firestorepb.CommitRequest) bool {
		return slices.ContainsFunc(c.Writes, func(wr *firestorepb.Write) bool {
			return written(wr) == w.sessionDoc(0) && strings.Contains(wr.String(), "baton_rewind")
		})
	})
	if mark < 0 {
		return errors.New("no commit stores a rewind mark")
	}
	for i, c := range commits {
		for _, wr := range c.Writes {
			if strings.Contains(written(wr), "/calls/") && i != mark {
				return errors.New("a ledger record is closed outside the mark's commit")
			}
		}
	}
	if !slices.ContainsFunc(commits[mark+1:], func(c *firestorepb.CommitRequest) bool { return writesDoc(c, w.sessionDoc(0)) }) {
		return errors.New("nothing is stored after the mark")
	}
	return nil
}

// checkGone: once the chat holds a rewind mark, the recovering model's
// last request holds none of the texts the rewind took back.
func (w *crashWorld) checkGone(ctx context.Context, sessions *sessionstore.Service, m *modeltest.Strict) {
	chat, err := sessions.GetChat(ctx, "app", "user-1", crashChat)
	if err != nil || len(w.gone) == 0 {
		return
	}
	got, err := sessions.Get(ctx, &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: chat.SessionID})
	if err != nil {
		w.t.Fatal(err)
	}
	marked := false
	for ev := range got.Session.Events().All() {
		_, isMark := sessionstore.RewindMarkOf(ev)
		marked = marked || isMark
	}
	if !marked {
		return
	}
	req := dumpContents(m.LastRequest().Contents)
	for _, g := range w.gone {
		if strings.Contains(req, g) {
			w.t.Errorf("after the rewind the model was given %q, which it took back:\n%s", g, req)
		}
	}
}

// TestRewindRetryCompletes: a process dies right after the rewind's mark
// is stored; the same request again, on another instance once the lease
// has lapsed, runs the turn without a second mark, and once more is the
// request served.
func TestRewindRetryCompletes(t *testing.T) {
	t.Parallel()
	w := newCrashWorld(t)
	w.model = &modeltest.Strict{T: t, Script: []reply{textReply("one"), textReply("two")}}
	team := w.team(w.client, w.model)
	if err := w.idTurn(team, "m1", "first", false); err != nil {
		t.Fatal(err)
	}
	if err := w.idTurn(team, "m2", "second", false); err != nil {
		t.Fatal(err)
	}
	var dead atomic.Bool
	commits := 0
	w.counter.SetHook(func(method string, _ any) error {
		if dead.Load() {
			return status.Error(codes.Canceled, "process killed")
		}
		if strings.HasSuffix(method, "/Commit") {
			if commits++; commits > 1 { // the mark, which takes the lease
				dead.Store(true)
				return status.Error(codes.Canceled, "process killed")
			}
		}
		return nil
	})
	edit := toolcallback.RewindRequest{Message: "m1", Content: genai.NewContentFromText("first, edited", genai.RoleUser)}
	if events := w.rewind(team, edit); len(events) > 1 {
		t.Fatalf("the doomed rewind streamed %d events", len(events))
	}
	client, _ := firestoretest.Reopen(t, w.client)
	m := &modeltest.Strict{T: t, Script: []reply{textReply("edited answer")}}
	next := w.team(client, m)
	ctx := platform.WithTimeProvider(t.Context(), func() time.Time { return time.Now().Add(crashLeaseTTL + time.Second) })
	edit.UserID, edit.ChatID, edit.ClientID = "user-1", crashChat, crashClient
	events, err := runRewind(ctx, next, edit)
	if err != nil || finalText(events) != "edited answer" {
		t.Fatalf("retried edit = %q, %v; want the edited answer", finalText(events), err)
	}
	sessions := sessionstore.New(client, nil)
	got, err := sessions.Get(ctx, &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: crashChat + "~0"})
	if err != nil {
		t.Fatal(err)
	}
	marks, texts := 0, []string{}
	for ev := range got.Session.Events().All() {
		if _, ok := sessionstore.RewindMarkOf(ev); ok {
			marks++
		} else if transcript.StartsTurn(ev) {
			texts = append(texts, ev.Content.Parts[0].Text)
		}
	}
	if marks != 1 || strings.Join(texts, "|") != "first, edited" {
		t.Errorf("after the retry: %d marks, user messages %q; want 1 mark and the edited message alone", marks, texts)
	}
	if _, err := next.Rewind(ctx, edit); !errors.Is(err, toolcallback.ErrMessageTaken) {
		t.Errorf("Rewind(same edit) once served error = %v, want ErrMessageTaken", err)
	}
}
