//go:build !race

// The scale of a person's data (docs/cost.md, "A person's chats"): a chat
// of 1,000 events and 20 files deleted, an account of 50 chats exported
// and deleted, and the export's memory on a large account. Built without
// -race, as the long chat is (longchat_test.go): ./test runs them beside
// the race run.

package functions

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/modeltest"
)

// fillChat gives user's chat its exchanges (two events each), files of
// them carrying a file of fileBytes.
func (f *httpFixture) fillChat(user, chat string, exchanges, files, fileBytes int) {
	f.t.Helper()
	data := randomBytes(fileBytes)
	for i := range exchanges {
		id := fmt.Sprintf("%s-u%d", chat, i)
		msg := userMessage(id, fmt.Sprintf("question %d", i))
		if i < files {
			msg = fileMessage(id, data, "image/png")
		}
		f.stream(f.chat(user, chatBody(chat, "tab-a", msg)))
	}
}

// measure runs fn and returns the Firestore operations and the time it took.
func (f *httpFixture) measure(fn func()) (firestoretest.Ops, time.Duration) {
	before := f.counter.Snapshot()
	start := time.Now()
	fn()
	return f.counter.Snapshot().Sub(before), time.Since(start)
}

// TestDataScale measures the deletion of a chat of 1,000 events and 20
// files, and the export and deletion of an account of 50 chats (10 events
// and a file each), on the emulator; it checks that each ends whole.
func TestDataScale(t *testing.T) {
	t.Parallel()
	f := newHTTPFixtureWith(t, nil, func(c *Config) { c.RequestTimeout = slowRequests })
	f.model.Repeat = modeltest.TextReply("an answer")
	ctx := t.Context()

	f.fillChat("ada", "big", 500, 20, 64<<10)
	objects, err := f.gcs.Objects(ctx, "")
	if err != nil || len(objects) != 20 {
		t.Fatalf("files stored: %d, %v; want 20", len(objects), err)
	}
	ops, took := f.measure(func() {
		if code, body := f.status(http.MethodDelete, NameChat+"/big", "ada", nil, nil); code != http.StatusNoContent {
			t.Fatalf("DELETE /Chat/big: %d %s", code, body)
		}
	})
	t.Logf("DELETE /Chat of 1,000 events and 20 files: %v; %d round trips, %d reads, %d writes (deletes included)",
		took.Round(time.Millisecond), ops.RoundTrips, ops.Lookups(), ops.Writes)
	if objects, err := f.gcs.Objects(ctx, ""); err != nil || len(objects) != 0 {
		t.Errorf("files after the deletion: %v, %v; want none", objects, err)
	}
	if code, _ := f.status(http.MethodGet, NameChat+"/big", "ada", nil, nil); code != http.StatusNotFound {
		t.Errorf("GET /Chat/big after the deletion: %d, want 404", code)
	}

	for i := range 50 {
		f.fillChat("bob", fmt.Sprintf("c%02d", i), 5, 1, 16<<10)
	}
	var size int64
	ops, took = f.measure(func() {
		resp := f.do(http.MethodGet, NameAccount+"/export", f.token("bob"), nil, nil)
		defer resp.Body.Close()
		if size, err = io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /Account/export: %d, %v", resp.StatusCode, err)
		}
	})
	t.Logf("GET /Account/export of 50 chats (500 events, 50 files): %v, %d bytes; %d round trips, %d reads, %d writes",
		took.Round(time.Millisecond), size, ops.RoundTrips, ops.Lookups(), ops.Writes)
	ops, took = f.measure(func() {
		if code, body := f.status(http.MethodDelete, NameAccount, "bob", nil, nil); code != http.StatusNoContent {
			t.Fatalf("DELETE /Account: %d %s", code, body)
		}
	})
	t.Logf("DELETE /Account of 50 chats: %v; %d round trips, %d reads, %d writes (deletes included)",
		took.Round(time.Millisecond), ops.RoundTrips, ops.Lookups(), ops.Writes)
	if got := f.list("bob", "tab-a", "").ids(); len(got) != 0 {
		t.Errorf("bob's chats after the deletion: %v", got)
	}
	if objects, err := f.gcs.Objects(ctx, ""); err != nil || len(objects) != 0 {
		t.Errorf("files after the account's deletion: %d, %v; want none", len(objects), err)
	}
}

// TestExportMemory: the export of an account holds one chat, or one file,
// at a time: exporting 48 MiB of files (48 chats of a 1 MiB file each)
// raises the heap by far less than the export's size.
func TestExportMemory(t *testing.T) {
	// Not parallel: the heap is the process's.
	f := newHTTPFixtureWith(t, nil, func(c *Config) { c.RequestTimeout = slowRequests })
	f.model.Repeat = modeltest.TextReply("an answer")
	const chats, fileBytes = 48, 1 << 20
	for i := range chats {
		f.fillChat("ada", fmt.Sprintf("c%02d", i), 2, 1, fileBytes)
	}
	// Garbage collected soon, so that the peak is what is held: the
	// fixture holds about 160 MiB, and at 10% the garbage a collection
	// allowed (16 MiB) came near the bound on a loaded machine.
	defer debug.SetGCPercent(debug.SetGCPercent(2))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)

	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		quit = make(chan struct{})
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			mu.Lock()
			peak = max(peak, m.HeapAlloc)
			mu.Unlock()
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	resp := f.do(http.MethodGet, NameAccount+"/export", f.token("ada"), nil, nil)
	size, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	close(quit)
	<-done
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /Account/export: %d, %v", resp.StatusCode, err)
	}
	grew := int64(peak) - int64(base.HeapAlloc)
	t.Logf("export of %d chats: %d bytes; heap %d MiB before, %d MiB at most during (+%d MiB)", chats, size,
		base.HeapAlloc>>20, peak>>20, grew>>20)
	if size < chats*fileBytes {
		t.Fatalf("the export is %d bytes, want at least the files' %d", size, chats*fileBytes)
	}
	if limit := int64(24 << 20); grew > limit {
		t.Errorf("the heap grew by %d MiB during the export, want under %d MiB (the export is %d MiB)", grew>>20, limit>>20, size>>20)
	}
}
