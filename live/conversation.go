package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/geminilive"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
)

// Conversation is one live segment of a chat driven for one client: the
// client's audio and text go to the model as they come, the model's voice
// to the client as it comes; what is said, called and answered is stored
// in order by a writer of its own (store), and answers given anywhere
// reach the model once.
type Conversation struct {
	r      *Runner
	req    Request
	seg    *toolcallback.LiveSegment
	client Client
	agent  *geminilive.Agent
	model  *geminilive.Session
	store  *store
	manual bool // the model takes activity signals (its detection is off)

	ctx    context.Context // ends with the conversation
	cancel context.CancelFunc
	tools  sync.WaitGroup // tool runs and answers being delivered

	mu        sync.Mutex
	waiting   map[string]bool // calls shown, by the model's id, until answered
	held      map[string]bool // calls the current model session holds
	atHandle  []string        // the waiting calls the latest handle held
	started   bool            // the first connection is up
	following bool            // the listener on the session's background work runs (followWork)
	announced bool            // "reconnecting" was sent for the connection coming
	turn      turnState
	tokens    int64 // used by the segment's model turns
	ended     bool
	reason    string
	err       error

	done chan struct{}
}

func newConversation(r *Runner, req Request, seg *toolcallback.LiveSegment, client Client) *Conversation {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conversation{
		r: r, req: req, seg: seg, client: client, ctx: ctx, cancel: cancel,
		store: newStore(seg, r.opts.HandleEvery), waiting: map[string]bool{}, held: map[string]bool{}, done: make(chan struct{}),
	}
	if rc := r.model.Setup.RealtimeInputConfig; rc != nil && rc.AutomaticActivityDetection != nil {
		c.manual = rc.AutomaticActivityDetection.Disabled
	}
	c.turn.id = latestTurn(seg.Session)
	return c
}

// latestTurn is the id of the turn the chat's next assistant words belong
// to until the user says something: its latest user message's.
func latestTurn(sess *sessionstore.Session) string {
	id := ""
	for ev := range sess.Events().All() {
		if transcript.StartsTurn(ev) {
			id = ev.InvocationID
		}
	}
	return id
}

// start opens the model session and starts the conversation's goroutines.
func (c *Conversation) start(ctx context.Context) error {
	c.seg.OnAsk(c.asked)
	if err := c.connect(ctx); err != nil {
		c.cancel()
		return err
	}
	go c.runStore()
	go c.relay()
	go c.answers()
	go c.watch()
	return nil
}

// Audio passes a frame of the user's voice (16-bit little-endian mono PCM
// at 16 kHz) to the model. It never waits: while the model's connection is
// being replaced, the oldest frames are dropped beyond a bound.
func (c *Conversation) Audio(pcm []byte) error { return c.model.SendAudio(pcm) }

// SpeechStarts passes the client's signal that the user started
// speaking; a model that detects activity itself needs none.
func (c *Conversation) SpeechStarts() error {
	if !c.manual {
		return nil
	}
	return c.model.SendActivity(genai.LiveRealtimeInput{ActivityStart: &genai.ActivityStart{}})
}

// SpeechEnds passes the client's signal that the user stopped speaking: a
// model that detects activity itself takes it as the end of the audio
// stream (the user's turn is over).
func (c *Conversation) SpeechEnds() error {
	if !c.manual {
		return c.model.SendActivity(genai.LiveRealtimeInput{AudioStreamEnd: true})
	}
	return c.model.SendActivity(genai.LiveRealtimeInput{ActivityEnd: &genai.ActivityEnd{}})
}

// Text sends a user's written message: stored as the user's message, and
// answered by the model.
func (c *Conversation) Text(text string) error {
	if text == "" {
		return fmt.Errorf("%w: empty text", toolcallback.ErrInvalidAnswer)
	}
	c.mu.Lock()
	c.flushUser()
	c.flushModel(nil, false)
	c.newTurn()
	c.turn.heard.WriteString(text)
	c.flushUser()
	c.unlock()
	return c.model.SendText(text)
}

