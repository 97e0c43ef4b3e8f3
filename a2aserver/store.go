package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/sessionstore"
)

// Collections this package stores, under a chat's document.
const (
	tasksCollection  = "a2aTasks"
	eventsCollection = "a2aEvents"
	pushCollection   = "a2aPush"
)

// TaskStore keeps A2A tasks in Firestore, each under the chat (context) it
// belongs to. A task's version is its document's update time in
// nanoseconds: Update writes with a precondition on that time, so of two
// writers that read the same version exactly one wins.
type TaskStore struct {
	client    *firestore.Client
	sessions  *sessionstore.Service
	app       string
	retention time.Duration
	// stale: a task left working for longer has lost its execution.
	stale time.Duration
	// checkMessage refuses a message on a task before it is stored
	// (executor.checkAnswers); nil checks nothing.
	checkMessage func(ctx context.Context, user string, task *a2a.Task, msg *a2a.Message) error

	// paths remembers where a task lives (a task never moves between
	// chats), so that the writes of an execution, which know only the task
	// id, skip the lookup query. A remembered path is only a place to read
	// or write: a deleted task is not found there either.
	mu    sync.Mutex
	paths map[string]*firestore.DocumentRef

	// commits reports the outcome of storing a given event to whoever
	// waits for it (see claim in executor.go).
	commits sync.Map // a2a.Event -> chan error

	// accepted are the messages this instance's Update stored in their
	// task, until their execution starts (takeAccepted); refused are the
	// events Update refuses unwritten (refuseDuplicate).
	accepted sync.Map // *a2a.Message -> true
	refused  sync.Map // a2a.Event -> true

	// held are push configs of tasks not created yet, by task key, written
	// with the task by Create (see pushStore.Save).
	held map[string]heldPush
}

type heldPush struct {
	docs  map[string]pushDoc // by config id
	until time.Time
}

// holdPush keeps a config of a task about to be created, for as long as
// an execution may take to create it.
func (s *TaskStore) holdPush(user string, id a2a.TaskID, configID string, doc pushDoc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, h := range s.held {
		if now.After(h.until) {
			delete(s.held, k)
		}
	}
	key := s.key(user, id)
	h, ok := s.held[key]
	if !ok {
		h = heldPush{docs: map[string]pushDoc{}, until: now.Add(time.Minute)}
	}
	h.docs[configID] = doc
	s.held[key] = h
}

func (s *TaskStore) takeHeld(key string) map[string]pushDoc {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[key]
	delete(s.held, key)
	return h.docs
}

var _ taskstore.Store = (*TaskStore)(nil)

// taskDoc is the stored form of a task.
type taskDoc struct {
	Key     string    `firestore:"key"` // "{root}/{app}/{user}/{task id}", the lookup by id
	User    string    `firestore:"user"`
	Context string    `firestore:"context"`
	State   string    `firestore:"state"`
	Task    []byte    `firestore:"task"` // JSON of a2a.Task
	Updated time.Time `firestore:"updated"`
	GCAt    time.Time `firestore:"gcAt"` // TTL
}

func newTaskStore(client *firestore.Client, sessions *sessionstore.Service, app string, retention, stale time.Duration) *TaskStore {
	return &TaskStore{client: client, sessions: sessions, app: app, retention: retention, stale: stale,
		paths: map[string]*firestore.DocumentRef{}, held: map[string]heldPush{}}
}

// userOf returns the verified user of the call ctx belongs to.
func userOf(ctx context.Context) (string, error) {
	if cc, ok := a2asrv.CallContextFrom(ctx); ok && cc.User != nil && cc.User.Authenticated && cc.User.Name != "" {
		return cc.User.Name, nil
	}
	return "", a2a.ErrUnauthenticated
}

func (s *TaskStore) key(user string, id a2a.TaskID) string {
	return s.sessions.Root() + "/" + s.app + "/" + user + "/" + string(id)
}

func (s *TaskStore) taskRef(user, contextID string, id a2a.TaskID) *firestore.DocumentRef {
	return s.client.Doc(s.sessions.ChatDoc(s.app, user, contextID).Child(tasksCollection, string(id)).Path())
}

func (s *TaskStore) doc(user string, task *a2a.Task, now time.Time) (map[string]any, error) {
	raw, err := json.Marshal(task)
	if err != nil {
		return nil, fmt.Errorf("encode task %s: %w", task.ID, err)
	}
	return map[string]any{
		"key": s.key(user, task.ID), "user": user, "context": task.ContextID, "state": string(task.Status.State),
		"task": raw, "updated": now, "gcAt": now.Add(s.retention),
	}, nil
}

