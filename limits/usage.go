package limits

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/baton-run/baton/sessionstore"
)

// Usage is what the turn limits count of a user, as an export shows it.
type Usage struct {
	// RecentTurns are the times of the user's turns still in the rate
	// limits' window.
	RecentTurns []time.Time `json:"recentTurns"`
	// TokensToday are the model tokens the user's sessions used this UTC
	// day, deleted sessions' included.
	TokensToday int64 `json:"tokensToday"`
	// DeletedSessionTokens are the tokens of deleted sessions, by UTC day,
	// kept so that a deletion does not give a day's budget back.
	DeletedSessionTokens map[string]int64 `json:"deletedSessionTokens"`
}

// Usage reads what the limits count of user at now: the user's turns
// document, the day documents (one query) and today's sum over the
// user's sessions.
func (c *Counter) Usage(ctx context.Context, user string, now time.Time) (*Usage, error) {
	u := &Usage{RecentTurns: []time.Time{}, DeletedSessionTokens: map[string]int64{}}
	col := c.sessions.Client().Doc(c.sessions.UserDoc(c.app, user).Path()).Collection(sessionstore.LimitsCollection)
	snaps, err := col.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("read turn counts: %w", sessionstore.FirestoreError(err))
	}
	for _, snap := range snaps {
		switch day, isDay := strings.CutPrefix(snap.Ref.ID, "tokens-"); {
		case isDay:
			var d struct {
				Tokens int64 `firestore:"tokens"`
			}
			if err := snap.DataTo(&d); err != nil {
				return nil, fmt.Errorf("decode %s: %w", snap.Ref.ID, err)
			}
			u.DeletedSessionTokens[day] = d.Tokens
		default:
			var d turnsDoc
			if err := snap.DataTo(&d); err != nil {
				return nil, fmt.Errorf("decode %s: %w", snap.Ref.ID, err)
			}
			u.RecentTurns = append(u.RecentTurns, inWindow(d.Times, now)...)
		}
	}
	live, err := c.sessions.SessionTokens(ctx, c.app, user, now)
	if err != nil {
		return nil, err
	}
	u.TokensToday = live + u.DeletedSessionTokens[utcDay(now)]
	return u, nil
}
