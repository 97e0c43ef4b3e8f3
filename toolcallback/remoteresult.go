package toolcallback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/a2aremote"
	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/ledger"
)

// a2uiMediaType marks a data part that holds an A2UI message (A2A 1.0's
// part mediaType, or the A2UI extension's metadata.mimeType).
const a2uiMediaType = "application/json+a2ui"

// remoteResult is the answer a remote task in a terminal state gives c:
// for a completed task, the result's text and data, its files stored in
// the chat's file store, its A2UI messages checked against the catalog;
// an error the model reads for a failed, rejected or cancelled one. What
// cannot be kept (a file too large, at a refused address or unreachable;
// A2UI the catalog refuses) is a line of the answer's "notes", never a
// failure of the call. Storing the same result again (a notification
// repeated, a process that died before the answer was recorded) stores
// no file twice: each is named after the call and its part.
func (e *engine) remoteResult(ctx context.Context, c *Call, rt *RemoteTool, task *a2aremote.Task) Answer {
	why := a2aremote.Text(task.Message)
	switch task.State {
	case a2aremote.Failed:
		return Answer{Error: "the remote agent's task failed: " + why}
	case a2aremote.Rejected:
		return Answer{Error: "the remote agent rejected the task: " + why}
	case a2aremote.Canceled:
		return Answer{Error: "the remote agent's task was cancelled: " + why}
	}
	if rt == nil {
		return Answer{Error: fmt.Sprintf("the tool %q is not declared as a remote agent of this deployment", c.Tool)}
	}
	parts := task.Parts
	if len(parts) == 0 {
		parts = task.Message
	}
	r := remoteResultOf{e: e, c: c, rt: rt, out: map[string]any{"state": string(task.State), "text": a2aremote.Text(parts)}}
	var data, files []any
	var ui []any
	for i, p := range parts {
		switch {
		case p.Data != nil && isA2UI(p):
			ui = append(ui, p.Data)
		case p.Data != nil:
			data = append(data, p.Data)
		case p.URL != "" || p.Raw != nil:
			if f := r.file(ctx, i, p); f != nil {
				files = append(files, f)
			}
		}
	}
	r.surfaces(ui)
	if data != nil {
		r.out["data"] = data
	}
	if files != nil {
		r.out["files"] = files
	}
	if r.notes != nil {
		r.out["notes"] = r.notes
	}
	a := Answer{Output: r.out, Files: r.files, Surfaces: r.shows}
	if b, err := json.Marshal(a); err != nil || len(b) > e.opts.MaxAnswerBytes {
		return Answer{Error: fmt.Sprintf("the remote agent's result is larger than %d bytes", e.opts.MaxAnswerBytes)}
	}
	return a
}

// remoteResultOf is a remote's result being made into its call's answer.
type remoteResultOf struct {
	e     *engine
	c     *Call
	rt    *RemoteTool
	out   map[string]any
	notes []string
	files []ledger.File
	shows []a2ui.Message
}

// isA2UI reports whether p, a data part, holds an A2UI message.
func isA2UI(p a2aremote.Part) bool {
	mt, _ := p.Metadata["mimeType"].(string)
	return p.MediaType == a2uiMediaType || mt == a2uiMediaType
}

// file stores p, the i-th part of the result, a file by its bytes or by
// URL, in the chat's file store as remote-{call}-{i}, and returns what
// the model reads of it (nil when it was not kept: a note says why).
func (r *remoteResultOf) file(ctx context.Context, i int, p a2aremote.Part) map[string]any {
	name := p.Filename
	if name == "" {
		name = "file " + strconv.Itoa(i+1)
	}
	limit := r.e.opts.MaxFileBytes
	if r.e.opts.Files == nil {
		note := fmt.Sprintf("the file %q was not kept: this deployment stores no files", name)
		if p.URL != "" {
			note += fmt.Sprintf(" (the remote gave its URL: %q)", p.URL)
		}
		r.notes = append(r.notes, note)
		return nil
	}
	data, mediaType := p.Raw, p.MediaType
	if p.Raw == nil {
		var fetched string
		var err error
		data, fetched, err = r.rt.agent.Fetch(ctx, p.URL, limit)
		if err != nil {
			r.notes = append(r.notes, fmt.Sprintf("the file %q was not kept: %s", name, fetchRefusal(err, limit)))
			return nil
		}
		if mediaType == "" {
			mediaType = fetched
		}
	}
	if int64(len(data)) > limit {
		r.notes = append(r.notes, fmt.Sprintf("the file %q was not kept: %s", name, fetchRefusal(a2aremote.ErrFileTooLarge, limit)))
		return nil
	}
	if mediaType == "" {
		mediaType = http.DetectContentType(data)
	}
	chat := r.c.Chat
	if chat == "" {
		chat = r.c.SessionID
	}
	ref, err := r.e.opts.Files.SaveOnce(ctx, r.c.UserID, chat, "remote-"+r.c.ID+"-"+strconv.Itoa(i),
		&genai.Blob{Data: data, MIMEType: mediaType, DisplayName: p.Filename})
	if err != nil {
		r.e.opts.Logger.Warn("store a remote agent's file", "call", r.c.ID, "part", i, "error", err)
		r.notes = append(r.notes, fmt.Sprintf("the file %q was not kept: it could not be stored", name))
		return nil
	}
	r.files = append(r.files, ledger.File{URI: ref.Part().FileData.FileURI, MediaType: mediaType, Name: p.Filename})
	return map[string]any{"name": name, "mediaType": mediaType, "bytes": len(data)}
}

