package ledger_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
)

// TestWaiting: pending records of the kinds asked, across sessions and
// users, oldest first, a page at a time; filtered by user, agent and age;
// settled records and other kinds left out.
func TestWaiting(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	a, b, c, d := call("s1", "a", 0), call("s2", "b", time.Minute), call("s1", "c", 2*time.Minute), call("s3", "d", 3*time.Minute)
	b.UserID = "v"
	d.Kind = ledger.KindApproval
	other := call("s4", "other-agent", 4*time.Minute)
	other.Agent = "host"
	w.record(a, b, c, d, other)
	got, err := w.ledger.Get(ctx, "u", "s1", "c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ledger.Answer(ctx, got, ledger.Answer{Output: map[string]any{"ok": true}}, "tab-1", base.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	all := ledger.Filter{Agents: []string{"dj", "host"}, Limit: 2}
	tests := []struct {
		name  string
		kinds []ledger.Kind
		f     ledger.Filter
		want  [][]string // pages
	}{
		{name: "every kind, pages of two", kinds: ledger.Kinds, f: all, want: [][]string{{"a", "b"}, {"d", "other-agent"}, {}}},
		{name: "one kind", kinds: []ledger.Kind{ledger.KindApproval}, f: all, want: [][]string{{"d"}}},
		{name: "one user", kinds: ledger.Kinds, f: ledger.Filter{Agents: all.Agents, User: "v", Limit: 10}, want: [][]string{{"b"}}},
		{name: "one agent", kinds: ledger.Kinds, f: ledger.Filter{Agents: []string{"host"}, Limit: 10}, want: [][]string{{"other-agent"}}},
		{name: "waiting since before", kinds: ledger.Kinds, f: ledger.Filter{Agents: all.Agents, Before: base.Add(time.Minute), Limit: 10}, want: [][]string{{"a", "b"}}},
		{name: "no kinds", kinds: nil, f: all, want: [][]string{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			var pages [][]string
			for i := 0; i < 5; i++ {
				p, err := w.ledger.Waiting(ctx, tt.kinds, f)
				if err != nil {
					t.Fatalf("Waiting: %v", err)
				}
				pages = append(pages, ids(p.Calls))
				if p.Next == "" {
					break
				}
				f.Cursor = p.Next
			}
			if diff := cmp.Diff(tt.want, pages); diff != "" {
				t.Errorf("pages (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOverdue: records due for the sweeper before a time, across agents.
func TestOverdue(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	old, fresh := call("s1", "old", 0), call("s2", "fresh", time.Hour)
	w.record(old, fresh)
	p, err := w.ledger.Overdue(ctx, ledger.Filter{Agents: []string{"dj"}, Before: base.Add(20 * time.Minute), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"old"}, ids(p.Calls)); diff != "" {
		t.Errorf("Overdue (-want +got):\n%s", diff)
	}
	p, err = w.ledger.Overdue(ctx, ledger.Filter{Agents: []string{"dj"}, User: "someone-else", Before: base.Add(2 * time.Hour), Limit: 10})
	if err != nil || len(p.Calls) != 0 {
		t.Errorf("Overdue of another user = %v, %v; want none", p, err)
	}
}

// TestBrowseBadInput: a forged cursor, a bad limit and too many agents
// are refused before any query.
func TestBrowseBadInput(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	for _, f := range []ledger.Filter{
		{Agents: []string{"dj"}, Limit: 10, Cursor: "not base64!"},
		{Agents: []string{"dj"}, Limit: 10, Cursor: "eyJ0IjoiMjAyNi0xMS0yOFQxMDowMDowMFoiLCJwIjoib3RoZXIvYXBwL3gifQ"}, // {"t":...,"p":"other/app/x"}
		{Agents: []string{"dj"}, Limit: 0},
		{Agents: []string{"dj"}, Limit: 1000},
		{Agents: nil, Limit: 10},
	} {
		if _, err := w.ledger.Waiting(ctx, ledger.Kinds, f); err == nil {
			t.Errorf("Waiting(%+v) = nil error, want a refusal", f)
		}
	}
	if _, err := w.ledger.Waiting(ctx, ledger.Kinds, ledger.Filter{Agents: []string{"dj"}, Limit: 10, Cursor: "eyJ0IjoiMjAyNi0xMS0yOFQxMDowMDowMFoiLCJwIjoib3RoZXIvYXBwL3gifQ"}); !errors.Is(err, sessionstore.ErrBadCursor) {
		t.Errorf("Waiting with another app's cursor = %v, want ErrBadCursor", err)
	}
}

// TestExpireBecause: an operator's expiry records its reason, first
// writer wins, and the record is due for the sweeper at once.
func TestExpireBecause(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	w.record(call("s1", "a", 0))
	c, err := w.ledger.Get(ctx, "u", "s1", "a")
	if err != nil {
		t.Fatal(err)
	}
	closed, err := w.ledger.ExpireBecause(ctx, c, "the printer is out of paper", base.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if closed.Status != ledger.StatusExpired || closed.Reason != "the printer is out of paper" {
		t.Errorf("ExpireBecause = %s %q", closed.Status, closed.Reason)
	}
	if _, err := w.ledger.ExpireBecause(ctx, c, "again", base.Add(time.Minute)); !errors.Is(err, ledger.ErrChanged) {
		t.Errorf("second ExpireBecause on the record as read = %v, want ErrChanged", err)
	}
	stored, err := w.ledger.Get(ctx, "u", "s1", "a")
	if err != nil || stored.Reason != "the printer is out of paper" || stored.Status != ledger.StatusExpired {
		t.Fatalf("stored = %+v, %v", stored, err)
	}
	due, err := w.ledger.Due(ctx, "dj", base.Add(time.Minute), 10)
	if err != nil || len(due) != 1 {
		t.Errorf("Due after the expiry = %d records, %v; want the record, for the sweeper to deliver", len(due), err)
	}
	all, err := w.ledger.OfSession(ctx, "u", "s1")
	if err != nil || len(all) != 1 {
		t.Errorf("OfSession = %d, %v", len(all), err)
	}
}

// TestKindsListsEveryKind holds Kinds to the Kind constants this package
// declares, so that a new kind shows in the console's filters.
func TestKindsListsEveryKind(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "record.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]ledger.Kind{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Kind" {
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s is not a string literal", name.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				declared[name.Name] = ledger.Kind(v)
			}
		}
		return true
	})
	if len(declared) == 0 {
		t.Fatal("found no Kind constants in record.go")
	}
	for name, k := range declared {
		if !slices.Contains(ledger.Kinds, k) {
			t.Errorf("%s (%q) is declared but not in ledger.Kinds", name, k)
		}
	}
	if len(ledger.Kinds) != len(declared) {
		t.Errorf("ledger.Kinds has %d kinds, record.go declares %d", len(ledger.Kinds), len(declared))
	}
}
