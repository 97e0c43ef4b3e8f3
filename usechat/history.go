package usechat

// The history a reloaded page shows: stored events projected onto the
// items the turns' streams showed, with the same ids. Pending returns the
// items; GET /Chat/{chatId} (chatmessages.go) turns them into UI messages.

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"time"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/transcript"
	"github.com/baton-run/baton/uistream"
)

// HistoryItem is one thing a chat page shows (and GET /Pending lists), in order: a user message, a
// piece of an assistant message (text, or a tool call), or an agent switch.
type HistoryItem struct {
	// Role is "user", "assistant", or "switch" (the chat moved from agent
	// From to agent To, reported with the message that asked for it).
	Role string `json:"role"`
	// MessageID, on assistant items, names the assistant message they
	// belong to: the messageId of the start chunk of the turn's stream and
	// of every resume that continued it. On a switch, it names the message
	// whose stream reported the switch.
	MessageID string `json:"messageId,omitempty"`
	Text      string `json:"text,omitempty"`
	// Reasoning, on an assistant item, is the model's thought summary
	// (a deployment with BATON_INCLUDE_THOUGHTS).
	Reasoning string `json:"reasoning,omitempty"`
	// A tool call: the arguments it ran with (an approver's edit
	// included), then its output or error once it has one, and a person's
	// decision ("approved" or "rejected") on a call that needed approval.
	// A call made before an agent switch is shown the same way.
	ToolCallID string `json:"toolCallId,omitempty"`
	// ApprovalID, on a call that needed approval, is the id of ADK's
	// confirmation request: the approvalId its stream sent.
	ApprovalID string         `json:"approvalId,omitempty"`
	ToolName   string         `json:"toolName,omitempty"`
	Input      map[string]any `json:"input,omitempty"`
	Output     any            `json:"output,omitempty"`
	ErrorText  string         `json:"errorText,omitempty"`
	Approval   string         `json:"approval,omitempty"`
	// Stopped, on an assistant item, says the user stopped its turn: it
	// is what the model had generated (transcript.IsStopNote).
	Stopped bool `json:"stopped,omitempty"`
	// File is a file the message holds: a user's upload, a model's
	// output, or a file a tool saved (chatfiles.SavedFiles).
	File *historyFile `json:"file,omitempty"`
	// Surface, on an assistant item, is an A2UI surface the message showed
	// first, as it last was (the data of its data-a2ui part).
	Surface *uistream.SurfaceData `json:"surface,omitempty"`
	// Action, on a user item, is the A2UI client message holding the
	// action the message sent, as its client sent it.
	Action json.RawMessage `json:"action,omitempty"`
	From   string          `json:"from,omitempty"`
	To     string          `json:"to,omitempty"`
	Time   time.Time       `json:"time"`
}

// historyContext is how many events a history is read with: every event
// Team.Pending reads. The events before the ones shown name the turn a
// window starts in and the approvals its calls were asked with.
const historyContext = math.MaxInt

// History is the history a page shows of events, the last shown of them:
// GET /Pending's.
func History(events session.Events, shown int) []HistoryItem { return history(events, shown) }

// history turns the last shown of events into what a chat page shows, as
// the turns' streams showed it: the same message ids, tool call ids and
// approval ids. The events before them are read for those ids only.
func history(events session.Events, shown int) []HistoryItem {
	from := max(events.Len()-shown, 0)
	calls := readCalls(events)
	decisions := transcript.ApprovalDecisions(events)
	surfaces := surfacesByEvent(events)
	out := []HistoryItem{}
	var run *sessionstore.Switch // the switch that moved the events being read
	turn := ""
	i := -1
	for ev := range events.All() {
		i++
		if ev.Partial || ev.Content == nil {
			continue
		}
		if transcript.StartsTurn(ev) {
			turn = ev.InvocationID
		} else if turn == "" {
			turn = ev.InvocationID // a turn whose message is older than the events read
		}
		sw, records, moved := sessionstore.MovedBy(ev)
		var ended *sessionstore.Switch
		if run != nil && (!moved || !sameSwitch(sw, *run)) {
			ended = run // the switch line goes where its turn showed it: after the user's message
		}
		run = nil
		if moved {
			run = &sw
		}
		if i < from {
			continue
		}
		if ended != nil && !transcript.StartsTurn(ev) {
			out = append(out, switchItem(*ended, turn))
		}
		out = append(out, eventItems(ev, turn, records, calls, decisions)...)
		for _, d := range surfaces[i] {
			out = append(out, HistoryItem{Role: "assistant", MessageID: turn, Time: ev.Timestamp, Surface: d})
		}
		if ended != nil && transcript.StartsTurn(ev) {
			out = append(out, switchItem(*ended, turn))
		}
	}
	if run != nil && from < events.Len() {
		out = append(out, switchItem(*run, ""))
	}
	return out
}

