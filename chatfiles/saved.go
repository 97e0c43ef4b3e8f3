package chatfiles

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
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
// step saved (see the package doc); nil when they saved none.
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
		if _, ok := RefOf(p); ok {
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
func (s *Store) noteSavedFiles(ctx context.Context, user, chat string, ev *session.Event) {
	var saved []savedFile
	for _, name := range slices.Sorted(maps.Keys(ev.Actions.ArtifactDelta)) {
		version := ev.Actions.ArtifactDelta[name]
		if name == "" || strings.ContainsAny(name, `/\`) || version < 1 {
			continue
		}
		got, err := s.files.GetArtifactVersion(ctx, &artifact.GetArtifactVersionRequest{AppName: s.app, UserID: user, SessionID: chat, FileName: name, Version: version})
		if err != nil {
			s.log.Warn("a file a tool saved is not shown", "chat", chat, "file", name, "version", version, "error", err.Error())
			continue
		}
		ref := Ref{ChatID: chat, Name: name, Version: version}
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
	if chat, ok := sessionstore.ChatOfSession(sid); ok {
		return chat
	}
	return sid
}

// Artifacts returns the store as a runner's tools see it (ADK's
// runner.Config.ArtifactService): artifacts keyed by the chat rather than
// by its agent session.
func (s *Store) Artifacts() artifact.Service { return chatArtifacts{s.files} }

// chatArtifacts is an artifact service keyed by the chat.
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

// ExportFiles is the part of an export that holds the files (package
// account writes it).
const ExportFiles = "files"

// DataKinds are the kinds of a person's data this package keeps (see
// sessionstore.DataKind): objects of the artifact service, not Firestore
// documents.
var DataKinds = []sessionstore.DataKind{
	{Name: "chat file", Owner: "chatfiles", Path: "{bucket}/{app}/{user}/{chat}/{name}/{version}", Scope: sessionstore.ScopeChat,
		Export: ExportFiles, Kept: "as long as its chat"},
	{Name: "user file", Owner: "chatfiles", Path: "{bucket}/{app}/{user}/user/{user:name}/{version}", Scope: sessionstore.ScopeUser,
		Export: ExportFiles, Kept: "until the account is deleted"},
}
