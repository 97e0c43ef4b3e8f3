package a2aserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/api/iterator"

	"github.com/baton-run/baton/sessionstore"
)

// pushStore keeps a task's push-notification configs beside it, at
// {task}/a2aPush/{config id} (a2a-go's push.ConfigStore). Only URLs that
// start with one of the allowed prefixes are accepted.
type pushStore struct {
	tasks *TaskStore
	allow []string
}

var _ push.ConfigStore = (*pushStore)(nil)

type pushDoc struct {
	Config []byte    `firestore:"config"` // JSON of a2a.PushConfig
	GCAt   time.Time `firestore:"gcAt"`   // TTL
}

func allowed(prefixes []string, url string) bool {
	for _, p := range prefixes {
		if p != "" && strings.HasPrefix(url, p) {
			return true
		}
	}
	return false
}

func (s *pushStore) collection(ctx context.Context, id a2a.TaskID) (*firestore.CollectionRef, error) {
	user, err := userOf(ctx)
	if err != nil {
		return nil, err
	}
	ref, err := s.tasks.ref(ctx, user, id)
	if err != nil {
		return nil, err
	}
	return ref.Collection(pushCollection), nil
}

// Save stores a config, with a new id when it has none.
func (s *pushStore) Save(ctx context.Context, id a2a.TaskID, config *a2a.PushConfig) (*a2a.PushConfig, error) {
	if !allowed(s.allow, config.URL) {
		return nil, fmt.Errorf("%w: push notifications go only to the URLs this deployment allows", a2a.ErrInvalidParams)
	}
	saved := *config
	saved.TaskID = id
	if saved.ID == "" {
		saved.ID = platform.NewUUID(ctx)
	}
	if err := sessionstore.ValidateID("push config id", saved.ID); err != nil {
		return nil, err
	}
	doc, err := s.tasks.pushDoc(ctx, &saved)
	if err != nil {
		return nil, err
	}
	col, err := s.collection(ctx, id)
	if errors.Is(err, a2a.ErrTaskNotFound) {
		// a2a-go saves a new task's config before the task exists (its
		// other callers check that the task exists first); the config is
		// written with the task (TaskStore.Create), on this instance, which
		// runs the execution.
		user, _ := userOf(ctx)
		s.tasks.holdPush(user, id, saved.ID, doc)
		return &saved, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := col.Doc(saved.ID).Set(ctx, doc); err != nil {
		return nil, fmt.Errorf("save push config: %w", err)
	}
	return &saved, nil
}

func (s *TaskStore) pushDoc(ctx context.Context, c *a2a.PushConfig) (pushDoc, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return pushDoc{}, fmt.Errorf("encode push config: %w", err)
	}
	return pushDoc{Config: raw, GCAt: platform.Now(ctx).Add(s.retention)}, nil
}

// Get reads one config.
func (s *pushStore) Get(ctx context.Context, id a2a.TaskID, configID string) (*a2a.PushConfig, error) {
	if err := sessionstore.ValidateID("push config id", configID); err != nil {
		return nil, err
	}
	col, err := s.collection(ctx, id)
	if err != nil {
		return nil, err
	}
	snap, err := col.Doc(configID).Get(ctx)
	switch err = sessionstore.FirestoreError(err); {
	case errors.Is(err, sessionstore.ErrNotFound):
		return nil, push.ErrPushConfigNotFound
	case err != nil:
		return nil, fmt.Errorf("read push config: %w", err)
	}
	return decodePush(snap.Data()["config"])
}

