package toolcallback_test

import (
	"errors"
	"slices"
	"strings"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/toolcallback"
)

// The stop paths join TestCrashAtEveryWrite: a process that dies after
// any write of a stop leaves a transcript the strict model accepts and a
// chat that takes its next turn.
func init() { crashPaths = append(crashPaths, stopCrashPaths...) }

var stopCrashPaths = []crashPath{
	{
		// Another instance of the same process asks; the holder stores
		// what the stop leaves and releases the lease.
		name:        "stop-of-a-running-turn",
		setupScript: []reply{textReply("hello")},
		setup:       func(w *crashWorld, team *toolcallback.Team) error { return w.turnErr(team, "", "hi") },
		script:      []reply{textReply("never sent: the turn is stopped first")},
		run:         (*crashWorld).stopRunning,
		took:        tookRunningStop,
	},
	{
		name:        "stop-of-a-paused-turn",
		setupScript: []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 7}))},
		setup:       func(w *crashWorld, team *toolcallback.Team) error { return w.turnErr(team, "", "track 7") },
		run: func(w *crashWorld, team *toolcallback.Team) []*session.Event {
			_, _ = w.team(w.client, w.model).Stop(w.t.Context(), "user-1", crashChat, 0)
			return nil
		},
		took: tookPausedStop,
	},
}

// stopRunning starts a turn whose model holds until its request ends, and
// stops it from another instance; it returns what the turn streamed.
func (w *crashWorld) stopRunning(team *toolcallback.Team) []*session.Event {
	gate := make(chan struct{}) // the model answers only if the stop is never asked
	w.model.Gate = gate         // no request is in flight: setup's has ended
	calls := w.model.Calls()
	inv, _, err := team.Turn(w.t.Context(), textTurn(crashChat, crashClient, "count slowly"))
	if err != nil {
		return nil
	}
	polltest.Until(w.t, "the turn to call the model", func() bool { return w.model.Calls() > calls })
	if _, err := w.team(w.client, w.model).Stop(w.t.Context(), "user-1", crashChat, 0); err != nil {
		close(gate) // the process died before asking: the turn goes on, and dies too
	}
	events, _ := collect(inv)
	return events
}

// tookRunningStop: a stop request is written, then the holder stores the
// stopped answer in the session.
func tookRunningStop(w *crashWorld, commits []*firestorepb.CommitRequest) error {
	asked := slices.IndexFunc(commits, func(c *firestorepb.CommitRequest) bool {
		return slices.ContainsFunc(c.Writes, func(wr *firestorepb.Write) bool { return strings.Contains(written(wr), "/stops/") })
	})
	if asked < 0 {
		return errors.New("no commit writes a stop request")
	}
	if !slices.ContainsFunc(commits[asked+1:], func(c *firestorepb.CommitRequest) bool { return writesDoc(c, w.sessionDoc(0)) }) {
		return errors.New("nothing is stored in the session after the stop request")
	}
	return nil
}

// tookPausedStop: no stop request (nothing runs); the pending call's
// record is cancelled under the lease.
func tookPausedStop(_ *crashWorld, commits []*firestorepb.CommitRequest) error {
	cancelled := false
	for _, c := range commits {
		for _, wr := range c.Writes {
			if strings.Contains(written(wr), "/stops/") {
				return errors.New("a stop request was written for a paused turn")
			}
			if strings.Contains(written(wr), "/calls/") && wr.GetUpdate().GetFields()["status"].GetStringValue() == string(toolcallback.StatusCancelled) {
				cancelled = true
			}
		}
	}
	if !cancelled {
		return errors.New("no commit cancels the pending call")
	}
	return nil
}