// fetchRefusal is what the model reads of why a file was not fetched.
func fetchRefusal(err error, limit int64) string {
	switch {
	case errors.Is(err, a2aremote.ErrFileTooLarge):
		return fmt.Sprintf("it is larger than %d bytes (BATON_MAX_FILE_BYTES)", limit)
	case errors.Is(err, a2aremote.ErrBlockedAddress):
		return "its address is not one a remote agent's file may come from (loopback, private or link-local)"
	}
	return "it could not be fetched"
}

// surfaces checks ui, the A2UI messages of the result, against the
// remote's catalog, as a model's surface is checked, on their own: a
// remote draws only surfaces it creates. Their ids are prefixed with the
// call's, so that they never name a surface of the chat's own.
func (r *remoteResultOf) surfaces(ui []any) {
	if len(ui) == 0 {
		return
	}
	msgs, err := decodeA2UI(r.rt.catalog, ui)
	if err != nil {
		r.notes = append(r.notes, "the remote agent's A2UI surface was not shown: "+err.Error())
		return
	}
	var ids []string
	for i := range msgs {
		id := remoteSurfaceID(r.c.ID, &msgs[i])
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	r.shows = msgs
	r.out["surfaces"] = ids
}

// decodeA2UI checks ui, A2UI messages (each data part one message, or a
// list of them), against catalog, on their own.
func decodeA2UI(catalog *a2ui.Catalog, ui []any) ([]a2ui.Message, error) {
	var flat []any
	for _, v := range ui {
		if list, ok := v.([]any); ok {
			flat = append(flat, list...)
			continue
		}
		flat = append(flat, v)
	}
	raw, err := json.Marshal(flat)
	if err != nil {
		return nil, err
	}
	return catalog.Decode(raw, &a2ui.Surfaces{})
}

// questionSurfaces is the text of the A2UI surfaces parts, the message
// of a remote's question, draw: the question's form is Baton's own (one
// answer, sent back as the reply's text), so a surface there is shown as
// its text (a2ui.Surface.Text), not drawn, and takes no presses. ""
// when the parts draw none, or the catalog refuses them.
func (rt *RemoteTool) questionSurfaces(parts []a2aremote.Part) string {
	var ui []any
	for _, p := range parts {
		if p.Data != nil && isA2UI(p) {
			ui = append(ui, p.Data)
		}
	}
	if len(ui) == 0 {
		return ""
	}
	msgs, err := decodeA2UI(rt.catalog, ui)
	if err != nil {
		return ""
	}
	shown := &a2ui.Surfaces{}
	if shown.Apply(msgs...) != nil {
		return ""
	}
	var out []string
	for _, id := range shown.IDs() {
		if sf, ok := shown.Surface(id); ok {
			out = append(out, sf.Text())
		}
	}
	return strings.Join(out, "\n\n")
}

// remoteSurfaceID renames the surface m names to one of call's own, and
// returns the new id.
func remoteSurfaceID(call string, m *a2ui.Message) string {
	id := "remote-" + call + "-" + m.SurfaceID()
	switch {
	case m.CreateSurface != nil:
		m.CreateSurface.SurfaceID = id
	case m.UpdateComponents != nil:
		m.UpdateComponents.SurfaceID = id
	case m.UpdateDataModel != nil:
		m.UpdateDataModel.SurfaceID = id
	case m.DeleteSurface != nil:
		m.DeleteSurface.SurfaceID = id
	}
	return id
}

// noteRemoteShows has ev, an event that delivers answers, show the A2UI
// surfaces of the remote calls among resumed whose responses it holds
// (a2ui.Calls.NoteShows notes them), checked against the surfaces the
// chat's events show. A surface refused there (none should be: the ids
// are the call's own) is logged and not shown.
func (e *engine) noteRemoteShows(events session.Events, ev *session.Event, resumed []*Call, shows *a2ui.Calls) {
	if ev.Content == nil || ev.Author != "user" {
		return
	}
	byID := map[string]*Call{}
	for _, c := range resumed {
		if c.Kind == KindRemote && c.Answer != nil && len(c.Answer.Surfaces) > 0 {
			byID[c.ID] = c
		}
	}
	for _, p := range ev.Content.Parts {
		if p == nil || p.FunctionResponse == nil || byID[p.FunctionResponse.ID] == nil {
			continue
		}
		c := byID[p.FunctionResponse.ID]
		rt := e.remote[c.Tool]
		if rt == nil {
			continue
		}
		shown, err := rt.catalog.Show(events, c.ID, c.Answer.Surfaces...)
		if err != nil {
			e.opts.Logger.Warn("a remote agent's surface is not shown", "call", c.ID, "error", err)
			continue
		}
		shows.Show(shown)
	}
}

// responseFiles are the parts of a function response that hold a's
// files (chatfiles.ResponseRefs reads them back).
func responseFiles(a Answer) []*genai.FunctionResponsePart {
	if len(a.Files) == 0 {
		return nil
	}
	out := make([]*genai.FunctionResponsePart, 0, len(a.Files))
	for _, f := range a.Files {
		out = append(out, &genai.FunctionResponsePart{FileData: &genai.FunctionResponseFileData{FileURI: f.URI, MIMEType: f.MediaType, DisplayName: f.Name}})
	}
	return out
}
