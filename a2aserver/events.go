package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/eventqueue"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"github.com/a2aproject/a2a-go/v2/a2asrv/workqueue"
	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/sessionstore"
)

// eventRetention is how long a stored event is kept for subscribers: events
// only carry a task's progress to live streams; the task document holds the
// state.
const eventRetention = 24 * time.Hour

// eventQueues carries a task's processed events from the instance running
// its execution to subscribers on any instance, through Firestore (a2a-go's
// eventqueue.Manager). The writer stores each event beside its task, named
// by the task version it produced; a reader listens, with a Firestore
// snapshot listener, for the events of versions after the one its task had
// when the reader was made, so it needs no clock.
type eventQueues struct {
	store *TaskStore

	// local holds this instance's open readers by task, so that an
	// execution that fails before it stores anything can tell the request
	// waiting for it, and only that one (see localQueue): a duplicate
	// answer that loses the race must not end the winner's request.
	mu    sync.Mutex
	local map[a2a.TaskID]map[*eventReader]bool
}

var _ eventqueue.Manager = (*eventQueues)(nil)

// eventDoc is a stored event, at {task}/a2aEvents/{version:020d}.
type eventDoc struct {
	Key     string    `firestore:"key"`     // the task's key (TaskStore.key)
	Version int64     `firestore:"version"` // the task version the event produced
	Message []byte    `firestore:"message"` // JSON of eventqueue.Message
	GCAt    time.Time `firestore:"gcAt"`    // TTL
}

func newEventQueues(store *TaskStore) *eventQueues {
	return &eventQueues{store: store, local: map[a2a.TaskID]map[*eventReader]bool{}}
}

// CreateWriter returns the writer of a task's events.
func (q *eventQueues) CreateWriter(ctx context.Context, id a2a.TaskID) (eventqueue.Writer, error) {
	user, err := userOf(ctx)
	if err != nil {
		return nil, err
	}
	exec, _ := ctx.Value(executionKey{}).(*execution)
	return &eventWriter{q: q, user: user, task: id, exec: exec}, nil
}

// CreateReader returns a reader of the task's events from now on.
//
// For a message that starts a task, a2a-go opens a reader of a random
// task id, hands the work to localQueue.Write, which runs it under the
// id the message derives (requestID.newTask), then opens a reader of
// that one. An execution that fails at once would tell no reader in
// between, so the reader of the derived id is opened here in place of the
// random one's, before the work starts, and handed over when a2a-go asks
// for it.
func (q *eventQueues) CreateReader(ctx context.Context, id a2a.TaskID) (eventqueue.Reader, error) {
	user, err := userOf(ctx)
	if err != nil {
		return nil, err
	}
	rq := requestOf(ctx)
	switch {
	case rq == nil || rq.newTask == "":
		return q.open(ctx, user, id)
	case id != rq.newTask:
		r, err := q.open(ctx, user, rq.newTask)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, func() { _ = r.Close() }) // not handed over: the request's end closes it
		rq.reader = r
		return idleReader{}, nil
	case rq.reader != nil:
		r := rq.reader
		rq.reader = nil
		return r, nil
	}
	return q.open(ctx, user, id)
}

// open starts a reader of user's task id from its current version.
func (q *eventQueues) open(ctx context.Context, user string, id a2a.TaskID) (*eventReader, error) {
	from := taskstore.TaskVersionMissing
	stored, err := q.store.Get(ctx, id)
	switch {
	case err == nil:
		from = stored.Version
	case !errors.Is(err, a2a.ErrTaskNotFound):
		return nil, err
	}
	r := q.listen(ctx, q.store.key(user, id), int64(from))
	r.request = requestOf(ctx)
	r.unregister = func() { q.remove(id, r) }
	q.mu.Lock()
	if q.local[id] == nil {
		q.local[id] = map[*eventReader]bool{}
	}
	q.local[id][r] = true
	q.mu.Unlock()
	return r, nil
}

// Destroy does nothing: stored events expire by their TTL.
func (q *eventQueues) Destroy(context.Context, a2a.TaskID) error { return nil }

func (q *eventQueues) remove(id a2a.TaskID, r *eventReader) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.local[id], r)
	if len(q.local[id]) == 0 {
		delete(q.local, id)
	}
}

// fail ends the readers of a task that request opened with err.
func (q *eventQueues) fail(id a2a.TaskID, request *requestID, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for r := range q.local[id] {
		if r.request != request {
			continue
		}
		select {
		case r.errs <- err:
		default:
		}
	}
}

