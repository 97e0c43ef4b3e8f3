package geminilive

import (
	"slices"
	"strings"

	"google.golang.org/genai"
)

// since is what the current model session took after its latest handle,
// in the order it took it: the user's turns (typed, or heard: the input
// transcription), the model's words and calls, the responses written. A
// handle restores the model session as it was when issued, and Gemini
// issues none while a call is in flight, so a connection resumed from it
// lacks all of this: the session replays it as context before anything
// else (replay). The words close into turns where the conversation
// (package live) closes its stored messages: the user's before the
// model's at a tool call and at the end of a model turn, the model's when
// the user speaks again; so the model's context is the chat's stored
// conversation.
//
// It also says whether the model owes an answer (a user turn written,
// not answered yet): a connection the model will close (goAway) is kept
// until it is paid or the connection ends, and a replay whose last turn
// is unanswered asks for the answer.
type since struct {
	turns     []*genai.Content
	heard     strings.Builder // the user's words not yet closed into a turn
	said      strings.Builder // the model's, likewise
	answering bool            // the model's turn is under way
	owed      bool            // a user turn waits for the model's answer
	// skipEnd: owed was set while the model was answering; what it says
	// before that turn ends answers the earlier turn, not this one.
	skipEnd bool
	askAt   int // with skipEnd: where in turns that turn is
	// covered is how many turns the model's output followed: a handle
	// issued after that output holds them. A turn written after it may
	// have reached the model after the handle was issued, so a handle
	// leaves it in since.
	covered int
}

// handle forgets what a new handle covers: the turns the model's output
// followed, and its words.
func (h *since) handle() {
	h.turns = slices.Clone(h.turns[h.covered:])
	h.askAt = max(h.askAt-h.covered, 0)
	h.covered = 0
	h.said.Reset()
}

// cover records that the model's output follows the turns so far (but a
// turn written while it answered an earlier one).
func (h *since) cover() {
	if h.skipEnd {
		h.covered = max(h.covered, h.askAt)
		return
	}
	h.covered = len(h.turns)
}

// seeded forgets everything: a new model session was seeded with the
// stored conversation.
func (h *since) seeded() {
	*h = since{}
}

// wrote records a turn written to the model; asks: the model answers it.
func (h *since) wrote(asks bool, turns ...*genai.Content) {
	if asks {
		h.owed, h.skipEnd, h.askAt = true, h.answering, len(h.turns)
	}
	h.turns = append(h.turns, turns...)
}

// userWords records words of the user the model heard.
func (h *since) userWords(text string) {
	if h.said.Len() > 0 {
		h.closeModel(nil)
	}
	h.heard.WriteString(text)
}

// modelOutput records the model speaking (text: its words, if any).
func (h *since) modelOutput(text string) {
	h.answering = true
	if h.owed && !h.skipEnd {
		h.owed = false
	}
	h.cover()
	h.said.WriteString(text)
}

// called records the model's calls, closing the words before them;
// waits: the model waits for their responses (a blocking call), so its
// turn is over until then.
func (h *since) called(calls []*genai.FunctionCall, waits bool) {
	h.modelOutput("")
	h.closeUser()
	h.closeModel(calls)
	h.cover()
	if waits {
		h.answering, h.skipEnd = false, false
	}
}

// turnEnded records the end of a model turn (complete or interrupted).
func (h *since) turnEnded() {
	h.closeUser()
	h.closeModel(nil)
	h.cover()
	h.answering, h.skipEnd = false, false
}

func (h *since) closeUser() {
	if h.heard.Len() > 0 {
		h.turns = append(h.turns, genai.NewContentFromText(h.heard.String(), genai.RoleUser))
		h.heard.Reset()
	}
}

func (h *since) closeModel(calls []*genai.FunctionCall) {
	c := &genai.Content{Role: genai.RoleModel}
	if h.said.Len() > 0 {
		c.Parts = append(c.Parts, genai.NewPartFromText(h.said.String()))
		h.said.Reset()
	}
	for _, fc := range calls {
		c.Parts = append(c.Parts, &genai.Part{FunctionCall: fc})
	}
	if len(c.Parts) > 0 {
		h.turns = append(h.turns, c)
	}
}

// idle reports whether the model neither speaks nor owes an answer, nor
// heard words it has not answered.
func (h *since) idle() bool {
	return !h.owed && !h.answering && h.heard.Len() == 0
}

// replay is what a connection resumed from the latest handle is sent
// first: the turns taken since, without the calls not answered among them
// (their answers go as call-and-response pairs) nor the responses to calls
// made before the handle (they go again as toolResponses); ids are the
// calls whose call and response it holds. ask: its last user turn is
// unanswered, so the model is to answer it. The replay is what the new
// connection's model session holds from then on.
func (h *since) replay() (turns []*genai.Content, ask bool, ids []string) {
	unanswered := h.heard.Len() > 0
	h.closeUser()
	h.closeModel(nil)
	h.owed = h.owed || unanswered
	made, answered := map[string]bool{}, map[string]bool{}
	for _, c := range h.turns {
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				made[p.FunctionCall.ID] = true
			}
			if p.FunctionResponse != nil && made[p.FunctionResponse.ID] {
				answered[p.FunctionResponse.ID] = true
			}
		}
	}
	for _, c := range h.turns {
		kept := slices.DeleteFunc(slices.Clone(c.Parts), func(p *genai.Part) bool {
			return (p.FunctionCall != nil && !answered[p.FunctionCall.ID]) || (p.FunctionResponse != nil && !answered[p.FunctionResponse.ID])
		})
		if len(kept) > 0 {
			turns = append(turns, &genai.Content{Role: c.Role, Parts: kept})
		}
	}
	for id := range answered {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	h.turns = slices.Clone(turns)
	h.answering, h.skipEnd, h.covered = false, false, 0
	return turns, h.owed && len(turns) > 0, ids
}
