//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/emulator"
	"github.com/baton-run/baton/internal/firestoretest"
)

// TestLiveSurvivesRestart runs the page's live mode through a runner
// restart mid-call (local/e2e/live-restart.mjs in headless Chromium with a
// fake microphone): the page goes live and asks where it is, its location
// is held, the runner is SIGKILLed and started again on the same port; the
// page reconnects by itself, shows the call again without running it
// again, answers it once, and the agent speaks the location. The stored
// conversation then holds the call, its answer and the agent's words about
// it once each. Without node or Chromium it skips, except under CI=true,
// where it fails.
func TestLiveSurvivesRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser scenarios are not short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node, chromium := browserTools(ctx, t)
	firestoretest.NewClient(t) // the shared emulator, which outlives the runner
	project := fmt.Sprintf("live-restart-%d", time.Now().UnixNano())
	port, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	first := startRunnerAt(t, project, port)

	cmd := exec.CommandContext(ctx, node, "live-restart.mjs")
	cmd.Dir = "e2e"
	cmd.Env = append(os.Environ(), "BATON_URL="+first.url, "CHROMIUM="+chromium)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lineLogger{t: t, prefix: "live-restart: "}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The script says when to kill, and says ok at its end.
	var user, chat string
	var crashed time.Time
	ok := false
	for lines := bufio.NewScanner(stdout); lines.Scan(); {
		line := lines.Text()
		t.Log("live-restart: " + line)
		switch f := strings.Fields(line); {
		case len(f) == 3 && f[0] == "kill":
			user, chat = f[1], f[2]
			first.kill()
			crashed = time.Now()
			startRunnerAt(t, project, port)
			fmt.Fprintln(stdin, "restarted")
		case line == "ok":
			ok = true
			t.Logf("crash to the call answered and the segment ended: %s", time.Since(crashed).Round(100*time.Millisecond))
		}
	}
	err = cmd.Wait()
	stderr.flush()
	if err != nil || !ok {
		t.Fatalf("live-restart.mjs: %v (ok said: %t)", err, ok)
	}
	checkAnsweredOnce(t, first.url, user, chat)
}

// checkAnsweredOnce reads the chat as GET /Chat/{chatId} shows it: one
// get_location call, answered with the page's location, and one answer of
// the agent's naming it.
func checkAnsweredOnce(t *testing.T, base, user, chat string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/Chat/"+url.PathEscape(chat), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Baton-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var view struct {
		Messages []struct {
			Parts []struct {
				Type   string         `json:"type"`
				State  string         `json:"state"`
				Text   string         `json:"text"`
				Output map[string]any `json:"output"`
			} `json:"parts"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&view); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /Chat/%s = %d, %v", chat, resp.StatusCode, err)
	}
	calls, said := 0, 0
	for _, m := range view.Messages {
		for _, p := range m.Parts {
			switch {
			case p.Type == "tool-get_location":
				calls++
				if p.State != "output-available" || p.Output["latitude"] != 48.85 {
					t.Errorf("the get_location call is stored as %s with %v, want answered with the page's location", p.State, p.Output)
				}
			case strings.Contains(p.Text, "You are at latitude 48.85, longitude 2.35."):
				said++
			}
		}
	}
	if calls != 1 || said != 1 {
		t.Errorf("stored: %d get_location calls and %d answers naming the location, want 1 and 1: %+v", calls, said, view.Messages)
	}
}