// List reads every config of a task. a2a-go calls it for every event of
// an execution, so a deployment without allowed URLs turns push
// notifications off altogether (see Options.PushAllow).
func (s *pushStore) List(ctx context.Context, id a2a.TaskID) ([]*a2a.PushConfig, error) {
	col, err := s.collection(ctx, id)
	if err != nil {
		return nil, err
	}
	snaps, err := col.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list push configs: %w", err)
	}
	out := make([]*a2a.PushConfig, 0, len(snaps))
	for _, snap := range snaps {
		c, err := decodePush(snap.Data()["config"])
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Delete removes one config.
func (s *pushStore) Delete(ctx context.Context, id a2a.TaskID, configID string) error {
	if err := sessionstore.ValidateID("push config id", configID); err != nil {
		return err
	}
	col, err := s.collection(ctx, id)
	if err != nil {
		return err
	}
	if _, err := col.Doc(configID).Delete(ctx); err != nil {
		return fmt.Errorf("delete push config: %w", err)
	}
	return nil
}

// DeleteAll removes every config of a task.
func (s *pushStore) DeleteAll(ctx context.Context, id a2a.TaskID) error {
	col, err := s.collection(ctx, id)
	if err != nil {
		return err
	}
	refs := col.DocumentRefs(ctx)
	for {
		ref, err := refs.Next()
		if err == iterator.Done {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list push configs: %w", err)
		}
		if _, err := ref.Delete(ctx); err != nil {
			return fmt.Errorf("delete push config: %w", err)
		}
	}
}

func decodePush(v any) (*a2a.PushConfig, error) {
	raw, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("push config stored as %T", v)
	}
	var c a2a.PushConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("decode push config: %w", err)
	}
	return &c, nil
}

// notifyStates are the states a webhook hears about.
var notifyStates = map[a2a.TaskState]bool{
	a2a.TaskStateInputRequired: true, a2a.TaskStateCompleted: true, a2a.TaskStateFailed: true, a2a.TaskStateCanceled: true,
}

// pushSender POSTs the task to a webhook when it reaches input-required,
// completed, failed or canceled (a2a-go's push.Sender). The body is the
// task in A2A 0.3 JSON, as that version's spec describes; the config's
// token comes back in X-A2A-Notification-Token (and A2A-Notification-Token,
// 1.0's name), and its credentials, if any, in Authorization with the
// config's scheme (Bearer or Basic). A failed POST is retried a bounded
// number of times, then logged: a webhook never fails the task.
type pushSender struct {
	tasks    *TaskStore
	allow    []string
	client   *http.Client
	attempts int
	backoff  time.Duration
	log      *slog.Logger
}

var _ push.Sender = (*pushSender)(nil)

func (s *pushSender) SendPush(ctx context.Context, config *a2a.PushConfig, event a2a.Event) error {
	var state a2a.TaskState
	switch e := event.(type) {
	case *a2a.TaskStatusUpdateEvent:
		state = e.Status.State
	case *a2a.Task:
		state = e.Status.State
	}
	if !notifyStates[state] {
		return nil
	}
	if !allowed(s.allow, config.URL) {
		s.log.WarnContext(ctx, "a2a push: URL not allowed", "url", config.URL)
		return nil
	}
	stored, err := s.tasks.Get(ctx, event.TaskInfo().TaskID)
	if err != nil {
		s.log.ErrorContext(ctx, "a2a push: read task", "error", err)
		return nil
	}
	body, err := json.Marshal(a2av0.FromV1Task(stored.Task))
	if err != nil {
		s.log.ErrorContext(ctx, "a2a push: encode task", "error", err)
		return nil
	}
	delay := s.backoff
	for attempt := 1; ; attempt++ {
		err := s.post(ctx, config, body)
		if err == nil {
			return nil
		}
		if attempt >= s.attempts || ctx.Err() != nil {
			s.log.WarnContext(ctx, "a2a push: giving up", "url", config.URL, "attempts", attempt, "error", err)
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay *= 2
	}
}

func (s *pushSender) post(ctx context.Context, config *a2a.PushConfig, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, config.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if config.Token != "" {
		req.Header.Set("X-A2A-Notification-Token", config.Token)
		req.Header.Set("A2A-Notification-Token", config.Token)
	}
	if a := config.Auth; a != nil && a.Credentials != "" {
		switch strings.ToLower(a.Scheme) {
		case "bearer":
			req.Header.Set("Authorization", "Bearer "+a.Credentials)
		case "basic":
			req.Header.Set("Authorization", "Basic "+a.Credentials)
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}