type eventWriter struct {
	q    *eventQueues
	user string
	task a2a.TaskID
	exec *execution // the run writing, when localQueue started it
}

// Write stores a processed event beside its task.
func (w *eventWriter) Write(ctx context.Context, msg *eventqueue.Message) error {
	ref, err := w.q.store.ref(ctx, w.user, w.task)
	if err != nil {
		return err
	}
	raw, err := msg.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	v := int64(msg.TaskVersion)
	doc := eventDoc{Key: w.q.store.key(w.user, w.task), Version: v, Message: raw, GCAt: platform.Now(ctx).Add(eventRetention)}
	for attempt := 1; ; attempt++ {
		_, err = ref.Collection(eventsCollection).Doc(fmt.Sprintf("%020d", v)).Create(ctx, doc)
		err = sessionstore.FirestoreError(err)
		// The emulator sometimes answers a write among many on one task
		// with Canceled ("call already cancelled") though the caller's
		// context is live; the write is idempotent, so it is tried again.
		if errors.Is(err, context.Canceled) && ctx.Err() == nil && attempt < 3 {
			continue
		}
		break
	}
	if err != nil && !errors.Is(err, sessionstore.ErrAlreadyExists) {
		return fmt.Errorf("store event of task %s: %w", w.task, err)
	}
	if w.exec != nil && isFinal(msg.Event) {
		w.exec.published.Store(true)
	}
	return nil
}

// isFinal reports whether ev ends a subscription to its task, as a2a-go's
// subscriptions read it: a message, or a task or status that is terminal
// or waits for input.
func isFinal(ev a2a.Event) bool {
	var state a2a.TaskState
	switch e := ev.(type) {
	case *a2a.Message:
		return true
	case *a2a.Task:
		state = e.Status.State
	case *a2a.TaskStatusUpdateEvent:
		state = e.Status.State
	default:
		return false
	}
	return state.Terminal() || state == a2a.TaskStateInputRequired
}

func (w *eventWriter) Close() error { return nil }

// eventReader delivers the events a snapshot listener finds, in version
// order, each once.
type eventReader struct {
	request    *requestID // the request that opened it
	msgs       chan *eventqueue.Message
	errs       chan error
	stop       context.CancelFunc
	done       chan struct{}
	unregister func()
	closeOnce  sync.Once
}

func (q *eventQueues) listen(ctx context.Context, key string, from int64) *eventReader {
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r := &eventReader{msgs: make(chan *eventqueue.Message, 64), errs: make(chan error, 1), stop: stop, done: make(chan struct{})}
	query := q.store.client.CollectionGroup(eventsCollection).
		Where("key", "==", key).Where("version", ">", from).OrderBy("version", firestore.Asc)
	go func() {
		defer close(r.done)
		it := query.Snapshots(lctx)
		defer it.Stop()
		last := from
		for {
			snap, err := it.Next()
			if err != nil {
				if lctx.Err() == nil {
					r.errs <- fmt.Errorf("listen for events: %w", err)
				}
				return
			}
			var added []eventDoc
			for _, ch := range snap.Changes {
				if ch.Kind != firestore.DocumentAdded {
					continue
				}
				var d eventDoc
				if err := ch.Doc.DataTo(&d); err != nil {
					r.errs <- fmt.Errorf("decode event: %w", err)
					return
				}
				added = append(added, d)
			}
			slices.SortFunc(added, func(a, b eventDoc) int { return int(a.Version - b.Version) })
			for _, d := range added {
				if d.Version <= last {
					continue
				}
				var msg eventqueue.Message
				if err := msg.UnmarshalJSON(d.Message); err != nil {
					r.errs <- fmt.Errorf("decode event: %w", err)
					return
				}
				select {
				case r.msgs <- &msg:
				case <-lctx.Done():
					return
				}
				last = d.Version
			}
		}
	}()
	return r
}

// Read returns the next event.
func (r *eventReader) Read(ctx context.Context) (*eventqueue.Message, error) {
	select {
	case msg := <-r.msgs:
		return msg, nil
	case err := <-r.errs:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-r.done:
		select {
		case msg := <-r.msgs:
			return msg, nil
		default:
			return nil, eventqueue.ErrQueueClosed
		}
	}
}

// idleReader is the reader of a task id nothing runs under.
type idleReader struct{}

