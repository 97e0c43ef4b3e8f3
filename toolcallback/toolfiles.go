package toolcallback

// Files a tool saves (ctx.Artifacts().Save in an ADK tool or callback).
// ADK's runner keys a tool's artifacts by the ADK session, and a chat has
// one ADK session per agent it used ("chat~n"); the runner is given the
// file store through chatArtifacts, which keys them by the chat instead,
// as the user's and the model's files are: a tool of the chat's next
// agent finds what an earlier one saved, and the files' URLs name the
// chat.
//
// ADK records each save in the event that ends the tool's step
// (Actions.ArtifactDelta: name → version). storeEventFiles notes those
// files in the event's CustomMetadata (savedFilesKey) with their media
// types, read once from the store; SavedFiles reads them back as reference
// parts, which the chat's history and streams show as files of the
// assistant's message. The model is not sent them: what a tool saved
// reaches the model only if the tool returns it or loads it.

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

// savedFilesKey lists, in an event's CustomMetadata, the files its tools
// saved: a []savedFile, or its JSON form once read back.
const savedFilesKey = "baton.savedFiles"

// savedFile is a file a tool saved, as an event's metadata holds it.
type savedFile struct {
	URI      string `json:"uri"` // the reference's URI (FileRef.uri)
	MIMEType string `json:"mimeType,omitempty"`
}

// SavedFiles returns a reference part for each file the tools of ev's
// step saved (see the top of this file); nil when they saved none.
func SavedFiles(ev *session.Event) []*genai.Part {
	value := ev.CustomMetadata[savedFilesKey]
	if value == nil {
		return nil
	}
	var files []savedFile
	if b, err := json.Marshal(value); err != nil || json.Unmarshal(b, &files) != nil {
		return nil
	}
	var out []*genai.Part
	for _, f := range files {
		p := &genai.Part{FileData: &genai.FileData{FileURI: f.URI, MIMEType: f.MIMEType}}
		if _, ok := FileRefOf(p); ok {
			out = append(out, p)
		}
	}
	return out
}

// noteSavedFiles records in ev the files its ArtifactDelta names, as
// files of chat, with their media types from the store. A name the file
// route cannot serve (one holding a slash) is left out, and so is a file
// the store cannot describe (logged): what is noted only shows the file,
// so it never fails the append of a step that ran.
func noteSavedFiles(ctx context.Context, files artifact.Service, log *slog.Logger, app, user, chat string, ev *session.Event) {
	var saved []savedFile
	for _, name := range slices.Sorted(maps.Keys(ev.Actions.ArtifactDelta)) {
		version := ev.Actions.ArtifactDelta[name]
		if name == "" || strings.ContainsAny(name, `/\`) || version < 1 {
			continue
		}
		got, err := files.GetArtifactVersion(ctx, &artifact.GetArtifactVersionRequest{AppName: app, UserID: user, SessionID: chat, FileName: name, Version: version})
		if err != nil {
			log.Warn("a file a tool saved is not shown", "chat", chat, "file", name, "version", version, "error", err.Error())
			continue
		}
		ref := FileRef{ChatID: chat, Name: name, Version: version}
		saved = append(saved, savedFile{URI: ref.uri(), MIMEType: got.ArtifactVersion.MimeType})
	}
	if len(saved) == 0 {
		return
	}
	if ev.CustomMetadata == nil {
		ev.CustomMetadata = map[string]any{}
	}
	ev.CustomMetadata[savedFilesKey] = saved
}

// chatOf is the chat whose agent session sid is, or sid itself when its
// chat cannot be told (a hashed long chat id): the key a chat's files are
// stored under.
func chatOf(sid string) string {
	if chat, ok := ChatOfSession(sid); ok {
		return chat
	}
	return sid
}

// chatArtifacts is the file store as a runner's tools see it: artifacts
// keyed by the chat rather than by its agent session.
type chatArtifacts struct{ artifact.Service }

var _ artifact.Service = chatArtifacts{}

func (c chatArtifacts) Save(ctx context.Context, req *artifact.SaveRequest) (*artifact.SaveResponse, error) {
	r := *req
	r.SessionID = chatOf(r.SessionID)
	return c.Service.Save(ctx, &r)
}

func (c chatArtifacts) Load(ctx context.Context, req *artifact.LoadRequest) (*artifact.LoadResponse, error) {
	r := *req
	r.SessionID = chatOf(r.SessionID)
	return c.Service.Load(ctx, &r)
}

func (c chatArtifacts) Delete(ctx context.Context, req *artifact.DeleteRequest) error {
	r := *req
	r.SessionID = chatOf(r.SessionID)
	return c.Service.Delete(ctx, &r)
}

func (c chatArtifacts) List(ctx context.Context, req *artifact.ListRequest) (*artifact.ListResponse, error) {
	r := *req
	r.SessionID = chatOf(r.SessionID)
	return c.Service.List(ctx, &r)
}

func (c chatArtifacts) Versions(ctx context.Context, req *artifact.VersionsRequest) (*artifact.VersionsResponse, error) {
	r := *req
	r.SessionID = chatOf(r.SessionID)
	return c.Service.Versions(ctx, &r)
}

func (c chatArtifacts) GetArtifactVersion(ctx context.Context, req *artifact.GetArtifactVersionRequest) (*artifact.GetArtifactVersionResponse, error) {
	r := *req
	r.SessionID = chatOf(r.SessionID)
	return c.Service.GetArtifactVersion(ctx, &r)
}
