package sessionstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
)

// TurnLog returns the times of the recent turns stored in the session
// document (AppendOptions.TurnLog), oldest first as written; nil for a
// session not stored yet.
func (ss *Session) TurnLog() []time.Time {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return slices.Clone(ss.turnLog)
}

// LimitsCollection is the collection, under each user's state document,
// of the turn limits' counts: the caller's (toolcallback's turn log) and
// the day documents of deleted sessions' tokens (DayTokensDoc).
const LimitsCollection = "limits"

// LimitsDoc names a document of user's LimitsCollection.
func (s *Service) LimitsDoc(app, user, name string) DocName {
	return s.UserDoc(app, user).Child(LimitsCollection, name)
}

// TokenUse is the model tokens an event's response reported, at the time
// of the response (AppendOptions.Tokens).
type TokenUse struct {
	N  int64
	At time.Time
}

// tokenCount is a session's count of one UTC day's tokens.
type tokenCount struct {
	day string
	n   int64
}

// add is the count once u is added (nil when u adds nothing): a count of
// another day starts again.
func (c tokenCount) add(u TokenUse) *tokenCount {
	if u.N <= 0 {
		return nil
	}
	next := tokenCount{day: tokenDay(u.At), n: u.N}
	if next.day == c.day {
		next.n += c.n
	}
	return &next
}

// tokenDay is the UTC day of t, as tokens are counted.
func tokenDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// DayTokensDoc names the document that keeps the tokens user's deleted
// sessions had counted on the UTC day of at ({user}/limits/tokens-{day},
// with a TTL field gcAt a day after the day's end).
func (s *Service) DayTokensDoc(app, user string, at time.Time) DocName {
	return s.LimitsDoc(app, user, "tokens-"+tokenDay(at))
}

// DayTokens decodes a snapshot of a DayTokensDoc document: 0 when it does
// not exist.
func DayTokens(doc StoredDoc) (int64, error) {
	if !doc.Exists() {
		return 0, nil
	}
	var d dayTokensDoc
	if err := doc.DataTo(&d); err != nil {
		return 0, fmt.Errorf("decode token count: %w", err)
	}
	return d.Tokens, nil
}

type dayTokensDoc struct {
	Tokens  int64     `firestore:"tokens"`
	Expires time.Time `firestore:"gcAt"`
}

// SessionTokens sums the tokens user's stored sessions counted on the UTC
// day of at: one aggregation query over the index (sessions: tokensDay,
// tokensUsed), billed as one read per 1,000 sessions counted.
func (s *Service) SessionTokens(ctx context.Context, app, user string, at time.Time) (int64, error) {
	q := s.userRef(app, user).Collection("sessions").Where("tokensDay", "==", tokenDay(at))
	return Aggregate(ctx, q.NewAggregationQuery().WithSum("tokensUsed", "n"), "sum tokens")
}

// Aggregate runs q, an aggregation whose result is named n, and returns
// that integer: a count, or a sum over integers (a double once it
// overflows). The owners of documents beside the sessions aggregate
// their own with it (package limits' counts across users).
func Aggregate(ctx context.Context, q *firestore.AggregationQuery, what string) (int64, error) {
	res, err := q.Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, FirestoreError(err))
	}
	switch n := res.Data()["n"].(type) {
	case int64:
		return n, nil
	case float64:
		return int64(n), nil
	case nil:
		return 0, nil
	default:
		return 0, fmt.Errorf("%s: unexpected result %T", what, n)
	}
}

// carryTokens adds to batch the move of a deleted session's count of
// today's tokens to the user's day document.
func (s *Service) carryTokens(ctx context.Context, batch *firestore.WriteBatch, app, user string, doc *sessionDoc) {
	now := platform.Now(ctx)
	if doc.TokensUsed <= 0 || doc.TokensDay != tokenDay(now) {
		return
	}
	batch.Set(s.client.Doc(s.DayTokensDoc(app, user, now).path), dayTokensAdded(doc.TokensUsed, now), firestore.MergeAll)
}

// dayTokensAdded is the merge that adds n tokens to a day document of now.
func dayTokensAdded(n int64, now time.Time) map[string]any {
	return map[string]any{"tokens": firestore.Increment(n), "gcAt": now.UTC().Truncate(24 * time.Hour).Add(48 * time.Hour)}
}

// AddDayTokens counts n tokens user used on the UTC day of now outside any
// session's commit (a background tool's own model calls) in the user's day
// document, which the day's total includes: one write, an increment, so
// that writers never conflict.
func (s *Service) AddDayTokens(ctx context.Context, app, user string, n int64, now time.Time) error {
	if n <= 0 {
		return nil
	}
	if _, err := s.client.Doc(s.DayTokensDoc(app, user, now).path).Set(ctx, dayTokensAdded(n, now), firestore.MergeAll); err != nil {
		return fmt.Errorf("count tokens: %w", FirestoreError(err))
	}
	return nil
}
