package firestoretest_test

import (
	"context"
	"errors"
	"testing"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/internal/firestoretest"
)

func TestMain(m *testing.M) { firestoretest.Main(m) }

type doc struct {
	N int `firestore:"n"`
}

func TestCounter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup []string // documents to create first, each with n = 1
		op    func(ctx context.Context, c *firestore.Client) error
		want  firestoretest.Ops
	}{
		{
			name: "create",
			op: func(ctx context.Context, c *firestore.Client) error {
				_, err := c.Doc("c/a").Create(ctx, doc{N: 1})
				return err
			},
			want: firestoretest.Ops{RoundTrips: 1, Writes: 1},
		},
		{
			// Nothing would be counted if firestore.NewClient used a
			// connection of its own instead of the counting one.
			name: "set then get",
			op: func(ctx context.Context, c *firestore.Client) error {
				if _, err := c.Doc("c/a").Set(ctx, doc{N: 1}); err != nil {
					return err
				}
				_, err := c.Doc("c/a").Get(ctx)
				return err
			},
			want: firestoretest.Ops{RoundTrips: 2, Reads: 1, Writes: 1},
		},
		{
			name:  "get",
			setup: []string{"c/a"},
			op: func(ctx context.Context, c *firestore.Client) error {
				_, err := c.Doc("c/a").Get(ctx)
				return err
			},
			want: firestoretest.Ops{RoundTrips: 1, Reads: 1},
		},
		{
			name: "get missing",
			op: func(ctx context.Context, c *firestore.Client) error {
				if _, err := c.Doc("c/a").Get(ctx); status.Code(err) != codes.NotFound {
					return err
				}
				return nil
			},
			want: firestoretest.Ops{RoundTrips: 1, Missing: 1},
		},
		{
			name:  "get all with one missing",
			setup: []string{"c/a", "c/b"},
			op: func(ctx context.Context, c *firestore.Client) error {
				_, err := c.GetAll(ctx, []*firestore.DocumentRef{c.Doc("c/a"), c.Doc("c/b"), c.Doc("c/x")})
				return err
			},
			want: firestoretest.Ops{RoundTrips: 1, Reads: 2, Missing: 1},
		},
		{
			name: "get all missing",
			op: func(ctx context.Context, c *firestore.Client) error {
				_, err := c.GetAll(ctx, []*firestore.DocumentRef{c.Doc("c/x"), c.Doc("c/y")})
				return err
			},
			want: firestoretest.Ops{RoundTrips: 1, Missing: 2},
		},
		{
			name: "transaction get missing",
			op: func(ctx context.Context, c *firestore.Client) error {
				return c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
					if _, err := tx.Get(c.Doc("c/x")); status.Code(err) != codes.NotFound {
						return err
					}
					return nil
				}, firestore.ReadOnly)
			},
			want: firestoretest.Ops{RoundTrips: 3, Missing: 1},
		},
		{
			name: "bulk writer of 3",
			op: func(ctx context.Context, c *firestore.Client) error {
				bw := c.BulkWriter(ctx)
				var jobs []*firestore.BulkWriterJob
				for _, p := range []string{"c/a", "c/b", "c/c"} {
					j, err := bw.Create(c.Doc(p), doc{N: 1})
					if err != nil {
						return err
					}
					jobs = append(jobs, j)
				}
				bw.End()
				for _, j := range jobs {
					if _, err := j.Results(); err != nil {
						return err
					}
				}
				return nil
			},
			want: firestoretest.Ops{RoundTrips: 1, Writes: 3},
		},
		{
			name:  "query of 2",
			setup: []string{"c/a", "c/b", "other/c"},
			op: func(ctx context.Context, c *firestore.Client) error {
				docs, err := c.Collection("c").Where("n", "==", 1).Documents(ctx).GetAll()
				if err == nil && len(docs) != 2 {
					return errors.New("query did not return 2 documents")
				}
				return err
			},
			want: firestoretest.Ops{RoundTrips: 1, Reads: 2},
		},
		{
			name:  "empty query",
			setup: []string{"other/a"},
			op: func(ctx context.Context, c *firestore.Client) error {
				_, err := c.Collection("c").Documents(ctx).GetAll()
				return err
			},
			want: firestoretest.Ops{RoundTrips: 1, Reads: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			client, counter := firestoretest.NewCountingClient(t)
			for _, p := range tt.setup {
				if _, err := client.Doc(p).Create(ctx, doc{N: 1}); err != nil {
					t.Fatalf("Create(%q) error = %v", p, err)
				}
			}
			before := counter.Snapshot()
			if err := tt.op(ctx, client); err != nil {
				t.Fatalf("op error = %v", err)
			}
			got := counter.Snapshot().Sub(before)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ops mismatch (-want +got):\n%s", diff)
			}
			if want := tt.want.Reads + tt.want.Missing; got.Lookups() != want {
				t.Errorf("Lookups() = %d, want %d", got.Lookups(), want)
			}
		})
	}
}

