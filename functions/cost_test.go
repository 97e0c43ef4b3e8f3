package functions

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/modeltest"
)

// costBound is the most a request may cost: Firestore round trips before
// the model is first called and in all, lookups (documents found or not,
// what Firestore bills as reads) and writes.
type costBound struct {
	beforeModel, roundTrips, lookups, writes int64
}

// defaultTurnLimits are the turn limits a deployment has by default
// (rate limits on, no token budget).
func defaultTurnLimits(t *testing.T) TurnLimits {
	t.Helper()
	cfg, err := ConfigFromEnv(func(name string) (string, bool) {
		if name == "GOOGLE_CLOUD_PROJECT" {
			return testProject, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.TurnLimits
}

// TestTurnCost holds each request of issue #13's cost table to its bound,
// counting every Firestore RPC the process sends (missing documents
// included); "before the model" counts the RPCs sent before the model's
// first request of the request under test. The deployment's default turn
// limits are on (one lookup and one write more per turn; a resume is not
// counted). Every turn and resume also writes its chat's listing in the
// commits that claim and release the lease (two writes, no round trip:
// docs/cost.md, "A person's chats"), a new chat its user's account
// document in the commit that creates it, and a commit that creates or
// settles calls that wait for a person the listing once more. The agents keep no app: or
// user: state (SessionStateOnly); "default" runs the plain turn without
// that option, where the app and user state documents are looked up too.
func TestTurnCost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		stateOnly bool
		// budget sets a token budget, with a model that reports usage.
		budget bool
		// warm keeps warm turns on (see the package doc of toolcallback,
		// "Warm turns"); the other rows turn them off, so that they measure
		// what a cold instance pays.
		warm bool
		// beside: the turn asks the model beside its commit and the day's
		// token count, so the row holds those until the model was asked
		// (for at most 5 s), and a warm row every read too: a turn that
		// waited for one before asking counts it as a round trip before
		// the model.
		beside bool
		// surfaces: the agent draws with show_surface (surfaceMembers).
		surfaces bool
		config   func(*Config)
		script   []modeltest.Reply
		setup    func(f *httpFixture) // runs before counting starts
		run      func(f *httpFixture)
		bound    costBound
	}{{
		// The instance that served the chat's last turn kept its session:
		// nothing is read, the message's commit (with the lease and the
		// user's turns document) runs beside the model request, and the
		// reply is stored with the lease's release.
		name:      "warm plain turn",
		stateOnly: true,
		warm:      true,
		beside:    true,
		script:    []modeltest.Reply{modeltest.TextReply("first"), modeltest.TextReply("second")},
		setup:     func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "hello")) },
		run:       func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "again")) },
		bound:     costBound{beforeModel: 0, roundTrips: 2, lookups: 0, writes: 5},
	}, {
		name:      "warm plain turn, 5 MB of history",
		stateOnly: true,
		warm:      true,
		beside:    true,
		config:    func(c *Config) { c.MaxBodyBytes = 1 << 20 },
		script:    slices.Repeat([]modeltest.Reply{modeltest.TextReply("noted")}, 7),
		setup: func(f *httpFixture) {
			// Six messages of 900 kB: each fills a session document of its
			// own.
			for range 6 {
				f.stream(f.turn("ada", "s1", "tab-a", strings.Repeat("x", 900_000)))
			}
		},
		run:   func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "again")) },
		bound: costBound{beforeModel: 0, roundTrips: 2, lookups: 0, writes: 5},
	}, {
		// Another instance served the chat's last turn: one read (the chat,
		// its session, the user's turns document), then the model is asked
		// beside the message's commit.
		name:      "plain turn, existing chat",
		stateOnly: true,
		beside:    true,
		script:    []modeltest.Reply{modeltest.TextReply("first"), modeltest.TextReply("second")},
		setup:     func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "hello")) },
		run:       func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "again")) },
		bound:     costBound{beforeModel: 1, roundTrips: 3, lookups: 3, writes: 5},
	}, {
		// Without turn limits: the floor the limits add to.
		name:      "plain turn, existing chat, no limits",
		stateOnly: true,
		beside:    true,
		config:    func(c *Config) { c.TurnLimits = TurnLimits{} },
		script:    []modeltest.Reply{modeltest.TextReply("first"), modeltest.TextReply("second")},
		setup:     func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "hello")) },
		run:       func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "again")) },
		bound:     costBound{beforeModel: 1, roundTrips: 3, lookups: 2, writes: 4},
	}, {
		// With a token budget as well as the rate limits: the day's count
		// (the sum over the user's sessions and the deleted sessions'
		// count) is read beside the model request, and the message's
		// commit waits for it (TestBudgetGatesCommit); the reply's tokens
		// are counted in the session document, which the reply's commit
		// writes anyway. So both limits together add one write, the user's
		// turn log.
		name:      "plain turn, existing chat, token budget",
		stateOnly: true,
		budget:    true,
		beside:    true,
		script:    []modeltest.Reply{modeltest.TextReply("first"), modeltest.TextReply("second")},
		setup:     func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "hello")) },
		run:       func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "again")) },
		bound:     costBound{beforeModel: 1, roundTrips: 4, lookups: 5, writes: 5},
	}, {
		// A warm turn with every limit on: nothing read before the model.
		name:      "warm plain turn, token budget",
		stateOnly: true,
		budget:    true,
		warm:      true,
		beside:    true,
		script:    []modeltest.Reply{modeltest.TextReply("first"), modeltest.TextReply("second")},
		setup:     func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "hello")) },
		run:       func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "again")) },
		bound:     costBound{beforeModel: 0, roundTrips: 4, lookups: 2, writes: 5},
	}, {
		// Agents that may keep app: or user: state: a warm turn also
		// looks up the app and user state documents beside the model, and
		// its commit waits for them to match the copy.
		name:   "warm plain turn, default",
		warm:   true,
		beside: true,
		script: []modeltest.Reply{modeltest.TextReply("first"), modeltest.TextReply("second")},
		setup:  func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "hello")) },
		run:    func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "again")) },
		bound:  costBound{beforeModel: 0, roundTrips: 3, lookups: 2, writes: 5},
	}, {
		name:   "plain turn, existing chat, default",
		beside: true,
		script: []modeltest.Reply{modeltest.TextReply("first"), modeltest.TextReply("second")},
		setup:  func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "hello")) },
		run:    func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "again")) },
		bound:  costBound{beforeModel: 1, roundTrips: 3, lookups: 5, writes: 5},
	}, {
		// An action on a card is checked by the turn's planner against the
		// session the turn reads anyway: it costs what a plain turn costs.
		name:      "card action, existing chat",
		stateOnly: true,
		beside:    true,
		surfaces:  true,
		script:    []modeltest.Reply{showReply(t, "s1", cardJSON, false), modeltest.TextReply("here"), modeltest.TextReply("more")},
		setup: func(f *httpFixture) {
			f.stream(f.chat("ada", chatBody("c1", "tab-a", userMessage("u1", "show the card"))))
		},
		run: func(f *httpFixture) {
			f.stream(f.chat("ada", chatBody("c1", "tab-a", actionMessage("a1", moreAction))))
		},
		bound: costBound{beforeModel: 1, roundTrips: 3, lookups: 3, writes: 5},
	}, {
		name:      "first turn of a new chat",
		stateOnly: true,
		beside:    true,
		script:    []modeltest.Reply{modeltest.TextReply("first")},
		run:       func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "hello")) },
		bound:     costBound{beforeModel: 1, roundTrips: 3, lookups: 3, writes: 6},
	}, {
		name:      "turn that pauses on a browser tool",
		stateOnly: true,
		beside:    true,
		script: []modeltest.Reply{modeltest.TextReply("first"),
			modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2}))},
		setup: func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "hello")) },
		run:   func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "track 2"), "c1") },
		bound: costBound{beforeModel: 1, roundTrips: 4, lookups: 3, writes: 8},
	}, {
		name:      "resume that answers it",
		stateOnly: true,
		script: []modeltest.Reply{modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
			modeltest.EchoReply},
		setup: func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "track 2"), "c1") },
		run:   answerTrack2,
		bound: costBound{beforeModel: 3, roundTrips: 6, lookups: 4, writes: 7},
	}, {
		// The resume marks its records resumed before its last commit, which
		// records that none is open: the next turn goes the short way.
		name:      "turn after a resume",
		stateOnly: true,
		beside:    true,
		script: []modeltest.Reply{modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
			modeltest.EchoReply, modeltest.TextReply("next")},
		setup: func(f *httpFixture) {
			f.stream(f.turn("ada", "s1", "tab-a", "track 2"), "c1")
			answerTrack2(f)
		},
		run:   func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "next")) },
		bound: costBound{beforeModel: 1, roundTrips: 3, lookups: 3, writes: 5},
	}, {
		// On the instance that ran the resume, the session the resume left
		// is the chat's warm copy: nothing is read.
		name:      "warm turn after a resume",
		stateOnly: true,
		warm:      true,
		beside:    true,
		script: []modeltest.Reply{modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
			modeltest.EchoReply, modeltest.TextReply("next")},
		setup: func(f *httpFixture) {
			f.stream(f.turn("ada", "s1", "tab-a", "track 2"), "c1")
			answerTrack2(f)
		},
		run:   func(f *httpFixture) { f.stream(f.turn("ada", "s1", "tab-a", "next")) },
		bound: costBound{beforeModel: 0, roundTrips: 2, lookups: 0, writes: 5},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var (
				f        *httpFixture
				mu       sync.Mutex
				counting bool
				atModel  *firestoretest.Ops
				asked    = make(chan struct{})
			)
			// Each reply notes the operations so far when the model is
			// first asked during the request under test.
			script := make([]modeltest.Reply, len(tt.script))
			for i, r := range tt.script {
				script[i] = func(req *model.LLMRequest) *genai.Content {
					mu.Lock()
					if counting && atModel == nil {
						ops := f.counter.Snapshot()
						atModel = &ops
						close(asked)
					}
					mu.Unlock()
					return r(req)
				}
			}
			f = newHTTPFixtureWith(t, func(f *httpFixture, o *ServerOptions) {
				if tt.surfaces {
					surfaceMembers(t, f)
				}
				o.SessionStateOnly = tt.stateOnly
				if !tt.warm {
					o.WarmChats = -1
				}
			}, func(c *Config) {
				c.TurnLimits = defaultTurnLimits(t)
				if tt.config != nil {
					tt.config(c)
				}
				if tt.budget {
					c.TurnLimits.User.UserTokensPerDay, c.TurnLimits.Anonymous.UserTokensPerDay = 1_000_000, 1_000_000
				}
			}, script...)
			if tt.budget {
				f.model.Usage = &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 100}
			}
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(f.logs.String())
				}
			})
			f.token("ada") // sign in before counting: the Auth emulator is not Firestore
			if tt.setup != nil {
				tt.setup(f)
			}
			if tt.beside {
				holdBeside(f, asked, tt.warm)
			}
			before := f.counter.Snapshot()
			mu.Lock()
			counting = true
			mu.Unlock()
			tt.run(f)
			got := f.counter.Snapshot().Sub(before)
			mu.Lock()
			defer mu.Unlock()
			if atModel == nil {
				t.Fatal("the model was not called")
			}
			pre := atModel.Sub(before)
			t.Logf("%s: %d round trips before the model (%d of them listens), %+v, %d lookups", tt.name, pre.RoundTrips, pre.Listens, got, got.Lookups())
			// A turn that runs longer than toolcallback's stop delay (500 ms)
			// also listens for a Stop: one listen stream, counted apart,
			// since it depends on how long this machine takes, not on what
			// the turn does. It opens in the background, so on a loaded
			// machine it can open before the model is called, without
			// delaying it: no round trip the model waits for.
			if pre.RoundTrips-pre.Listens > tt.bound.beforeModel || got.RoundTrips-got.Listens > tt.bound.roundTrips ||
				got.Lookups() > tt.bound.lookups || got.Writes > tt.bound.writes || got.Listens > 1 {
				t.Errorf("%s cost %d round trips before the model (listens left out), %d in all (%d of them listens, at most 1 allowed), %d lookups, %d writes; want at most %+v",
					tt.name, pre.RoundTrips-pre.Listens, got.RoundTrips, got.Listens, got.Lookups(), got.Writes, tt.bound)
			}
		})
	}
}