// surfacesByEvent places each surface events show in the event that
// showed it first, as it last was (a2ui.DrawnIn), with the call that waits
// or waited on it.
func surfacesByEvent(events session.Events) map[int][]*uistream.SurfaceData {
	out := map[int][]*uistream.SurfaceData{}
	for _, d := range a2ui.DrawnIn(events) {
		out[d.First] = append(out[d.First], &uistream.SurfaceData{SurfaceID: d.SurfaceID, Messages: d.Messages, CallID: d.CallID})
	}
	return out
}

func sameSwitch(a, b sessionstore.Switch) bool {
	return a.From == b.From && a.To == b.To && a.At.Equal(b.At)
}

// switchItem is a switch shown in turn's message ("" when no turn has
// shown it yet).
func switchItem(sw sessionstore.Switch, turn string) HistoryItem {
	return HistoryItem{Role: "switch", MessageID: turn, From: sw.From, To: sw.To, Time: sw.At}
}

// eventItems are the items of one event: text parts, and tool calls,
// whether function calls or the records an agent switch made of them.
func eventItems(ev *session.Event, turn string, records []sessionstore.MovedCall, calls *callStates, decisions map[string]transcript.ApprovalDecision) []HistoryItem {
	role, message := "assistant", turn
	if ev.Author == "user" {
		role, turn = "user", ""
	}
	recordAt := map[int]sessionstore.MovedCall{}
	for _, r := range records {
		recordAt[r.Part] = r
	}
	var out []HistoryItem
	for i, p := range ev.Content.Parts {
		item := HistoryItem{Role: role, MessageID: turn, Time: ev.Timestamp, Stopped: transcript.IsStopNote(ev)}
		r, isRecord := recordAt[i]
		switch {
		case isRecord:
			item.ToolCallID, item.ToolName, item.Input, item.ApprovalID = r.CallID, r.Tool, r.Args, r.ApprovalID
			item.Output, item.ErrorText = callOutcome(r.Result)
			if r.Outcome != "" {
				item.ErrorText = r.Outcome
			}
			if r.Approved != nil {
				item.Approval = decisionText(*r.Approved)
			}
		case p.Text != "" && p.Thought && role == "assistant":
			item.Reasoning = p.Text
		case p.Text != "" && !p.Thought:
			item.Text = p.Text
			if action, ok := a2ui.ActionOfText(p.Text); ok && role == "user" {
				item.Text, item.Action = "", action.Sent
			}
		case p.FileData != nil || p.InlineData != nil:
			if item.File = newHistoryFile(p); item.File == nil {
				continue
			}
		case p.FunctionCall != nil && role == "assistant" && p.FunctionCall.Name != toolconfirmation.FunctionCallName:
			fc := p.FunctionCall
			item.ToolCallID, item.ToolName, item.Input = fc.ID, fc.Name, fc.Args
			if d, ok := decisions[fc.ID]; ok {
				item.Input, item.Approval = d.Args, decisionText(d.Approved)
			}
			item.ApprovalID = calls.approvals[fc.ID]
			if resp := calls.results[fc.ID]; resp != nil {
				item.Output, item.ErrorText = callOutcome(resp.Response)
			}
		default:
			continue
		}
		out = append(out, item)
	}
	for _, p := range chatfiles.SavedFiles(ev) {
		out = append(out, HistoryItem{Role: role, MessageID: turn, Time: ev.Timestamp, File: newHistoryFile(p)})
	}
	// A call's response may bring files (a remote agent's): files of the
	// assistant's message that made the call, as its streams show them.
	for _, p := range ev.Content.Parts {
		for _, f := range chatfiles.ResponseRefs(p) {
			out = append(out, HistoryItem{Role: "assistant", MessageID: message, Time: ev.Timestamp, File: newHistoryFile(f)})
		}
	}
	return out
}

// callOutcome splits a tool's response into the output or the error text
// a stream reports for it.
func callOutcome(resp map[string]any) (output any, errorText string) {
	if resp == nil {
		return nil, ""
	}
	if e, ok := resp["error"]; ok && e != nil && e != "" {
		return nil, uistream.ErrorText(e)
	}
	return resp, ""
}

func decisionText(approved bool) string {
	if approved {
		return "approved"
	}
	return "rejected"
}

// historyFile is a file of a message: its media type, the name the user
// gave it, and the URL a page shows it at. A stored file's URL is one
// GET /Chat/{chatId} signs (signFileParts); Pending, which may be served
// from another URL than Chat, gives none. A file the session holds inline
// (stored before files went through the file store) is its data URL.
type historyFile struct {
	MediaType string `json:"mediaType"`
	Filename  string `json:"filename,omitempty"`
	URL       string `json:"url,omitempty"`

	ref *chatfiles.Ref // a stored file; nil for an inline one
}

func newHistoryFile(p *genai.Part) *historyFile {
	if ref, ok := chatfiles.RefOf(p); ok {
		return &historyFile{MediaType: ref.MIMEType, Filename: ref.DisplayName, ref: &ref}
	}
	if b := p.InlineData; b != nil {
		return &historyFile{MediaType: b.MIMEType, Filename: b.DisplayName, URL: "data:" + b.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(b.Data)}
	}
	return nil
}