func TestCounterReset(t *testing.T) {
	t.Parallel()
	client, counter := firestoretest.NewCountingClient(t)
	if _, err := client.Doc("c/a").Set(t.Context(), doc{N: 1}); err != nil {
		t.Fatalf("Set error = %v", err)
	}
	counter.Reset()
	if got := counter.Snapshot(); got != (firestoretest.Ops{}) {
		t.Errorf("Snapshot() after Reset = %+v, want zero", got)
	}
}

func TestFailNext(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client, counter := firestoretest.NewCountingClient(t)
	crash := errors.New("crash")
	counter.FailNext("/Commit", crash)

	ref := client.Doc("c/a")
	if _, err := ref.Set(ctx, doc{N: 1}); !errors.Is(err, crash) {
		t.Fatalf("first Set error = %v, want %v", err, crash)
	}
	if got := counter.RoundTrips(); got != 0 {
		t.Errorf("RoundTrips() after failed Set = %d, want 0", got)
	}
	if _, err := ref.Get(ctx); status.Code(err) != codes.NotFound {
		t.Fatalf("Get after failed Set error = %v, want NotFound", err)
	}
	if _, err := ref.Set(ctx, doc{N: 2}); err != nil {
		t.Fatalf("second Set error = %v, want nil", err)
	}
	snap, err := ref.Get(ctx)
	if err != nil {
		t.Fatalf("Get after second Set error = %v", err)
	}
	if got := snap.Data()["n"]; got != int64(2) {
		t.Errorf("n = %v, want 2", got)
	}
}

func TestSetHook(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client, counter := firestoretest.NewCountingClient(t)
	crash := errors.New("crash")
	counter.SetHook(func(method string, req any) error {
		if r, ok := req.(*firestorepb.CommitRequest); ok && len(r.Writes) > 1 {
			return crash
		}
		return nil
	})

	err := client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if err := tx.Set(client.Doc("c/a"), doc{N: 1}); err != nil {
			return err
		}
		return tx.Set(client.Doc("c/b"), doc{N: 1})
	})
	if !errors.Is(err, crash) {
		t.Fatalf("RunTransaction with 2 writes error = %v, want %v", err, crash)
	}
	if _, err := client.Doc("c/c").Set(ctx, doc{N: 1}); err != nil {
		t.Fatalf("Set of one document error = %v, want nil", err)
	}

	counter.SetHook(nil)
	err = client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if err := tx.Set(client.Doc("c/a"), doc{N: 1}); err != nil {
			return err
		}
		return tx.Set(client.Doc("c/b"), doc{N: 1})
	})
	if err != nil {
		t.Fatalf("RunTransaction after SetHook(nil) error = %v", err)
	}
}

func TestNewClientIsolation(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a := firestoretest.NewClient(t)
	b := firestoretest.NewClient(t)
	if pa, pb := a.Doc("c/d").Path, b.Doc("c/d").Path; pa == pb {
		t.Errorf("two clients have the same document path %q, want different projects", pa)
	}
	if _, err := a.Doc("c/d").Create(ctx, doc{N: 1}); err != nil {
		t.Fatalf("Create error = %v", err)
	}
	if _, err := b.Doc("c/d").Get(ctx); status.Code(err) != codes.NotFound {
		t.Errorf("other client's Get error = %v, want NotFound", err)
	}
	docs, err := b.Collection("c").Documents(ctx).GetAll()
	if err != nil {
		t.Fatalf("other client's query error = %v", err)
	}
	if len(docs) != 0 {
		t.Errorf("other client's query returned %d documents, want 0", len(docs))
	}
}

// TestLoseNextReply: the call is made, and its caller gets the error.
func TestLoseNextReply(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client, counter := firestoretest.NewCountingClient(t)
	lost := status.Error(codes.Canceled, "call already cancelled")
	counter.LoseNextReply("/Commit", lost)

	ref := client.Doc("c/a")
	if _, err := ref.Set(ctx, doc{N: 1}); status.Code(err) != codes.Canceled {
		t.Fatalf("Set error = %v, want the lost reply's %v", err, lost)
	}
	if got := counter.Snapshot(); got.RoundTrips != 1 || got.Writes != 1 {
		t.Errorf("counted %+v, want the Set's round trip and write", got)
	}
	snap, err := ref.Get(ctx)
	if err != nil {
		t.Fatalf("Get after the Set whose reply was lost: %v, want the document", err)
	}
	if got := snap.Data()["n"]; got != int64(1) {
		t.Errorf("n = %v, want 1", got)
	}
	if _, err := ref.Set(ctx, doc{N: 2}); err != nil {
		t.Fatalf("second Set error = %v, want nil: one reply is lost", err)
	}
}
