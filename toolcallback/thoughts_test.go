package toolcallback_test

import (
	"bytes"
	"context"
	"iter"
	"slices"
	"strings"
	"testing"

	"google.golang.org/adk/v2/model"

	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/thoughts"
	"github.com/baton-run/baton/toolcallback"
)

// unsigned is a model whose calls carry no thought signature (a model
// before Gemini 3, a live model).
type unsigned struct{ *modeltest.Strict }

func (m unsigned) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		for resp, err := range m.Strict.GenerateContent(ctx, req, stream) {
			if resp != nil && resp.Content != nil {
				for _, p := range resp.Content.Parts {
					p.ThoughtSignature = nil
				}
			}
			if !yield(resp, err) {
				return
			}
		}
	}
}

// TestModelChangeKeepsPausedCall: a call paused under one model is
// answered on an instance whose agent runs another model, one that checks
// thought signatures as Gemini 3 does. The resumed request carries the
// documented skip value on the call (never the old model's signature, nor
// none), so the model takes it; a call the same model resumes keeps its
// own signature. The stored call event names the model that made it.
func TestModelChangeKeepsPausedCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		before  func(*modeltest.Strict) model.LLM
		after   string // the model name of the resuming instance
		wantSig func() []byte
	}{
		{"paused under another model", func(m *modeltest.Strict) model.LLM { return m }, "gemini-new", thoughts.Dummy},
		{"made without a signature", func(m *modeltest.Strict) model.LLM { return unsigned{m} }, "gemini-new", thoughts.Dummy},
		{"same model", func(m *modeltest.Strict) model.LLM { return m }, "gemini-old", func() []byte { return modeltest.Signature("gemini-old") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			old := &modeltest.Strict{T: t, Model: "gemini-old", Script: []modeltest.Reply{callReply(call("c1", "change_bgm", map[string]any{"track": 2}))}}
			if _, err := f.turn(f.instanceWith(f.client, tc.before(old)), "s1", "tab-a", "change the music to track 2"); err != nil {
				t.Fatalf("Turn() error = %v", err)
			}
			if got := makerOfCall(f, "s1", "c1"); got != "gemini-old" {
				t.Errorf("stored call event made by %q, want gemini-old", got)
			}

			now := &modeltest.Strict{T: t, Model: tc.after, Script: []modeltest.Reply{echoReply}}
			res, _, err := resume(f.instanceWith(f.client, now), t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 2}})
			if err != nil || res.Invocation == nil {
				t.Fatalf("Resume() = %+v, %v, want the agent resumed", res, err)
			}
			if now.Calls() != 1 {
				t.Fatalf("the new model took %d requests, want 1 (a refused request fails the test)", now.Calls())
			}
			req := now.LastRequest()
			var sig []byte
			for _, c := range req.Contents {
				for _, p := range c.Parts {
					if p.FunctionCall != nil && p.FunctionCall.Name == "change_bgm" {
						sig = p.ThoughtSignature
					}
				}
			}
			if want := tc.wantSig(); !bytes.Equal(sig, want) {
				t.Errorf("resumed request's call signature = %x, want %x\n%s", sig, want, dumpContents(req.Contents))
			}
		})
	}
}

// makerOfCall is the model the stored event holding call id was made by.
func makerOfCall(f *fixture, chat, id string) string {
	for _, ev := range f.history(chat) {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionCall != nil && p.FunctionCall.ID == id {
				return thoughts.MakerOf(ev.LLMResponse)
			}
		}
	}
	f.t.Fatalf("no stored event holds call %q", id)
	return ""
}

// TestThoughtSummaries: with IncludeThoughts every request asks for
// thought summaries; the model's summary is stored with its event, goes
// back to the model as a thought part after a resume (never as text: the
// strict model refuses that), and an agent switch leaves it out of what
// the next agent sees. Without the option nothing asks for them.
func TestThoughtSummaries(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, func(o *toolcallback.Options) { o.IncludeThoughts = true })
	f.concierge.Script = []reply{callReply(call("c1", "get_location", nil)), echoReply}
	f.dj.Script = []reply{textReply("Track 2.")}
	if _, _, err := f.turn("chat", "", "where am I?"); err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	res, _, err := resume(f.team, t.Context(), "chat", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"lat": 1}})
	if err != nil || res.Invocation == nil {
		t.Fatalf("Resume() = %+v, %v", res, err)
	}
	thoughts := f.concierge.Thoughts()
	if len(thoughts) != 2 {
		t.Fatalf("concierge gave %d thought summaries, want 2 (one per request)", len(thoughts))
	}
	if dump := dumpContents(f.concierge.LastRequest().Contents); !strings.Contains(dump, `thought("`+thoughts[0]+`")`) {
		t.Errorf("the resumed request lacks the first response's thought part:\n%s", dump)
	}
	var stored int
	for _, ev := range storedEvents(t, f.sessions, "chat~0") {
		for _, p := range ev.Content.Parts {
			if p.Thought && slices.Contains(thoughts, p.Text) {
				stored++
			}
		}
	}
	if stored != 2 {
		t.Errorf("%d stored thought parts, want 2", stored)
	}

	if _, _, err := f.turn("chat", "dj", "play track 2"); err != nil {
		t.Fatalf("switch to dj: %v", err)
	}
	dump := dumpContents(f.dj.LastRequest().Contents)
	for _, th := range thoughts {
		if strings.Contains(dump, th) {
			t.Errorf("the DJ's request carries the concierge's thought %q:\n%s", th, dump)
		}
	}

	plain := newTeamFixture(t)
	plain.concierge.Script = []reply{textReply("hi")}
	if _, _, err := plain.turn("chat", "", "hello"); err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	if got := plain.concierge.Thoughts(); len(got) != 0 {
		t.Errorf("without IncludeThoughts the model gave summaries %q, want none", got)
	}
}
