package console

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// The actions an operator takes. Each validates its input (ErrBadInput,
// nothing written), records itself before it runs and when it ended
// (record.go), and goes through the path a client's request takes.

// Target names what an action is on.
type Target struct {
	User, Chat, Call string
}

// maxReason bounds an operator's reason.
const maxReason = 2000

// check validates t: the ids it needs (user always; chat and call when
// want says so).
func (t Target) check(chat, call bool) error {
	ids := []struct {
		kind, v string
		need    bool
	}{{"user id", t.User, true}, {"chat id", t.Chat, chat}, {"call id", t.Call, call}}
	for _, id := range ids {
		if !id.need {
			continue
		}
		if err := sessionstore.ValidateID(id.kind, id.v); err != nil {
			return fmt.Errorf("%w: %w", ErrBadInput, err)
		}
	}
	return nil
}

// do records a, runs act, and records how it ended.
func (c *Console) do(ctx context.Context, a *Action, act func() (string, error)) error {
	if err := c.begin(ctx, a); err != nil {
		return err
	}
	detail, err := act()
	c.end(ctx, a, detail, err)
	return err
}

// stopWait bounds how long a stop waits for the turn it stops to end.
const stopWait = 5 * time.Second

// Stop stops what runs in a chat (a turn, a live segment) or the turn
// paused there: Team.Stop.
func (c *Console) Stop(ctx context.Context, operator string, t Target) (*toolcallback.StopReport, error) {
	if err := t.check(true, false); err != nil {
		return nil, err
	}
	var report *toolcallback.StopReport
	err := c.do(ctx, &Action{Operator: operator, What: "stop", User: t.User, Chat: t.Chat}, func() (string, error) {
		var err error
		report, err = c.team.Stop(ctx, t.User, t.Chat, stopWait)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("running %v, ended %v, cancelled %v", report.Running, report.Ended, report.Cancelled), nil
	})
	return report, err
}

// AnswerOutcome is what an operator's answer led to.
type AnswerOutcome struct {
	Call    CallRow  `json:"call"`
	Resumed bool     `json:"resumed"`           // the agent ran with the step's answers
	Waiting []string `json:"waiting,omitempty"` // other calls of the step still pending
	// Deferred: the chat was busy; the sweeper or the next turn delivers.
	Deferred bool `json:"deferred,omitempty"`
}

// Answer answers a waiting call for the user (an output or an error, or
// for an approval a decision), through Team.Resume: the first answer
// wins, and the agent resumes as it would for the user's own; the
// request waits for the resumed invocation to end.
func (c *Console) Answer(ctx context.Context, operator string, t Target, answer toolcallback.Answer) (*AnswerOutcome, error) {
	if err := t.check(true, true); err != nil {
		return nil, err
	}
	if err := answerShape(answer); err != nil {
		return nil, err
	}
	what := "answer"
	if answer.Approved != nil && !*answer.Approved || answer.Error != "" {
		what = "reject"
	}
	reason, _ := json.Marshal(answer)
	var out *AnswerOutcome
	err := c.do(ctx, &Action{Operator: operator, What: what, User: t.User, Chat: t.Chat, Call: t.Call, Reason: truncate(string(reason))}, func() (string, error) {
		res, err := c.team.Resume(ctx, toolcallback.ResumeRequest{UserID: t.User, ChatID: t.Chat, CallID: t.Call, Operator: operator, Answer: answer})
		if err != nil {
			return "", err
		}
		out, err = outcome(res)
		return fmt.Sprintf("resumed %v, waiting %v, deferred %v", out.Resumed, out.Waiting, out.Deferred), err
	})
	return out, err
}

// Expire closes a waiting call for reason, which the model reads:
// Team.ExpireCall.
func (c *Console) Expire(ctx context.Context, operator string, t Target, reason string) (*AnswerOutcome, error) {
	if err := t.check(true, true); err != nil {
		return nil, err
	}
	if reason == "" || len(reason) > maxReason {
		return nil, fmt.Errorf("%w: a reason of 1 to %d bytes, which the model reads", ErrBadInput, maxReason)
	}
	var out *AnswerOutcome
	err := c.do(ctx, &Action{Operator: operator, What: "expire", User: t.User, Chat: t.Chat, Call: t.Call, Reason: reason}, func() (string, error) {
		res, err := c.team.ExpireCall(ctx, t.User, t.Chat, t.Call, reason)
		if err != nil {
			return "", err
		}
		out, err = outcome(res)
		return fmt.Sprintf("resumed %v, waiting %v, deferred %v", out.Resumed, out.Waiting, out.Deferred), err
	})
	return out, err
}