// holdBeside holds what a turn asks the model beside until asked is closed
// (the model was asked), or for at most 5 s: each commit, the sum of the
// day's tokens (an aggregation query) and, with reads, every read. A
// request that waits for one of them before asking the model is then seen
// to send it first.
func holdBeside(f *httpFixture, asked <-chan struct{}, reads bool) {
	f.counter.SetHook(func(method string, _ any) error {
		hold := strings.HasSuffix(method, "/Commit") || strings.HasSuffix(method, "/RunAggregationQuery") ||
			reads && strings.HasSuffix(method, "/BatchGetDocuments")
		if hold {
			select {
			case <-asked:
			case <-time.After(5 * time.Second):
			}
		}
		return nil
	})
}

// TestTokenSumBesideRead: with a token budget, the sum of the user's
// sessions' tokens is queried beside the read of the chat, not after it.
// The read is held until the query is sent, which a turn that queried
// after the read would not do until the 5 s are up.
func TestTokenSumBesideRead(t *testing.T) {
	t.Parallel()
	f := newHTTPFixtureWith(t, func(_ *httpFixture, o *ServerOptions) {
		o.SessionStateOnly = true
		o.WarmChats = -1
	}, func(c *Config) {
		c.TurnLimits.User.UserTokensPerDay, c.TurnLimits.Anonymous.UserTokensPerDay = 1_000_000, 1_000_000
	}, modeltest.TextReply("first"), modeltest.TextReply("second"))
	f.model.Usage = &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 100}
	f.stream(f.turn("ada", "s1", "tab-a", "hello"))
	var (
		queried = make(chan struct{})
		once    sync.Once
		mu      sync.Mutex
		reads   int
		late    int
	)
	f.counter.SetHook(func(method string, _ any) error {
		switch {
		case strings.HasSuffix(method, "/RunAggregationQuery"):
			once.Do(func() { close(queried) })
		case strings.HasSuffix(method, "/BatchGetDocuments"):
			mu.Lock()
			reads++
			mu.Unlock()
			select {
			case <-queried:
			case <-time.After(5 * time.Second):
				mu.Lock()
				late++
				mu.Unlock()
			}
		}
		return nil
	})
	f.stream(f.turn("ada", "s1", "tab-a", "again"))
	mu.Lock()
	defer mu.Unlock()
	if reads == 0 || late > 0 {
		t.Errorf("%d reads, %d of them sent 5 s before the token sum was queried: want the sum queried beside the turn's read", reads, late)
	}
}

// answerTrack2 answers the change_bgm call c1 of chat s1 from the tab that
// started the turn, and reads the resumed stream.
func answerTrack2(f *httpFixture) {
	f.stream(f.do(http.MethodPost, NameToolResult, f.token("ada"),
		map[string]any{"sessionId": "s1", "toolCallId": "c1", "clientId": "tab-a", "output": map[string]any{"playing": 2}}, nil), "c1")
}
