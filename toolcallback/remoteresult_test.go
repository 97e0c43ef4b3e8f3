package toolcallback_test

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/internal/a2apeer"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/usechat"
)

// menuText is the file the test's remote serves by URL (serveMenu).
const menuText = "Blue Room: jazz at nine; Soho Hall: a quiz at eight."

// serveMenu has the peer serve menuText at GET /files/menu.txt.
func serveMenu(p *a2apeer.Peer) {
	p.Handle("GET /files/menu.txt", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(menuText))
	})
}

// posterBytes stand for an image a remote sends inline.
var posterBytes = []byte("\x89PNG\r\n\x1a\n a poster of tonight's concert")

// a2uiPart is an A2UI message as a data part, marked as the A2UI
// extension marks it.
func a2uiPart(msg map[string]any) *a2a.Part {
	p := a2a.NewDataPart(msg)
	p.MediaType = "application/json+a2ui"
	p.Metadata = map[string]any{"mimeType": "application/json+a2ui"}
	return p
}

// tonightSurface is a card the remote draws: a surface with one text.
func tonightSurface() []*a2a.Part {
	return []*a2a.Part{
		a2uiPart(map[string]any{"version": "v0.9", "createSurface": map[string]any{"surfaceId": "tonight", "catalogId": a2ui.BasicCatalogID}}),
		a2uiPart(map[string]any{"version": "v0.9", "updateComponents": map[string]any{"surfaceId": "tonight", "components": []any{
			map[string]any{"id": "root", "component": "Text", "text": "Jazz at the Blue Room, 9pm"}}}}),
	}
}

// TestRemoteAgentFiles: the files of a remote's result, inline or by URL
// (fetched by the remote's outbound rules), are stored in the chat's file
// store as files of the chat, named after the call and the part; the
// model gets their bytes with the call's response, as it gets a user's
// file; the page's history shows them as files of the assistant's message
// that made the call; a file over BATON_MAX_FILE_BYTES becomes a line of
// the answer, not a failure. The result's A2UI parts are shown as a
// surface of the same message, under an id of the call's own.
func TestRemoteAgentFiles(t *testing.T) {
	t.Parallel()
	opts := &toolcallback.Options{MaxFileBytes: 1024}
	gcs := withFiles(t, opts)
	f := newRemoteFixture(t, a2apeer.Works, opts, eventsCall, echoReply)
	serveMenu(f.peer)
	f.peer.Result = func(url string) []*a2a.Part {
		poster := a2a.NewRawPart(posterBytes)
		poster.Filename, poster.MediaType = "poster.png", "image/png"
		menu := a2a.NewFileURLPart(a2a.URL(url+"/files/menu.txt"), "")
		menu.Filename = "menu.txt"
		big := a2a.NewRawPart(bytes.Repeat([]byte("x"), 2048))
		big.Filename, big.MediaType = "big.bin", "application/octet-stream"
		return append([]*a2a.Part{a2a.NewTextPart("here is what is on"), poster, menu, big}, tonightSurface()...)
	}
	f.peer.Release()
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	got := toJSON(f.waitResponse("chat", "c1"))
	for _, want := range []string{`"poster.png"`, `"menu.txt"`, `big.bin`, `larger than 1024 bytes`, `"remote-c1-tonight"`} {
		if !strings.Contains(got, want) {
			t.Errorf("response = %s, want %s in it", got, want)
		}
	}
	polltest.Until(t, "the agent's reply stored", func() bool {
		return strings.Contains(finalText(f.history("chat")), "here is what is on")
	})

	// Stored as files of the chat, once each.
	objects, err := gcs.Objects(t.Context(), "app/user-1/chat/")
	if err != nil {
		t.Fatal(err)
	}
	if len(objects) != 2 || !strings.Contains(strings.Join(objects, " "), "remote-c1-1") || !strings.Contains(strings.Join(objects, " "), "remote-c1-2") {
		t.Errorf("stored objects = %v, want the poster and the menu, named after the call and part", objects)
	}

	// The model got the bytes with the response (the strict model refuses
	// a reference left in a request).
	req := f.model.LastRequest()
	var inline [][]byte
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.InlineData != nil {
				inline = append(inline, p.InlineData.Data)
			}
		}
	}
	if len(inline) != 2 || !bytes.Equal(inline[0], posterBytes) || string(inline[1]) != menuText {
		t.Errorf("inline files of the model's request = %q, want the poster's and the menu's bytes", inline)
	}

	// The page's history: files and the surface in the call's message.
	events := eventlistOf(f.history("chat"))
	var files []string
	var callMessage string
	surfaces := map[string]string{}
	for _, item := range usechat.History(events, events.Len()) {
		switch {
		case item.ToolCallID == "c1":
			callMessage = item.MessageID
		case item.File != nil:
			files = append(files, item.Role+" "+item.MessageID+" "+item.File.MediaType)
		case item.Surface != nil:
			surfaces[item.Surface.SurfaceID] = item.MessageID
		}
	}
	want := []string{"assistant " + callMessage + " image/png", "assistant " + callMessage + " text/plain"}
	if callMessage == "" || !slices.Equal(files, want) {
		t.Errorf("files the history shows = %q, want %q", files, want)
	}
	if surfaces["remote-c1-tonight"] != callMessage {
		t.Errorf("surfaces the history shows = %v, want remote-c1-tonight in message %q", surfaces, callMessage)
	}
}

