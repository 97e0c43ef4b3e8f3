package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/userinput"
)

func TestMain(m *testing.M) { firestoretest.Main(m) }

// base is the tests' clock.
var base = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

// world is a ledger of app "app" on a fresh project.
type world struct {
	t        *testing.T
	sessions *sessionstore.Service
	ledger   *ledger.Ledger
}

func newWorld(t *testing.T) *world {
	t.Helper()
	sessions := sessionstore.New(firestoretest.NewClient(t), nil)
	return &world{t: t, sessions: sessions, ledger: ledger.New(sessions, "app", &ledger.Options{TokenKey: []byte("0123456789abcdef0123456789abcdef")})}
}

// call is a pending call of agent "dj" in session sid of user "u",
// created at base plus at, expiring ten minutes later.
func call(sid, id string, at time.Duration) *ledger.Call {
	return &ledger.Call{
		ID: id, App: "app", Agent: "dj", UserID: "u", SessionID: sid, Invocation: "inv", ClientID: "tab-1",
		Tool: "play", Args: map[string]any{"track": 2.0}, Kind: ledger.KindBrowser, Step: "step-" + id, OriginalID: id,
		Status: ledger.StatusPending, Created: base.Add(at), Expires: base.Add(at + 10*time.Minute),
	}
}

// record stores calls, as the commit storing their event would.
func (w *world) record(calls ...*ledger.Call) {
	w.t.Helper()
	var writes []sessionstore.Write
	for _, c := range calls {
		wr, listing, err := w.ledger.Record(c)
		if err != nil {
			w.t.Fatal(err)
		}
		writes = append(append(writes, wr), listing...)
	}
	if _, err := w.sessions.Commit(w.t.Context(), writes...); err != nil {
		w.t.Fatalf("commit records: %v", err)
	}
}

// get reads a call of session sid.
func (w *world) get(sid, id string) *ledger.Call {
	w.t.Helper()
	c, err := w.ledger.Get(w.t.Context(), "u", sid, id)
	if err != nil {
		w.t.Fatalf("Get(%q) error = %v", id, err)
	}
	return c
}

func ids(calls []*ledger.Call) []string {
	out := []string{}
	for _, c := range calls {
		out = append(out, c.ID)
	}
	return out
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := call("s", "c1", 0)
	c.Kind, c.Input = ledger.KindInput, &userinput.Request{Server: "notes", Message: "which?", Round: 1}
	c.SetInputState("opaque")
	w.record(c)
	got := w.get("s", "c1")
	if diff := cmp.Diff(c, got, cmp.AllowUnexported(ledger.Call{}), cmpopts.EquateEmpty(), cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".version"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("Get() after Record (-want +got):\n%s", diff)
	}
	if got.InputState() != "opaque" {
		t.Errorf("InputState() = %q, want %q", got.InputState(), "opaque")
	}
	if _, err := w.ledger.Get(t.Context(), "u", "s", "nope"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get(unknown) error = %v, want ErrNotFound", err)
	}
	// A record exists once: a second Record of it fails the commit.
	wr, _, err := w.ledger.Record(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.sessions.Commit(t.Context(), wr); !errors.Is(err, sessionstore.ErrAlreadyExists) {
		t.Errorf("Record again error = %v, want ErrAlreadyExists", err)
	}
}

func TestQueries(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	pending, answered, resumed, cancelled := call("s", "a-pending", 2*time.Second), call("s", "b-answered", time.Second), call("s", "c-resumed", 0), call("s", "d-cancelled", 3*time.Second)
	question := call("s", "e-question", 4*time.Second)
	question.InCall, question.Resumed, question.Kind = true, true, ledger.KindInput
	other := call("other", "f-elsewhere", 0)
	w.record(pending, answered, resumed, cancelled, question, other)
	if _, err := w.ledger.Answer(ctx, w.get("s", "b-answered"), ledger.Answer{Output: map[string]any{"ok": true}}, "tab-1", base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := w.ledger.MarkResumed(ctx, []*ledger.Call{w.get("s", "c-resumed")}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ledger.Cancel(ctx, w.get("s", "d-cancelled"), base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		run  func() ([]*ledger.Call, error)
		want []string
	}{
		{"Unresumed", func() ([]*ledger.Call, error) { return w.ledger.Unresumed(ctx, "u", "s") }, []string{"b-answered", "a-pending", "d-cancelled"}},
		{"Pending", func() ([]*ledger.Call, error) { return w.ledger.Pending(ctx, "u", "s") }, []string{"c-resumed", "a-pending", "e-question"}},
		{"Open without questions", func() ([]*ledger.Call, error) { return w.ledger.Open(ctx, "u", "s", false) }, []string{"b-answered", "a-pending", "d-cancelled"}},
		{"Open with questions", func() ([]*ledger.Call, error) { return w.ledger.Open(ctx, "u", "s", true) }, []string{"b-answered", "a-pending", "d-cancelled", "e-question"}},
		{"Due before any expiry", func() ([]*ledger.Call, error) { return w.ledger.Due(ctx, "dj", base.Add(time.Minute), 10) }, []string{}},
		// Past every expiry and the answer's grace (the batch is taken
		// soonest first, then returned in creation order); the resumed
		// call and the question are never due.
		{"Due later", func() ([]*ledger.Call, error) { return w.ledger.Due(ctx, "dj", base.Add(time.Hour), 10) }, []string{"f-elsewhere", "b-answered", "a-pending", "d-cancelled"}},
		{"Due limited", func() ([]*ledger.Call, error) { return w.ledger.Due(ctx, "dj", base.Add(time.Hour), 1) }, []string{"b-answered"}},
		{"Due of another agent", func() ([]*ledger.Call, error) { return w.ledger.Due(ctx, "concierge", base.Add(time.Hour), 10) }, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.run()
			if err != nil {
				t.Fatalf("%s error = %v", tt.name, err)
			}
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}
