package teamtest

import (
	"context"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/toolcallback"
)

// TextTurn is user's message text to chat, sent from client.
func TextTurn(user, chat, client, text string) toolcallback.TurnRequest {
	return toolcallback.TurnRequest{UserID: user, ChatID: chat, ClientID: client, Content: genai.NewContentFromText(text, genai.RoleUser)}
}

// Turn is team.Turn with what the invocation streamed in place of the
// invocation: every event, or, when the stream fails, the events before
// the failure and its error. A refused turn streams nothing. A test that
// needs the invocation itself (to read events as they come, or to race
// it) calls Team.Turn and Collect.
func Turn(ctx context.Context, team *toolcallback.Team, req toolcallback.TurnRequest) ([]*session.Event, *toolcallback.SwitchReport, error) {
	inv, report, err := team.Turn(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	events, err := Collect(inv)
	return events, report, err
}

// Resume is team.Resume as Turn is team.Turn: the outcome, and the
// events of the invocation the answer resumed, if any.
func Resume(ctx context.Context, team *toolcallback.Team, req toolcallback.ResumeRequest) (*toolcallback.ResumeOutcome, []*session.Event, error) {
	res, err := team.Resume(ctx, req)
	if err != nil || res.Invocation == nil {
		return res, nil, err
	}
	events, err := Collect(res.Invocation)
	return res, events, err
}

// Rewind is team.Rewind as Turn is team.Turn.
func Rewind(ctx context.Context, team *toolcallback.Team, req toolcallback.RewindRequest) ([]*session.Event, error) {
	inv, err := team.Rewind(ctx, req)
	if err != nil {
		return nil, err
	}
	return Collect(inv)
}

// Collect reads inv's events to the end: all of them, or those before the
// stream's error, with it.
func Collect(inv *toolcallback.Invocation) ([]*session.Event, error) {
	var out []*session.Event
	for ev, err := range inv.Events() {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// FinalText is the text of the last complete event that has some.
func FinalText(events []*session.Event) string {
	text := ""
	for _, ev := range events {
		if ev.Partial || ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.Text != "" {
				text = p.Text
			}
		}
	}
	return text
}
