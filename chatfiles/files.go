package chatfiles

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cloud.google.com/go/storage"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
)

// ErrNotFound: no such file in the user's chat (another user's file is not
// found either). It wraps sessionstore.ErrNotFound.
var ErrNotFound = fmt.Errorf("%w: file", sessionstore.ErrNotFound)

// fileScheme starts the URI of a reference part.
const fileScheme = "baton-file:"

// Ref names one file of a chat: the artifact a reference part points at.
// The owner is the chat's user, never part of the reference.
type Ref struct {
	ChatID   string
	Name     string // the artifact's file name
	Version  int64
	MIMEType string
	// DisplayName is the name the user gave the file, if any.
	DisplayName string
}

// uri is the reference's FileData URI:
// baton-file:{chat, path-escaped}/{name}/{version}.
func (f Ref) uri() string {
	return fileScheme + url.PathEscape(f.ChatID) + "/" + url.PathEscape(f.Name) + "/" + strconv.FormatInt(f.Version, 10)
}

// Part is the reference part a session stores for the file.
func (f Ref) Part() *genai.Part {
	return &genai.Part{FileData: &genai.FileData{FileURI: f.uri(), MIMEType: f.MIMEType, DisplayName: f.DisplayName}}
}

// RefOf reads a reference part; ok is false for any other part.
func RefOf(p *genai.Part) (ref Ref, ok bool) {
	if p == nil || p.FileData == nil {
		return Ref{}, false
	}
	rest, found := strings.CutPrefix(p.FileData.FileURI, fileScheme)
	if !found {
		return Ref{}, false
	}
	segs := strings.Split(rest, "/")
	if len(segs) != 3 {
		return Ref{}, false
	}
	chat, err1 := url.PathUnescape(segs[0])
	name, err2 := url.PathUnescape(segs[1])
	version, err3 := strconv.ParseInt(segs[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || chat == "" || name == "" || version < 1 {
		return Ref{}, false
	}
	return Ref{ChatID: chat, Name: name, Version: version, MIMEType: p.FileData.MIMEType, DisplayName: p.FileData.DisplayName}, true
}

// Store keeps the files of one app's chats in an artifact service. A nil
// *Store keeps none: files stay inline in the session, as ADK stores them.
type Store struct {
	files artifact.Service
	app   string
	log   *slog.Logger
}

// New returns the store of app's chat files in files; log (nil: none)
// hears of files a tool saved that cannot be shown.
func New(files artifact.Service, app string, log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{files: files, app: app, log: log}
}

// SaveMessage saves the inline files of a user message to user's chat as
// artifacts of the chat and returns the message with a reference in place
// of each; the caller's content is not changed. Without inline files, or
// with a nil store, it returns c as it is.
func (s *Store) SaveMessage(ctx context.Context, user, chat string, c *genai.Content) (*genai.Content, error) {
	if s == nil || !hasInlineData(c) {
		return c, nil
	}
	return s.saveInline(ctx, user, chat, "upload-", c)
}

// SaveEventFiles saves the inline files of an event a runner appends to
// user's session sid (a model's image output) as SaveMessage does a user's,
// putting the content with references in their place in ev itself: the
// runner yields the event it appended, so its readers, and the session,
// get the references, never the bytes. It also notes the files the event's
// tools saved (SavedFiles). The chat is the one whose agent session sid is
// (sessionstore.ChatOfSession); a session whose chat cannot be told (a
// hashed long id) keeps its files under its own id, which DeleteChat
// removes too.
func (s *Store) SaveEventFiles(ctx context.Context, user, sid string, ev *session.Event) error {
	if s == nil {
		return nil
	}
	chat := chatOf(sid)
	if len(ev.Actions.ArtifactDelta) > 0 {
		s.noteSavedFiles(ctx, user, chat, ev)
	}
	if ev.Content == nil || !hasInlineData(ev.Content) {
		return nil
	}
	c, err := s.saveInline(ctx, user, chat, "model-", ev.Content)
	if err != nil {
		return fmt.Errorf("event %q: %w", ev.ID, err)
	}
	ev.Content = c
	return nil
}

// saveInline saves each inline file of c as an artifact of chat named
// prefix and a new uuid, and returns a copy of c with a reference in place
// of each.
func (s *Store) saveInline(ctx context.Context, user, chat, prefix string, c *genai.Content) (*genai.Content, error) {
	out := &genai.Content{Role: c.Role, Parts: make([]*genai.Part, len(c.Parts))}
	for i, p := range c.Parts {
		out.Parts[i] = p
		if p == nil || p.InlineData == nil {
			continue
		}
		ref := Ref{ChatID: chat, Name: prefix + platform.NewUUID(ctx), MIMEType: p.InlineData.MIMEType, DisplayName: p.InlineData.DisplayName}
		saved, err := s.files.Save(ctx, &artifact.SaveRequest{AppName: s.app, UserID: user, SessionID: chat, FileName: ref.Name,
			Part: &genai.Part{InlineData: &genai.Blob{Data: p.InlineData.Data, MIMEType: p.InlineData.MIMEType}}})
		if err != nil {
			return nil, fmt.Errorf("save file %d of the message: %w", i, err)
		}
		ref.Version = saved.Version
		out.Parts[i] = ref.Part()
	}
	return out, nil
}

// Drop deletes the files SaveMessage saved for sent (stored as the
// references of saved), for a message refused before anything referred to
// them; best effort: a failure leaves an object only DeleteChat removes.
func (s *Store) Drop(ctx context.Context, user string, sent, saved *genai.Content) {
	if s == nil || sent == saved {
		return // nothing was saved
	}
	for i, p := range saved.Parts {
		ref, ok := RefOf(p)
		if !ok || sent.Parts[i].InlineData == nil {
			continue
		}
		err := s.files.Delete(ctx, &artifact.DeleteRequest{AppName: s.app, UserID: user, SessionID: ref.ChatID, FileName: ref.Name})
		if err != nil {
			s.log.Warn("delete the file of a refused message", "chat", ref.ChatID, "file", ref.Name, "error", err)
		}
	}
}

func hasInlineData(c *genai.Content) bool {
	for _, p := range c.Parts {
		if p != nil && p.InlineData != nil {
			return true
		}
	}
	return false
}

// Load reads a file of one of user's chats. A file that does not exist,
// or is another user's, fails with ErrNotFound.
func (s *Store) Load(ctx context.Context, user string, ref Ref) (*genai.Blob, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no file store", ErrNotFound)
	}
	if err := sessionstore.ValidateID("user id", user); err != nil {
		return nil, err
	}
	if err := sessionstore.ValidateID("chat id", ref.ChatID); err != nil {
		return nil, err
	}
	return s.load(ctx, user, ref)
}

func (s *Store) load(ctx context.Context, user string, ref Ref) (*genai.Blob, error) {
	if ref.Name == "" || strings.ContainsAny(ref.Name, `/\`) || ref.Version < 1 {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, ref.Name)
	}
	got, err := s.files.Load(ctx, &artifact.LoadRequest{AppName: s.app, UserID: user, SessionID: ref.ChatID, FileName: ref.Name, Version: ref.Version})
	switch {
	// gcsartifact compares Attrs' error with == storage.ErrObjectNotExist,
	// which the storage client wraps: a missing object comes back as that
	// wrapped error, not as fs.ErrNotExist.
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, storage.ErrObjectNotExist):
		return nil, fmt.Errorf("%w: %q version %d", ErrNotFound, ref.Name, ref.Version)
	case err != nil:
		return nil, fmt.Errorf("load file %q: %w", ref.Name, err)
	case got.Part == nil || got.Part.InlineData == nil:
		return nil, fmt.Errorf("%w: %q holds no bytes", ErrNotFound, ref.Name)
	}
	return got.Part.InlineData, nil
}

// DeleteChat deletes the files of chat: those saved under the chat id (the
// user's, the models' and its tools') and any saved under one of its ADK
// sessions (by a runner not given Artifacts). The user's own artifacts
// ("user:" names, shared by all of the user's chats) are left.
func (s *Store) DeleteChat(ctx context.Context, chat *sessionstore.Chat) error {
	if s == nil {
		return nil
	}
	for _, sid := range append([]string{chat.ID, chat.SessionID, chat.Building}, chat.Retired...) {
		if sid == "" {
			continue
		}
		list, err := s.files.List(ctx, &artifact.ListRequest{AppName: s.app, UserID: chat.UserID, SessionID: sid})
		if err != nil {
			return fmt.Errorf("list the files of chat %q: %w", chat.ID, err)
		}
		for _, name := range list.FileNames {
			if strings.HasPrefix(name, "user:") {
				continue
			}
			if err := s.files.Delete(ctx, &artifact.DeleteRequest{AppName: s.app, UserID: chat.UserID, SessionID: sid, FileName: name}); err != nil {
				return fmt.Errorf("delete file %q of chat %q: %w", name, chat.ID, err)
			}
		}
	}
	return nil
}

// DeleteUser deletes user's own files: those of "user:" names, which ADK
// shares between all of the user's sessions (and so chats), for the
// deletion of the user's account; DeleteChat leaves them.
func (s *Store) DeleteUser(ctx context.Context, user string) error {
	if s == nil {
		return nil
	}
	// Any session lists the user's own files with its own.
	list, err := s.files.List(ctx, &artifact.ListRequest{AppName: s.app, UserID: user, SessionID: userFilesSession})
	if err != nil {
		return fmt.Errorf("list the user's files: %w", err)
	}
	for _, name := range list.FileNames {
		if !strings.HasPrefix(name, "user:") {
			continue
		}
		if err := s.files.Delete(ctx, &artifact.DeleteRequest{AppName: s.app, UserID: user, SessionID: userFilesSession, FileName: name}); err != nil {
			return fmt.Errorf("delete the user's file %q: %w", name, err)
		}
	}
	return nil
}

// userFilesSession is the session DeleteUser names to reach the user's own
// files; no chat has this id's files.
const userFilesSession = "baton-account"

// Plugin returns the plugin of one invocation's runner that hands the
// model the bytes of the files its requests refer to (see the package
// doc): a reference part becomes the file's inline bytes, and a reference
// a function response holds among its parts (a remote agent's file,
// ResponseFiles) becomes an inline part of the same content, after the
// responses, as a user's file reaches the model. It keeps what it loaded
// for the invocation's later model calls, so build one per invocation.
func (s *Store) Plugin() (*plugin.Plugin, error) {
	var mu sync.Mutex
	loaded := map[string]*genai.Blob{}
	// inline is the part the model gets for the file ref names; a file no
	// longer stored is a line saying so, so the transcript stays valid.
	inline := func(ctx agent.Context, uri string, ref Ref) (*genai.Part, error) {
		mu.Lock()
		blob := loaded[uri]
		mu.Unlock()
		if blob == nil {
			var err error
			blob, err = s.load(ctx, ctx.UserID(), ref)
			if errors.Is(err, ErrNotFound) {
				return genai.NewPartFromText("[a file that is no longer stored]"), nil
			}
			if err != nil {
				return nil, err
			}
			mu.Lock()
			loaded[uri] = blob
			mu.Unlock()
		}
		// No display name: the Gemini API refuses one, and ADK's
		// processor that removes it has run before this callback.
		return &genai.Part{InlineData: &genai.Blob{Data: blob.Data, MIMEType: cmp.Or(ref.MIMEType, blob.MIMEType)}}, nil
	}
	return plugin.New(plugin.Config{
		Name: "baton-files",
		BeforeModelCallback: func(ctx agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
			for _, c := range req.Contents {
				var attached []*genai.Part
				for i, p := range c.Parts {
					if ref, ok := RefOf(p); ok {
						got, err := inline(ctx, p.FileData.FileURI, ref)
						if err != nil {
							return nil, err
						}
						c.Parts[i] = got
					}
					refs := responseRefs(p)
					for _, ref := range refs {
						got, err := inline(ctx, ref.uri(), ref)
						if err != nil {
							return nil, err
						}
						attached = append(attached, got)
					}
					if len(refs) > 0 {
						p.FunctionResponse.Parts = slices.DeleteFunc(p.FunctionResponse.Parts, func(fp *genai.FunctionResponsePart) bool {
							_, ok := responseRef(fp)
							return ok
						})
					}
				}
				c.Parts = append(c.Parts, attached...)
			}
			return nil, nil
		},
	})
}

// File is one stored version of a file, as an export reads it.
type File struct {
	Ref  Ref // ChatID is "" for one of the user's own files
	Blob *genai.Blob
}

// ExportName is the name an export gives a file: its name, made safe for
// any file system, and its version.
func (f Ref) ExportName() string {
	safe := strings.Map(func(r rune) rune {
		if r < ' ' || strings.ContainsRune(`/\:*?"<>|`, r) {
			return '_'
		}
		return r
	}, f.Name)
	if safe == "" || safe == "." || safe == ".." {
		safe = "_" + safe
	}
	return fmt.Sprintf("%s@%d", safe, f.Version)
}