// answerShape refuses an answer that is not exactly one of an output, an
// error and a decision (with an approval's optional payload), before
// anything is recorded; what the call itself takes, Resume checks.
func answerShape(a toolcallback.Answer) error {
	set := 0
	for _, ok := range []bool{a.Output != nil, a.Error != "", a.Approved != nil} {
		if ok {
			set++
		}
	}
	if set != 1 || (a.Payload != nil && a.Approved == nil) {
		return fmt.Errorf("%w: an answer is exactly one of output, error and approved (a payload only with approved)", ErrBadInput)
	}
	return nil
}

// outcome waits for the invocation res started, if any.
func outcome(res *toolcallback.ResumeOutcome) (*AnswerOutcome, error) {
	out := &AnswerOutcome{Call: callRow(res.Call), Waiting: res.Waiting, Deferred: res.Deferred}
	if res.Invocation != nil {
		out.Resumed = true
		if err := res.Invocation.Wait(); err != nil {
			return out, fmt.Errorf("resumed invocation: %w", err)
		}
	}
	return out, nil
}

// Release releases a chat's lease, fenced: Team.ReleaseLease.
func (c *Console) Release(ctx context.Context, operator string, t Target) (*toolcallback.LeaseReport, error) {
	if err := t.check(true, false); err != nil {
		return nil, err
	}
	var report *toolcallback.LeaseReport
	err := c.do(ctx, &Action{Operator: operator, What: "release-lease", User: t.User, Chat: t.Chat}, func() (string, error) {
		var err error
		report, err = c.team.ReleaseLease(ctx, t.User, t.Chat, operator)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("held %v by %q (fence %d, live %v)", report.Held, report.Holder, report.Fence, report.Live), nil
	})
	return report, err
}

// Sweep runs the sweep now: Team.Sweep.
func (c *Console) Sweep(ctx context.Context, operator string) (*toolcallback.SweepReport, error) {
	var report toolcallback.SweepReport
	err := c.do(ctx, &Action{Operator: operator, What: "sweep"}, func() (string, error) {
		var err error
		report, err = c.team.Sweep(ctx, platform.Now(ctx))
		return fmt.Sprintf("%+v", report), err
	})
	return &report, err
}

// DeleteUser deletes everything Baton holds for a user, through the
// account deletion (Options.Account).
func (c *Console) DeleteUser(ctx context.Context, operator, user string) error {
	if err := (Target{User: user}).check(false, false); err != nil {
		return err
	}
	if c.opts.Account == nil {
		return fmt.Errorf("%w: this console was built without the account deletion (Options.Account)", ErrUnsupported)
	}
	return c.do(ctx, &Action{Operator: operator, What: "delete-user", User: user}, func() (string, error) {
		return "deleted", c.opts.Account.DeleteAccount(ctx, user)
	})
}

// SetBlocked blocks or unblocks a user where identity is checked
// (Options.Identity).
func (c *Console) SetBlocked(ctx context.Context, operator, user string, blocked bool, reason string) error {
	if err := (Target{User: user}).check(false, false); err != nil {
		return err
	}
	if len(reason) > maxReason {
		return fmt.Errorf("%w: a reason of at most %d bytes", ErrBadInput, maxReason)
	}
	if c.opts.Identity == nil {
		return fmt.Errorf("%w: blocking needs Firebase Auth (development identity has no claims to set)", ErrUnsupported)
	}
	what := "unblock"
	if blocked {
		what = "block"
	}
	return c.do(ctx, &Action{Operator: operator, What: what, User: user, Reason: reason}, func() (string, error) {
		return what + "ed", c.opts.Identity.SetBlocked(ctx, user, blocked)
	})
}

// truncate bounds a recorded text.
func truncate(s string) string {
	if len(s) > maxReason {
		return s[:maxReason] + "…"
	}
	return s
}
