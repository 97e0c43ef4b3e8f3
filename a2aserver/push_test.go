package a2aserver

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
)

// TestPushNotifications: a webhook on the allowed list hears of each state
// a caller waits for (input-required, completed, canceled) with its
// token; a URL outside the list is refused and hears nothing.
func TestPushNotifications(t *testing.T) {
	t.Parallel()
	allowed, outside := &webhook{}, &webhook{}
	allowedSrv, outsideSrv := httptest.NewServer(allowed), httptest.NewServer(outside)
	t.Cleanup(allowedSrv.Close)
	t.Cleanup(outsideSrv.Close)
	f := newFixture(t, 1, &Options{PushAllow: []string{allowedSrv.URL + "/hooks/"}, PushBackoff: 10 * time.Millisecond},
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.TextReply("now playing track 2"),
		modeltest.CallReply(modeltest.Call("c2", "change_bgm", map[string]any{"track": 3})),
		modeltest.TextReply("the music was not changed"),
		modeltest.FailReply)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := f.client(0, "ada")

	withPush := func(msg *a2a.SendMessageRequest, url string) *a2a.SendMessageRequest {
		msg.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: url, Token: "secret-1"}}
		return msg
	}
	task := send(ctx, t, c, withPush(textMessage("play track 2"), allowedSrv.URL+"/hooks/ada"))
	pendingIDs(t, task)
	polltest.Until(t, "the webhook to hear input-required", func() bool { return slices.Contains(allowed.states(), "input-required") })
	send(ctx, t, c, answerMessage(task, bgmAnswer("c1", 2)))
	polltest.Until(t, "the webhook to hear completed", func() bool { return slices.Contains(allowed.states(), "completed") })

	second := send(ctx, t, c, withPush(textMessage("play track 3"), allowedSrv.URL+"/hooks/ada"))
	if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: second.ID}); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	polltest.Until(t, "the webhook to hear canceled", func() bool { return slices.Contains(allowed.states(), "canceled") })
	// A turn whose model fails ends the task failed, which a caller waits
	// for too.
	send(ctx, t, c, withPush(textMessage("play track 5"), allowedSrv.URL+"/hooks/ada"))
	polltest.Until(t, "the webhook to hear failed", func() bool { return slices.Contains(allowed.states(), "failed") })
	allowed.mu.Lock()
	for i, tok := range allowed.token {
		if tok != "secret-1" {
			t.Errorf("notification %d (%s) carried token %q, want the config's", i, allowed.got[i], tok)
		}
	}
	for _, s := range allowed.got {
		if s != "input-required" && s != "completed" && s != "canceled" && s != "failed" {
			t.Errorf("webhook heard state %q, want only states a caller waits for", s)
		}
	}
	allowed.mu.Unlock()

	// Outside the list: the config is refused, and nothing is posted.
	_, err := c.SendMessage(ctx, withPush(textMessage("play track 4"), outsideSrv.URL+"/hooks/ada"))
	if !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("SendMessage with a webhook outside the list: error = %v, want ErrInvalidParams", err)
	}
	_, err = c.SendMessage(ctx, withPush(textMessage("play track 4"), allowedSrv.URL+".evil.example/hooks/"))
	if !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("SendMessage with a webhook on a look-alike host: error = %v, want ErrInvalidParams", err)
	}
	time.Sleep(500 * time.Millisecond)
	if got := outside.states(); len(got) > 0 {
		t.Errorf("the webhook outside the list heard %v, want nothing", got)
	}
}
