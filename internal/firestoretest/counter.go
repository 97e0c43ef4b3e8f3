package firestoretest

import (
	"context"
	"path"
	"strings"
	"sync"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Ops is a count of Firestore operations.
type Ops struct {
	RoundTrips int64
	// Reads counts the documents found, and the one read an empty query
	// costs.
	Reads int64
	// Missing counts lookups of documents that do not exist. Firestore
	// bills each as a read: it is a lookup like any other.
	Missing int64
	Writes  int64
	// Listens counts the listen streams opened (snapshot listeners), each
	// also a round trip: a cost that depends on how long the listener's
	// owner lives rather than on what it does.
	Listens int64
}

// Lookups returns the documents looked up, found or not: what Firestore
// bills as reads.
func (o Ops) Lookups() int64 { return o.Reads + o.Missing }

// Add returns o + p.
func (o Ops) Add(p Ops) Ops {
	return Ops{
		RoundTrips: o.RoundTrips + p.RoundTrips,
		Reads:      o.Reads + p.Reads,
		Missing:    o.Missing + p.Missing,
		Writes:     o.Writes + p.Writes,
		Listens:    o.Listens + p.Listens,
	}
}

// Sub returns o - p: the operations between two snapshots.
func (o Ops) Sub(p Ops) Ops {
	return Ops{
		RoundTrips: o.RoundTrips - p.RoundTrips,
		Reads:      o.Reads - p.Reads,
		Missing:    o.Missing - p.Missing,
		Writes:     o.Writes - p.Writes,
		Listens:    o.Listens - p.Listens,
	}
}

// A Counter counts the operations of a client from [NewCountingClient] and
// injects faults into its calls. Its methods may be called concurrently.
type Counter struct {
	mu     sync.Mutex
	ops    Ops
	faults []fault
	hook   func(method string, req any) error
}

type fault struct {
	method string
	err    error
	sent   bool // the call is made, and err replaces its reply
}

// RoundTrips returns the number of calls sent: unary calls and streams opened.
func (c *Counter) RoundTrips() int64 { return c.Snapshot().RoundTrips }

// Reads returns the number of documents read that exist (and empty
// queries).
func (c *Counter) Reads() int64 { return c.Snapshot().Reads }

// Missing returns the number of lookups of documents that do not exist.
func (c *Counter) Missing() int64 { return c.Snapshot().Missing }

// Writes returns the number of document writes committed.
func (c *Counter) Writes() int64 { return c.Snapshot().Writes }

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Ops {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops
}

// Reset sets the counts to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops = Ops{}
}

// FailNext makes the next call whose full method name ends with method (such
// as "/Commit") return err without being sent.
func (c *Counter) FailNext(method string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = append(c.faults, fault{method: method, err: err})
}

// LoseNextReply makes the next call whose full method name ends with
// method (a unary one, such as "/Commit") be sent, and made, and return
// err in place of its reply: a write whose outcome the caller cannot know
// (the Firestore emulator answers so to a commit it made while a listener
// of the written document was closing).
func (c *Counter) LoseNextReply(method string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = append(c.faults, fault{method: method, err: err, sent: true})
}

// SetHook sets fn to be called before every call, with the full method name
// and the request (nil for streams, whose requests are sent later). If fn
// returns an error, the call returns it without being sent. SetHook(nil)
// removes the hook.
func (c *Counter) SetHook(fn func(method string, req any) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hook = fn
}

func (c *Counter) add(o Ops) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops = c.ops.Add(o)
}

// before returns the error injected into a call, or counts it as sent;
// lost is the error that replaces the reply of a call sent (LoseNextReply).
func (c *Counter) before(method string, req any) (lost, err error) {
	c.mu.Lock()
	for i, f := range c.faults {
		if strings.HasSuffix(method, f.method) {
			c.faults = append(c.faults[:i], c.faults[i+1:]...)
			if f.sent {
				lost = f.err
				break
			}
			c.mu.Unlock()
			return nil, f.err
		}
	}
	hook := c.hook
	c.mu.Unlock()
	if hook != nil {
		if err := hook(method, req); err != nil {
			return nil, err
		}
	}
	c.add(Ops{RoundTrips: 1})
	return lost, nil
}

func (c *Counter) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) (err error) {
	lost, err := c.before(method, req)
	if err != nil {
		return err
	}
	if lost != nil {
		defer func() {
			if err == nil {
				err = lost
			}
		}()
	}
	if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
		if _, ok := req.(*firestorepb.GetDocumentRequest); ok && status.Code(err) == codes.NotFound {
			c.add(Ops{Missing: 1})
		}
		return err
	}
	var o Ops
	switch r := req.(type) {
	case *firestorepb.CommitRequest:
		o.Writes = int64(len(r.Writes))
	case *firestorepb.BatchWriteRequest:
		o.Writes = int64(len(r.Writes))
	}
	switch r := reply.(type) {
	case *firestorepb.Document:
		o.Reads = 1
	case *firestorepb.ListDocumentsResponse:
		o.Reads = max(int64(len(r.Documents)), 1)
	}
	c.add(o)
	return nil
}

func (c *Counter) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if _, err := c.before(method, nil); err != nil { // LoseNextReply is for unary calls
		return nil, err
	}
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	switch path.Base(method) {
	case "Listen":
		c.add(Ops{Listens: 1})
	case "BatchGetDocuments":
		return &batchGetStream{ClientStream: s, c: c}, nil
	case "RunQuery", "RunAggregationQuery":
		// Firestore bills at least one read per query; the first
		// document returned is that read.
		c.add(Ops{Reads: 1})
		return &queryStream{ClientStream: s, c: c}, nil
	}
	return s, nil
}

// batchGetStream counts each document a batch get looks up: a read when it
// is found, a missing lookup when it is not.
type batchGetStream struct {
	grpc.ClientStream
	c *Counter
}

func (s *batchGetStream) RecvMsg(m any) error {
	if err := s.ClientStream.RecvMsg(m); err != nil {
		return err
	}
	if r, ok := m.(*firestorepb.BatchGetDocumentsResponse); ok {
		switch {
		case r.GetFound() != nil:
			s.c.add(Ops{Reads: 1})
		case r.GetMissing() != "":
			s.c.add(Ops{Missing: 1})
		}
	}
	return nil
}

// queryStream counts the documents a query returns after the first.
type queryStream struct {
	grpc.ClientStream
	c    *Counter
	docs int
}

func (s *queryStream) RecvMsg(m any) error {
	if err := s.ClientStream.RecvMsg(m); err != nil {
		return err
	}
	switch r := m.(type) {
	case *firestorepb.RunQueryResponse:
		if r.Document == nil {
			return nil
		}
	default:
		return nil
	}
	if s.docs++; s.docs > 1 {
		s.c.add(Ops{Reads: 1})
	}
	return nil
}
