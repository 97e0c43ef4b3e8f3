package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/emulator"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/uistream/uistreamtest"
)

// recoveryBound is how long after a crash its chat must take a request
// again (DESIGN.md, invariant 7: a crashed holder frees its chat within
// 15 s), counted from when a new instance can serve it.
const recoveryBound = 15 * time.Second

// buildRunner builds the local runner once per test binary.
var buildRunner = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "baton-local-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "baton-local")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// runner is the built local runner as a process of its own, on the test
// emulator, in its own process group so that it can be killed whole.
type runner struct {
	cmd *exec.Cmd
	url string
}

func startRunner(t *testing.T, project string) *runner {
	t.Helper()
	port, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return startRunnerAt(t, project, port)
}

// startRunnerAt starts the runner on port (a restarted one takes its
// predecessor's).
func startRunnerAt(t *testing.T, project, port string) *runner {
	t.Helper()
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(withoutEnv(os.Environ(), "GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"),
		"PORT="+port, "GOOGLE_CLOUD_PROJECT="+project, "BATON_DEV_IDENTITY=true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &runner{cmd: cmd, url: "http://127.0.0.1:" + port}
	t.Cleanup(r.kill)
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if strings.Contains(lines.Text(), "Baton is running at") {
			go io.Copy(io.Discard, stderr)
			return r
		}
	}
	t.Fatal("the local runner exited before it was ready")
	return nil
}

// kill ends the runner's whole process group at once, as an instance that
// is OOM-killed or replaced mid-request.
func (r *runner) kill() {
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	r.cmd.Wait()
}

func (r *runner) post(t *testing.T, path, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Baton-User", "kill-user")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

// TestKillAtToolInput kills the runner the moment the tab is shown a
// browser tool call, restarts it, and completes the call: the call is
// listed, its answer resumes the agent, and the chat takes requests again
// within recoveryBound of the new runner's start.
func TestKillAtToolInput(t *testing.T) {
	t.Parallel()
	firestoretest.NewClient(t) // the shared emulator, started or skipped as the harness decides
	project := fmt.Sprintf("kill-%d", time.Now().UnixNano())
	first := startRunner(t, project)

	resp := first.post(t, "/Turn", `{"sessionId":"k","clientId":"t","text":"change the music to track 2","agent":"dj"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Turn = %d, want a stream", resp.StatusCode)
	}
	callID := ""
	for chunk := range uistreamtest.Read(t, resp.Body) {
		if chunk["type"] == "tool-input-available" {
			callID, _ = chunk["toolCallId"].(string)
			break
		}
	}
	if callID == "" {
		t.Fatal("the stream ended without a tool-input-available chunk")
	}
	first.kill()
	crashed := time.Now()
	resp.Body.Close()

	second := startRunner(t, project)
	restarted := time.Now()
	pending, err := http.NewRequest(http.MethodGet, second.url+"/Pending?"+url.Values{"sessionId": {"k"}, "clientId": {"t"}}.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pending.Header.Set("X-Baton-User", "kill-user")
	presp, err := http.DefaultClient.Do(pending)
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Calls []struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"calls"`
	}
	json.NewDecoder(presp.Body).Decode(&listed)
	presp.Body.Close()
	if len(listed.Calls) != 1 || listed.Calls[0].ToolCallID != callID {
		t.Fatalf("Pending after the crash = %+v, want the streamed call %s", listed.Calls, callID)
	}

	// The answer waits for the dead holder's lease to lapse, then resumes.
	answer := second.post(t, "/ToolResult", fmt.Sprintf(`{"sessionId":"k","clientId":"t","toolCallId":%q,"output":{"playing":2}}`, callID))
	accepted, waited := time.Since(crashed), time.Since(restarted)
	body, _ := io.ReadAll(answer.Body)
	answer.Body.Close()
	if answer.StatusCode != http.StatusOK || !strings.Contains(string(body), `"type":"finish"`) {
		t.Fatalf("ToolResult after the crash = %d %s, want the resumed agent's stream", answer.StatusCode, body)
	}
	t.Logf("crash to resumed answer: %s (of which %s starting the second runner)", accepted.Round(100*time.Millisecond),
		(accepted - waited).Round(100*time.Millisecond))
	// The bound is on the wait Baton imposes once an instance can serve
	// (the dead holder's lease), not on how long a process takes to start
	// on a loaded machine: on a quiet one the runner starts in a second or
	// two, and waited is the crash's recovery time less that.
	if waited > recoveryBound {
		t.Errorf("the chat took %s after the second runner started to take the answer, want at most %s", waited, recoveryBound)
	}

	next := second.post(t, "/Turn", `{"sessionId":"k","clientId":"t","text":"what is 2+2?","agent":"dj"}`)
	io.Copy(io.Discard, next.Body)
	next.Body.Close()
	if next.StatusCode != http.StatusOK {
		t.Errorf("Turn after recovery = %d, want 200", next.StatusCode)
	}
}
