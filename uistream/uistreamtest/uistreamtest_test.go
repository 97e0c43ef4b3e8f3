package uistreamtest_test

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/uistream/uistreamtest"
)

const validBody = "data: {\"type\":\"start\",\"messageId\":\"m1\"}\n\n" +
	": keep-alive\n\n" +
	"data: {\"type\":\"start-step\"}\n\n" +
	"data: {\"type\":\"text-start\",\"id\":\"t1\"}\n\n" +
	"data: {\"type\":\"text-delta\",\"id\":\"t1\",\"delta\":\"Hel\"}\n\n" +
	"data: {\"type\":\"text-delta\",\"id\":\"t1\",\"delta\":\"lo\"}\n\n" +
	"data: {\"type\":\"text-end\",\"id\":\"t1\"}\n\n" +
	"data: {\"type\":\"finish-step\"}\n\n" +
	"data: {\"type\":\"finish\"}\n\n" +
	"data: [DONE]\n\n"

// TestParseAndRead: a valid stream parses, passes Check, and reads back
// its types and text.
func TestParseAndRead(t *testing.T) {
	t.Parallel()
	chunks := uistreamtest.Parse(t, validBody)
	uistreamtest.Check(t, chunks)
	want := []string{"start", "start-step", "text-start", "text-delta", "text-delta", "text-end", "finish-step", "finish", "[DONE]"}
	if diff := cmp.Diff(want, uistreamtest.Types(chunks)); diff != "" {
		t.Errorf("Types() (-want +got):\n%s", diff)
	}
	if got := uistreamtest.Text(chunks); got != "Hello" {
		t.Errorf("Text() = %q, want Hello", got)
	}
	if got := len(uistreamtest.OfType(chunks, "text-delta")); got != 2 {
		t.Errorf("OfType(text-delta) = %d chunks, want 2", got)
	}
}

// TestReadLive: Read yields each chunk as soon as its event is complete,
// before the stream has ended; a CRLF stream reads the same, and an event
// cut off by the end is dropped.
func TestReadLive(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	first := make(chan struct{})
	early := make(chan bool, 1)
	go func() {
		fmt.Fprint(w, "data: {\"type\":\"start\"}\r\n\r\n")
		select {
		case <-first: // the reader has the first chunk; the stream goes on
			early <- true
		case <-time.After(10 * time.Second):
			early <- false
		}
		fmt.Fprint(w, "data: {\"type\":\"finish\"}\r\n\r\ndata: [DONE]\r\n\r\ndata: {\"type\":")
		w.Close()
	}()
	var got []string
	for c := range uistreamtest.Read(t, r) {
		got = append(got, c["type"].(string))
		if len(got) == 1 {
			close(first)
		}
	}
	if !<-early {
		t.Error("Read did not yield the first chunk before the stream went on")
	}
	if diff := cmp.Diff([]string{"start", "finish", "[DONE]"}, got); diff != "" {
		t.Errorf("Read() types (-want +got):\n%s", diff)
	}
}

// TestCheckRefuses: Check reports a chunk that breaks the schema or the
// client's rules.
func TestCheckRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		replace string // a chunk of validBody ...
		with    string // ... replaced by this one
		want    string // in the failure
	}{
		{"unknown type", `{"type":"start-step"}`, `{"type":"begin-step"}`, `unknown type "begin-step"`},
		{"missing field", `{"type":"text-end","id":"t1"}`, `{"type":"text-end"}`, `missing field "id"`},
		{"field outside the schema", `{"type":"finish"}`, `{"type":"finish","reason":"stop"}`, `field "reason" not in the schema`},
		{"number for a string", `"delta":"lo"`, `"delta":7`, `field "delta" = 7, want a string`},
		{"text outside its part", `{"type":"text-start","id":"t1"}`, `{"type":"text-start","id":"t2"}`, `text-delta for part "t1" that is not open`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(validBody, tc.replace) {
				t.Fatalf("the valid body has no %s", tc.replace)
			}
			chunks := uistreamtest.Parse(t, strings.Replace(validBody, tc.replace, tc.with, 1))
			rec := &recorder{TB: t}
			done := make(chan struct{})
			go func() { // Fatalf ends the goroutine it is called on
				defer close(done)
				uistreamtest.Check(rec, chunks)
			}()
			<-done
			if !strings.Contains(strings.Join(rec.failures, "\n"), tc.want) {
				t.Errorf("Check() failures = %q, want one saying %s", rec.failures, tc.want)
			}
		})
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
