// Package authtest gives tests the Firebase Auth emulator, through which the
// functions verify ID tokens with the Firebase Admin SDK exactly as in
// production, minus the signature (the emulator's tokens are unsigned, and
// the Admin SDK accepts them only while FIREBASE_AUTH_EMULATOR_HOST is set).
//
// The first call to [Emulator] (or [Start]) in a test binary starts one (see
// internal/emulator.StartAuth: node, and firebase-tools installed once with
// npm ci) and sets FIREBASE_AUTH_EMULATOR_HOST for the rest of the binary, so
// that every Admin SDK client made after it talks to the emulator. A package
// that uses it stops it from its TestMain:
//
//	func TestMain(m *testing.M) { firestoretest.Main(m, authtest.Stop) }
//
// Unlike the Firestore harness it does not use an emulator named by the
// environment: the tokens an emulator issues name the project it was started
// for, and each test binary names its own.
//
// Without node or npm, tests that need it skip, except when CI=true, where
// they fail: a skip is not a pass.
//
// This is its own package rather than part of firestoretest because it
// serves another emulator to other tests (functions and local), and
// firestoretest's name says what it holds.
package authtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/emulator"
)

// HostEnv is the variable the Admin SDK reads to talk to the emulator.
const HostEnv = "FIREBASE_AUTH_EMULATOR_HOST"

// APIKey is the API key test clients send; the emulator accepts any.
const APIKey = "test-api-key"

// startTimeout bounds the emulator's start: about 1.5 s of CPU, generous
// for a loaded 2-core machine (before its launcher compiled validators
// lazily, a start there once took over a minute).
const startTimeout = 3 * time.Minute

var state struct {
	sync.Mutex
	project string
	started chan struct{} // closed once the start ended, with e or err set
	e       *emulator.Emulator
	err     error
}

// Start starts the binary's emulator for project in the background, so
// that it is ready, or nearer to it, when a test first asks for it
// (Emulator). A TestMain calls it before the tests that start other
// things run.
func Start(project string) {
	state.Lock()
	defer state.Unlock()
	startLocked(project)
}

// startLocked starts the emulator for project unless it was started, and
// returns the channel closed once that start ended. state is locked.
func startLocked(project string) <-chan struct{} {
	if state.started == nil {
		state.project = project
		started := make(chan struct{})
		state.started = started
		go func() {
			e, err := emulator.StartAuth(project, startTimeout, func(msg string) { fmt.Fprintln(os.Stderr, "authtest:", msg) })
			if err == nil {
				err = os.Setenv(HostEnv, e.Addr)
			}
			state.Lock()
			state.e, state.err = e, err
			state.Unlock()
			close(started)
		}()
	}
	return state.started
}

// Emulator returns the address of the binary's Auth emulator, started for
// project on first use (or by Start). If it cannot start, it skips the
// test, or fails it under CI=true. Every call in a binary must name the
// same project.
func Emulator(tb testing.TB, project string) string {
	tb.Helper()
	state.Lock()
	started := startLocked(project)
	state.Unlock()
	<-started
	state.Lock()
	defer state.Unlock()
	if state.err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("firebase auth emulator: %v\nCI=true, so this fails instead of skipping: %s", state.err, emulator.AuthInstallHint)
		}
		tb.Skipf("firebase auth emulator: %v", state.err)
	}
	if project != state.project {
		tb.Fatalf("authtest.Emulator(%q): this binary's emulator serves project %q", project, state.project)
	}
	return state.e.Addr
}

// Stop stops the emulator this binary started, if any, once its start
// ended.
func Stop() {
	state.Lock()
	started := state.started
	state.Unlock()
	if started == nil {
		return
	}
	<-started
	state.Lock()
	defer state.Unlock()
	if state.e != nil {
		state.e.Stop()
		os.Unsetenv(HostEnv)
	}
	state.started, state.e, state.err = nil, nil, nil
}

// User is a user signed in to the emulator.
type User struct {
	UID     string
	IDToken string
}

// SignUp signs a new anonymous user in through the emulator at addr, as the
// Firebase JS SDK's signInAnonymously does, and returns its uid and ID token.
func SignUp(tb testing.TB, addr string) User {
	tb.Helper()
	var out struct {
		LocalID string `json:"localId"`
		IDToken string `json:"idToken"`
	}
	post(tb, "http://"+addr+"/identitytoolkit.googleapis.com/v1/accounts:signUp?key="+APIKey, false,
		map[string]any{"returnSecureToken": true}, &out)
	if out.LocalID == "" || out.IDToken == "" {
		tb.Fatalf("signUp: no localId or idToken in the answer")
	}
	return User{UID: out.LocalID, IDToken: out.IDToken}
}

// SignUpWithEmail signs a new user up with an email and a password
// (sign-in provider "password", not "anonymous") through the emulator at
// addr, and returns its uid and ID token.
func SignUpWithEmail(tb testing.TB, addr, email string) User {
	tb.Helper()
	return withPassword(tb, addr, "signUp", email)
}

// SignIn signs in again a user signed up with SignUpWithEmail, and
// returns a fresh ID token: one that carries the custom claims set on
// the user since (an operator's claim, a block).
func SignIn(tb testing.TB, addr, email string) User {
	tb.Helper()
	return withPassword(tb, addr, "signInWithPassword", email)
}

// withPassword calls the emulator's accounts:method with email and the
// tests' password.
func withPassword(tb testing.TB, addr, method, email string) User {
	tb.Helper()
	var out struct {
		LocalID string `json:"localId"`
		IDToken string `json:"idToken"`
	}
	post(tb, "http://"+addr+"/identitytoolkit.googleapis.com/v1/accounts:"+method+"?key="+APIKey, false,
		map[string]any{"email": email, "password": "secret-password", "returnSecureToken": true}, &out)
	if out.LocalID == "" || out.IDToken == "" {
		tb.Fatalf("%s %s: no localId or idToken in the answer", method, email)
	}
	return User{UID: out.LocalID, IDToken: out.IDToken}
}

// CreateUser adds a user with the given uid to the emulator at addr, through
// the admin API, which takes uids that sign-up never generates (ones Baton
// must refuse as ids, say). A token for it is one of the emulator's with its
// sub and user_id claims changed: in emulator mode the Admin SDK skips the
// signature but looks the user up. A uid the emulator already has (the
// test run again, with -count) is kept as it is.
func CreateUser(tb testing.TB, addr, project, uid string) {
	tb.Helper()
	var out struct {
		Error []struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	post(tb, "http://"+addr+"/identitytoolkit.googleapis.com/v1/projects/"+project+"/accounts:batchCreate", true,
		map[string]any{"users": []map[string]any{{"localId": uid}}}, &out)
	if len(out.Error) > 0 && !strings.Contains(out.Error[0].Message, "belongs to an existing account") {
		tb.Fatalf("batchCreate %q: %s", uid, out.Error[0].Message)
	}
}

// post sends body to the emulator; admin adds its administrator credential.
func post(tb testing.TB, url string, admin bool, body, out any) {
	tb.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		tb.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if admin {
		req.Header.Set("Authorization", "Bearer owner")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("POST %s: %s: %s", url, resp.Status, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		tb.Fatalf("POST %s: %v", url, err)
	}
}
