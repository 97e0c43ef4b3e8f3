package firestoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// NewClient returns a client of the emulator on a project of its own, closed
// when tb ends.
func NewClient(tb testing.TB) *firestore.Client {
	tb.Helper()
	requireEmulator(tb)
	return newClient(tb, "test-"+randomHex())
}

// NewCountingClient is like [NewClient], and also returns the [Counter] of the
// client's calls.
func NewCountingClient(tb testing.TB) (*firestore.Client, *Counter) {
	tb.Helper()
	return newCountingClient(tb, "test-"+randomHex())
}

// Reopen returns a new counting client of the same project as client: a
// second process on the same database, with a connection and a counter of
// its own (faults injected into one do not touch the other).
func Reopen(tb testing.TB, client *firestore.Client) (*firestore.Client, *Counter) {
	tb.Helper()
	// A document path reads "projects/{project}/databases/...".
	path := strings.Split(client.Doc("x/y").Path, "/")
	return newCountingClient(tb, path[1])
}

func newCountingClient(tb testing.TB, project string) (*firestore.Client, *Counter) {
	tb.Helper()
	addr := requireEmulator(tb)
	c := &Counter{}
	// With FIRESTORE_EMULATOR_HOST set, firestore.NewClient dials its own
	// connection and ignores dial options; a connection given with
	// option.WithGRPCConn replaces it. The replaced connection is never
	// closed: each counting client leaks a few idle goroutines.
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(ownerCredentials{}),
		grpc.WithChainUnaryInterceptor(c.unary),
		grpc.WithChainStreamInterceptor(c.stream),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(math.MaxInt32),
			grpc.MaxCallSendMsgSize(math.MaxInt32),
		),
	)
	if err != nil {
		tb.Fatalf("dialing emulator %s: %v", addr, err)
	}
	// Closing the client closes conn too; this covers a failed NewClient.
	tb.Cleanup(func() { conn.Close() })
	return newClient(tb, project, option.WithGRPCConn(conn)), c
}

func newClient(tb testing.TB, project string, opts ...option.ClientOption) *firestore.Client {
	tb.Helper()
	client, err := firestore.NewClient(context.Background(), project, opts...)
	if err != nil {
		tb.Fatalf("firestore.NewClient(%q): %v", project, err)
	}
	tb.Cleanup(func() {
		if err := client.Close(); err != nil {
			tb.Errorf("closing firestore client of %q: %v", project, err)
		}
	})
	return client
}

func randomHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ownerCredentials authenticate as the emulator's admin, as the firestore
// package does for its own emulator connection.
type ownerCredentials struct{}

func (ownerCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}

func (ownerCredentials) RequireTransportSecurity() bool { return false }
