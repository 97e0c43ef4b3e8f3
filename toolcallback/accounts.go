package toolcallback

import (
	"context"
	"errors"
	"time"

	"github.com/baton-run/baton/sessionstore"
)

// A user deleted in the identity provider (Firebase Authentication) is
// noticed by Sweep, without anyone calling Baton: every
// Options.AccountCheckEvery, it walks the users that have data
// (sessionstore's account documents, in the order of their ids, from a
// cursor it stores) and asks Options.AccountGone about accountBatch of them
// per sweep; the data of each user it no longer has is deleted as
// DeleteAccount deletes it. A user is noticed at most AccountCheckEvery
// plus one sweep per accountBatch users after being deleted. Account
// deletions that were asked for and did not finish are finished first.

// accountBatch is how many users one sweep asks AccountGone about, and
// how many unfinished account deletions it takes up.
const accountBatch = 100

// sweepAccounts finishes account deletions that did not, then asks about
// the next users.
func (t *Team) sweepAccounts(ctx context.Context, now time.Time, report *SweepReport) error {
	deleting, err := t.sessions.AccountsDeleting(ctx, t.app, now.Add(-deleteGrace), accountBatch)
	if err != nil {
		return err
	}
	for _, user := range deleting {
		if ctx.Err() != nil {
			return nil
		}
		if err := t.sweepAccount(ctx, user, report); err != nil {
			return err
		}
	}
	if t.opts.AccountGone == nil || ctx.Err() != nil {
		return nil
	}
	return t.checkAccounts(ctx, now, report)
}

// sweepAccount finishes the deletion of user's account; one a chat still
// holds is left for the next sweep.
func (t *Team) sweepAccount(ctx context.Context, user string, report *SweepReport) error {
	_, err := t.finishAccount(ctx, user)
	switch {
	case errors.Is(err, ErrDeletionPending):
		report.Skipped++
		return nil
	case err != nil:
		t.opts.Logger.Warn("account deletion", "error", err)
		return nil
	}
	report.Accounts++
	return nil
}

// checkAccounts asks AccountGone about the next batch of users with data,
// from the stored cursor, and deletes the data of those it no longer has.
func (t *Team) checkAccounts(ctx context.Context, now time.Time, report *SweepReport) error {
	cursor, err := t.sessions.GetAccountCursor(ctx, t.app)
	if err != nil {
		return err
	}
	if cursor.After == "" {
		if !cursor.PassStarted.IsZero() && now.Sub(cursor.PassStarted) < t.opts.AccountCheckEvery {
			return nil // the last pass is recent enough
		}
		cursor.PassStarted = now
	}
	users, err := t.sessions.AccountsAfter(ctx, t.app, cursor.After, accountBatch)
	if err != nil {
		return err
	}
	gone := []string{}
	if len(users) > 0 {
		if gone, err = t.opts.AccountGone(ctx, users); err != nil {
			return err
		}
		report.Checked += len(users)
	}
	for _, user := range gone {
		if ctx.Err() != nil {
			return nil
		}
		t.opts.Logger.Info("the identity provider has no such user any more: deleting the user's data")
		if _, err := t.sessions.MarkAccountDeleting(ctx, t.app, user, now); err != nil {
			return err
		}
		if err := t.sweepAccount(ctx, user, report); err != nil {
			return err
		}
	}
	next := sessionstore.AccountCursor{PassStarted: cursor.PassStarted}
	if len(users) == accountBatch {
		next.After = users[len(users)-1]
	}
	return t.sessions.SetAccountCursor(ctx, t.app, next)
}