func (s *TaskStore) remember(key string, ref *firestore.DocumentRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.paths) > 10000 {
		clear(s.paths)
	}
	s.paths[key] = ref
}

// remembered returns the document path remember kept for key, or nil.
func (s *TaskStore) remembered(key string) *firestore.DocumentRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths[key]
}

// Create stores a new task under its chat, with the push configs its
// first message set, in one commit.
func (s *TaskStore) Create(ctx context.Context, task *a2a.Task) (taskstore.TaskVersion, error) {
	user, err := userOf(ctx)
	if err != nil {
		return 0, err
	}
	data, err := s.doc(user, task, platform.Now(ctx))
	if err != nil {
		return 0, err
	}
	key := s.key(user, task.ID)
	ref := s.taskRef(user, task.ContextID, task.ID)
	batch := s.client.Batch()
	batch.Create(ref, data)
	for id, doc := range s.takeHeld(key) {
		batch.Set(ref.Collection(pushCollection).Doc(id), doc)
	}
	res, err := batch.Commit(ctx)
	switch err = sessionstore.FirestoreError(err); {
	case errors.Is(err, sessionstore.ErrAlreadyExists):
		return 0, taskstore.ErrTaskAlreadyExists
	case err != nil:
		return 0, fmt.Errorf("create task %s: %w", task.ID, err)
	}
	s.remember(key, ref)
	return taskstore.TaskVersion(res[0].UpdateTime.UnixNano()), nil
}

// Update replaces a task if its stored version is still req.PrevVersion;
// otherwise it returns taskstore.ErrConcurrentModification.
func (s *TaskStore) Update(ctx context.Context, req *taskstore.UpdateRequest) (_ taskstore.TaskVersion, err error) {
	defer func() { s.reportCommit(req.Event, err) }()
	if err := s.refusedEvent(req.Event); err != nil {
		return 0, err
	}
	user, err := userOf(ctx)
	if err != nil {
		return 0, err
	}
	msg, _ := req.Event.(*a2a.Message)
	if msg != nil {
		if s.busy(req.Task) {
			return 0, ErrTaskBusy
		}
		if err := s.checkNew(ctx, user, req.Task, msg); err != nil {
			return 0, rpcError(err)
		}
	}
	data, err := s.doc(user, req.Task, platform.Now(ctx))
	if err != nil {
		return 0, err
	}
	ref := s.taskRef(user, req.Task.ContextID, req.Task.ID)
	var updates []firestore.Update
	for _, f := range []string{"state", "task", "updated", "gcAt"} {
		updates = append(updates, firestore.Update{Path: f, Value: data[f]})
	}
	var pre []firestore.Precondition
	if req.PrevVersion != taskstore.TaskVersionMissing {
		pre = append(pre, firestore.LastUpdateTime(time.Unix(0, int64(req.PrevVersion))))
	} else {
		pre = append(pre, firestore.Exists)
	}
	res, err := ref.Update(ctx, updates, pre...)
	switch err = sessionstore.FirestoreError(err); {
	case err == nil:
		if msg != nil {
			s.markAccepted(msg)
		}
		return taskstore.TaskVersion(res.UpdateTime.UnixNano()), nil
	case errors.Is(err, sessionstore.ErrConflict) && msg != nil:
		return 0, s.duplicateAppend(ctx, req.Task, msg, taskstore.ErrConcurrentModification)
	case errors.Is(err, sessionstore.ErrConflict):
		return 0, taskstore.ErrConcurrentModification
	case errors.Is(err, sessionstore.ErrNotFound):
		return 0, a2a.ErrTaskNotFound
	}
	return 0, fmt.Errorf("update task %s: %w", req.Task.ID, err)
}

// checkNew is checkMessage, when there is one.
func (s *TaskStore) checkNew(ctx context.Context, user string, task *a2a.Task, msg *a2a.Message) error {
	if s.checkMessage == nil {
		return nil
	}
	return s.checkMessage(ctx, user, task, msg)
}

// ErrTaskBusy is the answer to a message on a task that is working on an
// earlier one (a duplicate answer that arrived after the first): the
// message is not stored, so the running execution keeps the task.
var ErrTaskBusy = fmt.Errorf("%w: the task is working on an earlier message; follow it with tasks/resubscribe or tasks/get", a2a.ErrInvalidParams)

