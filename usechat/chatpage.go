package usechat

// Pages of a conversation: GET /Chat/{chatId}?limit=50&before=<messageId>
// answers the messages just before a message (without before, the latest
// ones), so that a page loads a long chat a page at a time, backwards.
// Pages end at whole messages, and a message has the same id in every
// page and every read, however many events the read held.

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"github.com/baton-run/baton/toolcallback"
)

// defaultPage is how many messages a page holds unless limit says
// otherwise (at most maxPage).
const defaultPage = 50

// maxPage bounds the messages a page may hold.
const maxPage = 100

// wholeHistory asks Team.Pending for every event of the chat's session.
const wholeHistory = -1

// pageQuery is what GET /Chat/{chatId} asks for: at most limit messages,
// the last ones before the message before names ("": the latest).
type pageQuery struct {
	limit  int
	before string
}

func readPageQuery(v url.Values) (pageQuery, error) {
	if v.Has("history") {
		return pageQuery{}, fmt.Errorf("%w: history (events) is replaced by limit (messages) and before", errBadRequest)
	}
	q := pageQuery{limit: defaultPage, before: v.Get("before")}
	if v.Has("before") && q.before == "" {
		return pageQuery{}, fmt.Errorf("%w: before must name a message", errBadRequest)
	}
	if v.Has("limit") {
		n, err := strconv.Atoi(v.Get("limit"))
		if err != nil || n < 1 || n > maxPage {
			return pageQuery{}, fmt.Errorf("%w: limit must be 1 to %d", errBadRequest, maxPage)
		}
		q.limit = n
	}
	return q, nil
}

// chatPage answers a pageQuery.
type chatPage struct {
	messages []uiMessageView
	earlier  bool // the chat has messages before these
	missing  bool // before names no message of the chat
}

// page answers q from state. It reports false when it cannot: state holds
// a window of the session's recent events that does not reach back far
// enough (or may not hold the message before names).
func (q pageQuery) page(state *toolcallback.PendingState) (chatPage, bool) {
	messages := uiMessages(state.History, state.History.Len(), state.Calls)
	if !state.Whole {
		// The window may begin inside an assistant message: it begins
		// at its first user message, whose event is whole.
		i := slices.IndexFunc(messages, func(m uiMessageView) bool { return m.Role == "user" })
		if i < 0 {
			return chatPage{}, false
		}
		messages = messages[i:]
	}
	end := len(messages)
	if q.before != "" {
		end = slices.IndexFunc(messages, func(m uiMessageView) bool { return m.ID == q.before })
	}
	if !state.Whole && end < q.limit {
		return chatPage{}, false
	}
	if end < 0 {
		return chatPage{missing: true}, true
	}
	start := max(end-q.limit, 0)
	return chatPage{messages: messages[start:end], earlier: start > 0 || !state.Whole}, true
}