// Answer records the client's answer to a call through the ledger, as an
// answer from any device would be (toolcallback.Team.Resume: the first
// writer wins, a second answer gets *toolcallback.AlreadyResolvedError);
// the conversation delivers it to the model once it is recorded. The same
// answer again is no error.
func (c *Conversation) Answer(ctx context.Context, a Answer) error {
	r := toolcallback.ResumeRequest{UserID: c.req.UserID, ChatID: c.req.ChatID, ClientID: c.req.DeviceID, CallID: a.ToolCallID}
	if a.ApprovalID != "" {
		r.CallID, r.Answer.Approved, r.Answer.Payload = a.ApprovalID, a.Approved, a.Payload
	} else {
		r.Answer.Output, r.Answer.Error = a.Output, a.ErrorText
	}
	_, err := c.r.team.Resume(ctx, r)
	var resolved *toolcallback.AlreadyResolvedError
	if errors.As(err, &resolved) && resolved.Same {
		return nil
	}
	return err
}

// Done is closed once the conversation has ended and its segment released
// the chat.
func (c *Conversation) Done() <-chan struct{} { return c.done }

// Wait waits for the end, and says why (an End reason) and, when it
// failed, with what error.
func (c *Conversation) Wait() (reason string, err error) {
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason, c.err
}

// Replace ends the conversation because its device opened a new one on the
// chat (EndReplaced), and waits for its end.
func (c *Conversation) Replace() {
	c.end(EndReplaced, nil)
	<-c.done
}

// Close ends the conversation (the client left: EndClosed) and waits for
// its end.
func (c *Conversation) Close() {
	c.end(EndClosed, nil)
	<-c.done
}

// end ends the conversation once, for reason: the model session closes,
// then the events it gave are stored, then the segment releases the chat
// (finish).
func (c *Conversation) end(reason string, err error) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended, c.reason, c.err = true, reason, err
	c.mu.Unlock()
	if err != nil && reason != EndLeaseLost {
		c.r.opts.Logger.Warn("live conversation failed", "chat", c.req.ChatID, "error", err)
	}
	c.cancel()
	go func() { _ = c.model.Close() }() // relay, seeing the events end, stores what is left
}

// watch ends the conversation on a stop, a lost lease or MaxDuration.
func (c *Conversation) watch() {
	timeout := time.NewTimer(c.r.opts.MaxDuration)
	defer timeout.Stop()
	select {
	case <-c.seg.Done():
		select {
		case <-c.seg.Lease().Lost():
			c.end(EndLeaseLost, sessionstore.ErrLeaseLost)
		default:
			c.end(EndStopped, nil)
		}
	case <-timeout.C:
		c.end(EndTimeout, nil)
	case <-c.ctx.Done():
	}
}

// runStore runs the writer; a failed write ends the conversation, and
// once the writer has drained, the segment releases the chat.
func (c *Conversation) runStore() {
	err := c.store.run(context.WithoutCancel(c.ctx))
	switch {
	case errors.Is(err, sessionstore.ErrLeaseLost):
		c.end(EndLeaseLost, err)
	case err != nil:
		c.end(EndClosed, err)
	}
	c.tools.Wait()
	c.seg.Close(context.Background())
	close(c.done)
}

// budget counts a model turn's tokens and ends the conversation once they
// reach what the budget had left when it opened.
func (c *Conversation) budget(ctx context.Context, u *genai.UsageMetadata) {
	left, ok := c.seg.TokensLeft()
	c.mu.Lock()
	c.tokens += int64(u.TotalTokenCount)
	over := ok && c.tokens >= left
	c.mu.Unlock()
	if over {
		now := platform.Now(ctx)
		next := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		c.end(EndClosed, &limits.LimitError{Err: limits.ErrBudgetExhausted, Scope: "user", Limit: c.req.Limits.UserTokensPerDay, RetryAfter: next.Sub(now)})
	}
}

// send sends m to the client; a client that is gone ends the
// conversation.
func (c *Conversation) send(m Message) {
	if err := c.client.Send(m); err != nil {
		c.end(EndClosed, nil)
	}
}

// asked shows a question a tool asks while it runs (toolcallback.AskInCall),
// and, once it is closed, its outcome.
func (c *Conversation) asked(ev *session.Event) {
	for _, p := range ev.Content.Parts {
		switch {
		case p.FunctionCall != nil:
			fc := p.FunctionCall
			c.send(ToolCall{Type: "tool-call", ToolCallID: fc.ID, ToolName: fc.Name, Input: fc.Args, Kind: string(toolcallback.KindInput), DeviceID: c.req.DeviceID})
		case p.FunctionResponse != nil:
			c.send(toolResult(p.FunctionResponse))
		}
	}
}