// busy reports whether task, as a caller read it, is being worked on by a
// live execution. a2a-go appends a follow-up message to the task's history
// (a write, so a new version) before its execution starts: were that
// allowed while another execution works on the task, that execution's next
// write would fail on the version and the task would be lost to it.
func (s *TaskStore) busy(task *a2a.Task) bool {
	st := task.Status
	if st.State != a2a.TaskStateWorking && st.State != a2a.TaskStateSubmitted {
		return false
	}
	return st.Timestamp == nil || time.Since(*st.Timestamp) <= s.stale
}

// Get reads a task of the calling user; another user's task is not found.
func (s *TaskStore) Get(ctx context.Context, id a2a.TaskID) (*taskstore.StoredTask, error) {
	user, err := userOf(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := s.find(ctx, user, id)
	if err != nil {
		return nil, err
	}
	var d taskDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	var task a2a.Task
	if err := json.Unmarshal(d.Task, &task); err != nil {
		return nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	return &taskstore.StoredTask{Task: &task, Version: taskstore.TaskVersion(snap.UpdateTime.UnixNano()), User: user}, nil
}

// find reads a task's document: at its remembered path, or found by its
// key with a collection-group query.
func (s *TaskStore) find(ctx context.Context, user string, id a2a.TaskID) (*firestore.DocumentSnapshot, error) {
	key := s.key(user, id)
	if ref := s.remembered(key); ref != nil {
		snap, err := ref.Get(ctx)
		switch err = sessionstore.FirestoreError(err); {
		case errors.Is(err, sessionstore.ErrNotFound):
			return nil, a2a.ErrTaskNotFound
		case err != nil:
			return nil, fmt.Errorf("read task %s: %w", id, err)
		}
		return snap, nil
	}
	snaps, err := s.client.CollectionGroup(tasksCollection).Where("key", "==", key).Limit(1).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("find task %s: %w", id, err)
	}
	if len(snaps) == 0 {
		return nil, a2a.ErrTaskNotFound
	}
	s.remember(key, snaps[0].Ref)
	return snaps[0], nil
}

// ref returns the document of a task of user, or ErrTaskNotFound.
func (s *TaskStore) ref(ctx context.Context, user string, id a2a.TaskID) (*firestore.DocumentRef, error) {
	key := s.key(user, id)
	if ref := s.remembered(key); ref != nil {
		return ref, nil
	}
	snap, err := s.find(ctx, user, id)
	if err != nil {
		return nil, err
	}
	return snap.Ref, nil
}

// List lists the calling user's tasks of one context (chat), most recently
// updated first. Listing across contexts is not offered.
func (s *TaskStore) List(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	user, err := userOf(ctx)
	if err != nil {
		return nil, err
	}
	if req.ContextID == "" {
		return nil, fmt.Errorf("%w: tasks are listed per contextId", a2a.ErrUnsupportedOperation)
	}
	if err := sessionstore.ValidateID("context id", req.ContextID); err != nil {
		return nil, fmt.Errorf("%w: %w", a2a.ErrInvalidParams, err)
	}
	limit := req.PageSize
	if limit <= 0 || limit > 100 {
		limit = 50
	}
	snaps, err := s.client.Doc(s.sessions.ChatDoc(s.app, user, req.ContextID).Path()).Collection(tasksCollection).
		OrderBy("updated", firestore.Desc).Limit(limit).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	out := &a2a.ListTasksResponse{Tasks: []*a2a.Task{}, PageSize: limit, TotalSize: len(snaps)}
	for _, snap := range snaps {
		var d taskDoc
		if err := snap.DataTo(&d); err != nil {
			return nil, err
		}
		var task a2a.Task
		if err := json.Unmarshal(d.Task, &task); err != nil {
			return nil, err
		}
		out.Tasks = append(out.Tasks, &task)
	}
	return out, nil
}

// watchCommit returns a channel that receives the outcome of storing ev
// (nil, or the store's error). ev must be passed to the pipeline after
// this call.
func (s *TaskStore) watchCommit(ev a2a.Event) <-chan error {
	ch := make(chan error, 1)
	s.commits.Store(ev, ch)
	return ch
}

func (s *TaskStore) forgetCommit(ev a2a.Event) { s.commits.Delete(ev) }

func (s *TaskStore) reportCommit(ev a2a.Event, err error) {
	if ev == nil {
		return
	}
	if ch, ok := s.commits.LoadAndDelete(ev); ok {
		ch.(chan error) <- err
	}
}
