package geminilive

import (
	"context"
	"strings"

	"google.golang.org/genai"
)

// read turns the connection's messages into events until it ends. From
// a goAway on, the writer writes nothing more to it, and once the model
// is idle (since.idle) the reader tells it to leave.
func (s *Session) read(ctx context.Context, conn *genai.Session, l *link) error {
	for {
		msg, err := conn.Receive()
		if err != nil {
			return err
		}
		if msg.GoAway != nil {
			s.mu.Lock()
			l.goAway = true
			s.mu.Unlock()
		}
		if !s.take(ctx, msg) {
			return ctx.Err()
		}
		s.mu.Lock()
		leave := l.goAway && s.since.idle()
		s.mu.Unlock()
		if leave {
			select {
			case l.leave <- struct{}{}:
			default:
			}
		}
	}
}

// take records what a message changes (handle, calls) and emits its
// events; false once the session is closing.
func (s *Session) take(ctx context.Context, msg *genai.LiveServerMessage) bool {
	var evs []Event
	s.mu.Lock()
	if sc := msg.ServerContent; sc != nil {
		s.heardFrom(sc)
	}
	if u := msg.SessionResumptionUpdate; u != nil && u.Resumable && u.NewHandle != "" {
		s.handle = u.NewHandle
		s.seed = nil
		s.calls.issued()
		s.since.handle()
		evs = append(evs, Event{Kind: Handle, Handle: u.NewHandle})
	}
	if tc := msg.ToolCall; tc != nil {
		s.calls.made(tc.FunctionCalls)
		s.since.called(tc.FunctionCalls, s.blocks(tc.FunctionCalls))
		evs = append(evs, Event{Kind: ToolCall, Calls: tc.FunctionCalls})
	}
	if c := msg.ToolCallCancellation; c != nil {
		s.calls.cancel(c.IDs)
		evs = append(evs, Event{Kind: Cancelled, IDs: c.IDs})
	}
	s.mu.Unlock()
	if g := msg.GoAway; g != nil {
		evs = append(evs, Event{Kind: GoAway, TimeLeft: g.TimeLeft})
	}
	if msg.UsageMetadata != nil {
		evs = append(evs, Event{Kind: Usage, Usage: msg.UsageMetadata})
	}
	if sc := msg.ServerContent; sc != nil {
		evs = append(evs, s.content(sc)...)
	}
	for _, ev := range evs {
		if !s.emit(ctx, ev) {
			return false
		}
	}
	return true
}

// content turns server content into events: text and audio as they come,
// transcriptions piece by piece and whole when the turn ends.
func (s *Session) content(sc *genai.LiveServerContent) []Event {
	var evs []Event
	if sc.ModelTurn != nil {
		for _, p := range sc.ModelTurn.Parts {
			if p.Text != "" && !p.Thought {
				evs = append(evs, Event{Kind: Text, Text: p.Text})
			}
			if p.InlineData != nil {
				evs = append(evs, Event{Kind: Audio, Audio: p.InlineData})
			}
		}
	}
	if t := sc.InputTranscription; t != nil && t.Text != "" {
		s.heard.WriteString(t.Text)
		evs = append(evs, Event{Kind: Transcript, Role: genai.RoleUser, Text: t.Text})
	}
	if t := sc.OutputTranscription; t != nil && t.Text != "" {
		s.said.WriteString(t.Text)
		evs = append(evs, Event{Kind: Transcript, Role: genai.RoleModel, Text: t.Text})
	}
	if !sc.Interrupted && !sc.TurnComplete {
		return evs
	}
	for _, f := range []struct {
		role string
		b    *strings.Builder
	}{{genai.RoleUser, &s.heard}, {genai.RoleModel, &s.said}} {
		if f.b.Len() > 0 {
			evs = append(evs, Event{Kind: Transcript, Role: f.role, Text: f.b.String(), Final: true})
			f.b.Reset()
		}
	}
	if sc.Interrupted {
		evs = append(evs, Event{Kind: Interrupted})
	}
	if sc.TurnComplete {
		evs = append(evs, Event{Kind: TurnComplete})
	}
	return evs
}

// heardFrom records in since what server content says the model heard
// and said. s.mu is held.
func (s *Session) heardFrom(sc *genai.LiveServerContent) {
	if t := sc.InputTranscription; t != nil && t.Text != "" {
		s.since.userWords(t.Text)
	}
	if sc.ModelTurn != nil {
		for _, p := range sc.ModelTurn.Parts {
			switch {
			case p.Text != "" && !p.Thought:
				s.since.modelOutput(p.Text)
			case p.InlineData != nil:
				s.since.modelOutput("")
			}
		}
	}
	if t := sc.OutputTranscription; t != nil && t.Text != "" {
		s.since.modelOutput(t.Text)
	}
	if sc.Interrupted || sc.TurnComplete {
		s.since.turnEnded()
	}
}

// emit hands an event to the reader of Events; false once closing.
func (s *Session) emit(ctx context.Context, ev Event) bool {
	select {
	case s.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}