func (idleReader) Read(ctx context.Context) (*eventqueue.Message, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (idleReader) Close() error { return nil }

// Close stops the listener.
func (r *eventReader) Close() error {
	r.closeOnce.Do(func() {
		r.stop()
		<-r.done
		if r.unregister != nil {
			r.unregister()
		}
	})
	return nil
}

// localQueue is the work queue of a serverless instance: the instance that
// takes a request runs its execution, detached from the request and bounded
// by timeout. a2a-go's cluster mode hands work to a queue so that any node
// may run it; here the request's own instance is the node, and Firestore
// (task store and events) is what the other instances share.
type localQueue struct {
	handler workqueue.HandlerFn
	events  *eventQueues
	timeout time.Duration
}

var _ workqueue.Queue = (*localQueue)(nil)

func (q *localQueue) RegisterHandler(_ workqueue.HandlerConfig, fn workqueue.HandlerFn) {
	q.handler = fn
}

// Write starts the work at once. An execution that fails before storing
// anything (an unknown task, a busy chat) fails the readers this instance
// opened for it, which is how the request that sent it gets the error; one
// that ends with a result it stored no event of hands the result to them
// (eventQueues.finish).
func (q *localQueue) Write(ctx context.Context, p *workqueue.Payload) (a2a.TaskID, error) {
	request := requestOf(ctx)
	if request != nil && request.newTask != "" && p.Type == workqueue.PayloadTypeExecute {
		p.TaskID = request.newTask
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.timeout)
		defer cancel()
		exec := &execution{}
		res, err := q.handler(context.WithValue(ctx, executionKey{}, exec), p)
		switch {
		case err != nil:
			q.events.fail(p.TaskID, request, err)
		case res != nil && !exec.published.Load():
			q.events.finish(ctx, p.TaskID, request, res)
		}
	}()
	return p.TaskID, nil
}

// execution is one run of the work on this instance; its writer records
// whether it stored a final event.
type execution struct{ published atomic.Bool }

type executionKey struct{}

// finishTimeout bounds handing a result to its caller (finish).
const finishTimeout = 30 * time.Second

// finish hands res, the result an execution ended with, to the readers
// request opened, when the execution stored no final event (no reader
// anywhere will see one), and stores the task's final state as an event
// for the readers of other requests and instances. ctx may be the
// execution's, expired: finish has a bound of its own.
//
// a2a-go's cluster mode hands only stored events to the request waiting
// for an execution. When an event cannot be stored, or the executor
// returns an error once the task exists, a2a-go marks the task failed
// itself and returns that task as the work's result, which reaches no
// queue: the caller waited until its own deadline. That is issue 47 item
// 15 (of 20 answers to one form, the one whose execution took the answer
// waited 150 s while the other 19 were told it was taken): the emulator
// fails writes among many on one task while other listeners close, and
// a failed write of the claim's event gives exactly that outcome
// (TestFormAnswerUnbroadcastEnd).
func (q *eventQueues) finish(ctx context.Context, id a2a.TaskID, request *requestID, res a2a.SendMessageResult) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if stored, err := q.store.Get(ctx, id); err == nil && isFinal(stored.Task) {
		if user, err := userOf(ctx); err == nil {
			w := &eventWriter{q: q, user: user, task: id}
			_ = w.Write(ctx, &eventqueue.Message{Event: stored.Task, TaskVersion: stored.Version}) // best effort: the caller is answered below
		}
	}
	q.mu.Lock()
	var readers []*eventReader
	for r := range q.local[id] {
		if r.request == request {
			readers = append(readers, r)
		}
	}
	q.mu.Unlock()
	for _, r := range readers {
		select {
		case r.msgs <- &eventqueue.Message{Event: res}:
		case <-r.done: // closed: its caller has gone
		case <-ctx.Done():
		}
	}
}

// requestID tells apart the requests an instance serves (ServeHTTP puts a
// new one on each request's context): the reader a request opens and the
// work it queues carry the same one. newTask is the task a message that
// starts one runs under (dedupeHandler.newTask): a2a-go draws a random id
// first, which the work queue replaces with this one; reader is the
// reader of newTask opened in place of the random id's (CreateReader).
type requestID struct {
	newTask a2a.TaskID
	reader  *eventReader
}

type requestKey struct{}

func requestOf(ctx context.Context) *requestID {
	id, _ := ctx.Value(requestKey{}).(*requestID)
	return id
}