// TestRemoteAgentRefusedSurface: A2UI parts the catalog refuses are not
// shown; the answer says why, and the call is answered all the same.
func TestRemoteAgentRefusedSurface(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, a2apeer.Works, nil, eventsCall, echoReply)
	f.peer.Result = func(string) []*a2a.Part {
		return []*a2a.Part{a2a.NewTextPart("here is a card"),
			a2uiPart(map[string]any{"version": "v0.9", "updateComponents": map[string]any{"surfaceId": "nowhere", "components": []any{
				map[string]any{"id": "root", "component": "Marquee", "text": "!"}}}})}
	}
	f.peer.Release()
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	got := toJSON(f.waitResponse("chat", "c1"))
	if !strings.Contains(got, "A2UI surface was not shown") || !strings.Contains(got, "here is a card") {
		t.Errorf("response = %s, want the text and a line saying the surface was refused", got)
	}
	if drawn := a2ui.DrawnIn(eventlistOf(f.history("chat"))); len(drawn) != 0 {
		t.Errorf("surfaces shown = %+v, want none", drawn)
	}
}

// TestRemoteQuestionSurface: an A2UI surface in a remote's question is
// shown as its text in the question the person answers (the form is
// Baton's own; the surface is not drawn), and the answer goes back as the
// reply's text.
func TestRemoteQuestionSurface(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, a2apeer.Asks, nil, eventsCall, echoReply)
	f.peer.Question = []*a2a.Part{
		a2uiPart(map[string]any{"version": "v0.9", "createSurface": map[string]any{"surfaceId": "where", "catalogId": a2ui.BasicCatalogID}}),
		a2uiPart(map[string]any{"version": "v0.9", "updateComponents": map[string]any{"surfaceId": "where", "components": []any{
			map[string]any{"id": "root", "component": "Text", "text": "Old town or harbour?"}}}}),
	}
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	q := f.openQuestion("chat")
	if !strings.Contains(q.Input.Message, "Which part of town?") || !strings.Contains(q.Input.Message, "Old town or harbour?") {
		t.Errorf("question = %q, want the remote's text and its surface's", q.Input.Message)
	}
	if _, err := f.answerQuestion("chat", q.ID, "Soho"); err != nil {
		t.Fatal(err)
	}
	if got := toJSON(f.waitResponse("chat", "c1")); !strings.Contains(got, "jazz at the Blue Room in Soho") {
		t.Errorf("response = %s", got)
	}
	if drawn := a2ui.DrawnIn(eventlistOf(f.history("chat"))); len(drawn) != 0 {
		t.Errorf("surfaces drawn = %+v, want none", drawn)
	}
}

// TestRemoteAgentFileWithoutStore: a deployment with no file store keeps
// no file of a remote's result; the answer says so, with the URL the
// remote gave, and the call is answered.
func TestRemoteAgentFileWithoutStore(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, a2apeer.Works, nil, eventsCall, echoReply)
	serveMenu(f.peer)
	f.peer.Result = func(url string) []*a2a.Part {
		menu := a2a.NewFileURLPart(a2a.URL(url+"/files/menu.txt"), "text/plain")
		menu.Filename = "menu.txt"
		return []*a2a.Part{a2a.NewTextPart("here is the menu"), menu}
	}
	f.peer.Release()
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	got := toJSON(f.waitResponse("chat", "c1"))
	if !strings.Contains(got, `the file \"menu.txt\" was not kept: this deployment stores no files`) || !strings.Contains(got, "/files/menu.txt") ||
		strings.Contains(got, `"files"`) {
		t.Errorf("response = %s, want a note naming the file and its URL, and no files", got)
	}
}
