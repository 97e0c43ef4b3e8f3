package limits

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
)

// Limits are the limits of one caller's turns. A zero field sets no limit.
type Limits struct {
	UserTurnsPerMinute int   // turns a user may start in any 60 s
	ChatTurnsPerMinute int   // turns one chat may start in any 60 s
	UserTokensPerDay   int64 // model tokens a user may use per UTC day
	// LiveSegmentsPerUser bounds the live segments a user may hold at once
	// (see Reading.CountLive).
	LiveSegmentsPerUser int
	// ServiceTokensPerDay caps the model tokens of the whole deployment,
	// every user's, per UTC day (service.go).
	ServiceTokensPerDay int64
	// NewAnonymousPerDay caps the anonymous users the deployment admits
	// per UTC day: a caller it applies to (the door sets it for an
	// anonymous user who signed in that day) is admitted with its first
	// turn, once, while the day's count is below it (service.go).
	NewAnonymousPerDay int64
}

// Zero reports whether l limits nothing.
func (l Limits) Zero() bool { return l == Limits{} }

var (
	// ErrRateLimited: the turn would exceed a turn rate limit. The
	// *LimitError says which and how long to wait.
	ErrRateLimited = errors.New("rate limited")
	// ErrBudgetExhausted: the user has used the day's token budget. The
	// *LimitError says how long until the next day.
	ErrBudgetExhausted = errors.New("token budget exhausted")
	// ErrLiveSegments: the user holds as many live segments as the limit
	// allows; one must end before another opens.
	ErrLiveSegments = errors.New("too many live segments")
)

// liveRetry is the wait a refusal for ErrLiveSegments suggests: a live
// segment ends when its user closes it, so any figure is a guess; a
// segment whose holder died frees its place within a lease term.
const liveRetry = 15 * time.Second

// LimitError refuses a turn for one of its Limits. It wraps
// ErrRateLimited or ErrBudgetExhausted.
type LimitError struct {
	Err        error  // ErrRateLimited or ErrBudgetExhausted
	Scope      string // "user" or "chat"
	Limit      int64
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: %s limit %d; retry after %s", e.Err, e.Scope, e.Limit, e.RetryAfter.Round(time.Second))
}

func (e *LimitError) Unwrap() error { return e.Err }

// TTLs lists the time-to-live fields of this package's documents.
var TTLs = []sessionstore.TTL{{CollectionGroup: sessionstore.LimitsCollection, Field: "gcAt"}}

// rateWindow is the window of the turn rate limits.
const rateWindow = time.Minute

// checkRate refuses a turn at now when times holds limit turns or more in
// the window before it (limit 0: no limit), saying when the oldest that
// must leave the window does.
func checkRate(scope string, times []time.Time, limit int, now time.Time) error {
	if limit <= 0 {
		return nil
	}
	recent := inWindow(times, now)
	if len(recent) < limit {
		return nil
	}
	wait := recent[len(recent)-limit].Add(rateWindow).Sub(now)
	return refuse(ErrRateLimited, scope, int64(limit), max(wait, time.Millisecond))
}

// inWindow returns the times of times within the rate window before now,
// sorted.
func inWindow(times []time.Time, now time.Time) []time.Time {
	from := now.Add(-rateWindow)
	out := make([]time.Time, 0, len(times))
	for _, t := range times {
		if t.After(from) && !t.After(now) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// logged is times with now added, keeping what a limit of limit turns can
// still need: the window's latest turns, at most limit of them.
func logged(times []time.Time, now time.Time, limit int) []time.Time {
	out := append(inWindow(times, now), now)
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// budgetError refuses a turn once tokens, the user's count of the day at
// now, has reached budget (0: no budget).
func budgetError(tokens, budget int64, now time.Time) error {
	if budget <= 0 || tokens < budget {
		return nil
	}
	next := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	return refuse(ErrBudgetExhausted, "user", budget, next.Sub(now))
}

// TokensUsed is what a model response's usage metadata counts.
func TokensUsed(u *genai.GenerateContentResponseUsageMetadata) int64 {
	if u == nil {
		return 0
	}
	if u.TotalTokenCount > 0 {
		return int64(u.TotalTokenCount)
	}
	return int64(u.PromptTokenCount) + int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount) + int64(u.ToolUsePromptTokenCount)
}

// turnsDoc is a user's recent turn times (the user's turns document).
type turnsDoc struct {
	Times []time.Time `firestore:"times"`
	// Expires is the TTL field: once the last turn leaves the window the
	// document says nothing.
	Expires time.Time `firestore:"gcAt"`
}

// userTurns is a user's turns document as read: its times and update
// time, the condition of the commit that writes it.
type userTurns struct {
	name    sessionstore.DocName
	times   []time.Time
	exists  bool
	version time.Time
}

// turnsFrom decodes a user's turns document.
func turnsFrom(name sessionstore.DocName, doc sessionstore.StoredDoc) (*userTurns, error) {
	u := &userTurns{name: name, exists: doc.Exists()}
	if !u.exists {
		return u, nil
	}
	u.version = doc.UpdateTime()
	var d turnsDoc
	if err := doc.DataTo(&d); err != nil {
		return nil, fmt.Errorf("decode turn times: %w", err)
	}
	u.times = d.Times
	return u, nil
}

// DataKinds are the kinds of a person's data this package keeps (see
// sessionstore.DataKind).
var DataKinds = []sessionstore.DataKind{
	{Name: "turn and token counts", Owner: "limits", Collection: sessionstore.LimitsCollection, Path: "{root}/{app}/users/{user}/limits/{turns|tokens-day}",
		Scope: sessionstore.ScopeUser, Export: sessionstore.ExportUsage, Kept: "until the account is deleted; Firestore collects each a day after its window"},
}
