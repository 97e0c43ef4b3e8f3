package live

import (
	"context"
	"strings"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/geminilive"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// turnState is the exchange being heard and said: the user's words and the
// model's since they were last stored, and the ids that name them.
type turnState struct {
	id     string // the turn: the invocation of its user message
	userID string // the user message's event id, once the user speaks
	heard  strings.Builder
	said   strings.Builder
	usage  *genai.UsageMetadata // the model turn's, until stored
	out    []Message            // messages for the client, sent once c.mu is released
}

// relay passes the model's events on, in order, until the session ends:
// audio and transcript pieces straight to the client, and at the points
// that close them (a tool call, the end of a model turn, an
// interruption), the user's and the model's words to the store. It never
// waits for Firestore.
func (c *Conversation) relay() {
	for ev := range c.model.Events() {
		c.take(ev)
	}
	c.mu.Lock()
	if c.reason != EndLeaseLost {
		// Nothing said is lost: what the turn had so far is stored. The
		// turn is over, and its usage counts, even when the conversation
		// ended before the model said so (the budget ends it on the usage,
		// which comes just before turnComplete).
		c.flushUser()
		c.flushModel(nil, true)
	}
	c.unlock()
	if err := c.model.Err(); err != nil {
		c.end(EndClosed, err)
	}
	c.store.close()
}

// take handles one event of the model session.
func (c *Conversation) take(ev geminilive.Event) {
	ctx := c.ctx
	switch ev.Kind {
	case geminilive.Connected:
		c.connectedAgain(ev.Resumed)
	case geminilive.Audio:
		if err := c.client.Audio(ev.Audio.Data); err != nil {
			c.end(EndClosed, nil)
		}
	case geminilive.Text:
		c.words(genai.RoleModel, ev.Text)
	case geminilive.Transcript:
		if !ev.Final {
			c.words(ev.Role, ev.Text)
		}
	case geminilive.ToolCall:
		c.called(ev.Calls)
	case geminilive.Usage:
		c.used(ctx, ev.Usage)
	case geminilive.Handle:
		c.store.setHandle(c.issued(ctx, ev.Handle))
	case geminilive.GoAway:
		c.announce()
	case geminilive.Interrupted, geminilive.TurnComplete:
		c.mu.Lock()
		c.flushUser()
		c.flushModel(nil, true)
		c.unlock()
		c.send(Signal{Type: map[geminilive.Kind]string{geminilive.Interrupted: "interrupted", geminilive.TurnComplete: "turn-complete"}[ev.Kind]})
	}
}

// connectedAgain handles a connection's start: the first sends Ready; a
// later one, "reconnecting" unless a goAway announced it.
func (c *Conversation) connectedAgain(resumed bool) {
	c.mu.Lock()
	first, announced := !c.started, c.announced
	c.started, c.announced = true, false
	c.mu.Unlock()
	if first {
		if !resumed {
			c.reconnected(false) // the handle was refused: a new model session holds nothing
		}
		c.send(c.ready(resumed))
		c.followWork(c.seg.Open)
		return
	}
	c.reconnected(resumed)
	if !announced {
		c.send(Signal{Type: "reconnecting"})
	}
}

// announce tells the client the model's connection is about to be
// replaced.
func (c *Conversation) announce() {
	c.mu.Lock()
	c.announced = true
	c.mu.Unlock()
	c.send(Signal{Type: "reconnecting"})
}

func (c *Conversation) connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

// ready is the Ready message: the calls waiting that the device may
// answer.
func (c *Conversation) ready(resumed bool) Ready {
	m := Ready{Type: "ready", ChatID: c.req.ChatID, Agent: c.seg.Chat.Agent, Resumed: resumed, Calls: []ToolCall{}}
	for _, call := range c.seg.Open {
		if call.Status == "pending" && (call.AnyDevice || call.ClientID == c.req.DeviceID) {
			m.Calls = append(m.Calls, toolCall(call))
		}
	}
	return m
}

// words takes a piece of the user's or the model's words: the client gets
// it at once; the store, when the words end.
func (c *Conversation) words(role, text string) {
	c.mu.Lock()
	t := &c.turn
	m := Transcript{Type: "transcript", Text: text}
	if role == genai.RoleUser {
		if t.userID == "" {
			c.flushModel(nil, false)
			c.newTurn()
			t.userID = platform.NewUUID(c.ctx)
		}
		t.heard.WriteString(text)
		m.Role, m.MessageID = "user", t.userID
	} else {
		c.ensureTurn()
		t.said.WriteString(text)
		m.Role, m.MessageID = "assistant", t.id
	}
	t.out = append(t.out, m)
	c.unlock()
}

// unlock releases c.mu, then sends the messages queued under it, in
// order.
func (c *Conversation) unlock() {
	out := c.turn.out
	c.turn.out = nil
	c.mu.Unlock()
	for _, m := range out {
		c.send(m)
	}
}

// newTurn starts a turn: the user's next words are a new message.
// c.mu is held.
func (c *Conversation) newTurn() {
	c.turn.id = "live-" + platform.NewUUID(c.ctx)
	c.turn.userID = ""
}

// ensureTurn gives the model's words a turn when the chat has none yet.
// c.mu is held.
func (c *Conversation) ensureTurn() {
	if c.turn.id == "" {
		c.turn.id = "live-" + platform.NewUUID(c.ctx)
	}
}

// flushUser stores the user's words heard so far as the user's message,
// and tells the client it is whole. c.mu is held.
func (c *Conversation) flushUser() {
	t := &c.turn
	if t.heard.Len() == 0 {
		return
	}
	if t.userID == "" {
		t.userID = platform.NewUUID(c.ctx)
	}
	ev := session.NewEvent(c.ctx, t.id)
	ev.ID, ev.Author = t.userID, "user"
	ev.Content = genai.NewContentFromText(t.heard.String(), genai.RoleUser)
	c.store.add(job{ev: ev})
	t.out = append(t.out, Transcript{Type: "transcript", Role: "user", MessageID: t.userID, Text: t.heard.String(), Final: true})
	t.heard.Reset()
	t.userID = "" // later words are a message of their own
}

// flushModel stores the model's words said so far with calls (the model's
// event), and its usage; end: the model's turn is over. c.mu is held.
func (c *Conversation) flushModel(calls []*genai.FunctionCall, end bool) {
	t := &c.turn
	text := t.said.String()
	if text == "" && len(calls) == 0 && (t.usage == nil || !end) {
		return
	}
	c.ensureTurn()
	ev := session.NewEvent(c.ctx, t.id)
	ev.Author = c.seg.Agent.Name()
	content := &genai.Content{Role: genai.RoleModel}
	if text != "" {
		content.Parts = append(content.Parts, genai.NewPartFromText(text))
	}
	for _, fc := range calls {
		content.Parts = append(content.Parts, &genai.Part{FunctionCall: fc})
	}
	if len(content.Parts) > 0 {
		ev.Content = content
	}
	j := job{ev: ev, awaitHandle: end}
	if u := t.usage; u != nil && end {
		ev.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: u.PromptTokenCount,
			CandidatesTokenCount: u.ResponseTokenCount, TotalTokenCount: u.TotalTokenCount}
		if c.r.opts.CountTokens {
			j.opts.Tokens = sessionstore.TokenUse{N: limits.TokensUsed(ev.UsageMetadata), At: platform.Now(c.ctx)}
		}
		t.usage = nil
	}
	if len(calls) > 0 {
		j.after = func(paused []*toolcallback.Call) { c.paused(calls, paused) }
	}
	c.store.add(j)
	if text != "" {
		t.out = append(t.out, Transcript{Type: "transcript", Role: "assistant", MessageID: t.id, Text: text, Final: true})
	}
	t.said.Reset()
}

// used counts a model turn's usage: stored with the turn's last event,
// and held to the budget.
func (c *Conversation) used(ctx context.Context, u *genai.UsageMetadata) {
	c.mu.Lock()
	if c.turn.usage == nil {
		c.turn.usage = &genai.UsageMetadata{}
	}
	c.turn.usage.PromptTokenCount += u.PromptTokenCount
	c.turn.usage.ResponseTokenCount += u.ResponseTokenCount
	c.turn.usage.TotalTokenCount += u.TotalTokenCount
	c.mu.Unlock()
	c.budget(ctx, u)
}