// EachFile calls f with every version of every file of user's chat
// (chatID: "" for the user's own files, of "user:" names), loading one at a
// time, so that an export holds one file in memory whatever their number.
func (s *Store) EachFile(ctx context.Context, user, chatID string, f func(File) error) error {
	if s == nil {
		return nil
	}
	sid, own := chatID, chatID == ""
	if own {
		sid = userFilesSession
	}
	list, err := s.files.List(ctx, &artifact.ListRequest{AppName: s.app, UserID: user, SessionID: sid})
	if err != nil {
		return fmt.Errorf("list files: %w", err)
	}
	for _, name := range list.FileNames {
		if strings.HasPrefix(name, "user:") != own {
			continue
		}
		versions, err := s.files.Versions(ctx, &artifact.VersionsRequest{AppName: s.app, UserID: user, SessionID: sid, FileName: name})
		if err != nil {
			return fmt.Errorf("list the versions of file %q: %w", name, err)
		}
		for _, v := range versions.Versions {
			ref := Ref{ChatID: chatID, Name: name, Version: v}
			got, err := s.files.Load(ctx, &artifact.LoadRequest{AppName: s.app, UserID: user, SessionID: sid, FileName: name, Version: v})
			if err != nil {
				return fmt.Errorf("load file %q version %d: %w", name, v, err)
			}
			if got.Part == nil || got.Part.InlineData == nil {
				continue
			}
			ref.MIMEType = got.Part.InlineData.MIMEType
			if err := f(File{Ref: ref, Blob: got.Part.InlineData}); err != nil {
				return err
			}
		}
	}
	return nil
}
