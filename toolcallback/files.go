package toolcallback

// Files a chat holds. A user's file (a part with inline bytes) is saved
// through ADK's artifact.Service (Options.Files) before the turn starts,
// and the message the session stores carries a reference in its place: a
// genai.FileData whose URI names the artifact (fileURI). The session's
// documents stay small however large the file is, and the file is not
// read back from Firestore on every later turn.
//
// The model still receives the bytes: the runner of each invocation has a
// plugin whose before-model callback swaps each reference in the request
// for the artifact's bytes (filesPlugin). That is the cheapest place: ADK's
// contents processor has already deep-copied the history's contents into
// the request (llminternal.buildContentsDefault clones each event's
// content), so the swap edits that copy in place, and the session's events
// never hold the bytes. A file is read from storage once per invocation.
//
// Artifacts are stored under the chat id (the artifact's "session"), not
// under the ADK session, so references stay valid when the chat moves to
// another agent's session. Deleting the chat deletes them (deleteFiles).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
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

// ErrFileNotFound: no such file in the user's chat (another user's file is
// not found either). It wraps sessionstore.ErrNotFound.
var ErrFileNotFound = fmt.Errorf("%w: file", sessionstore.ErrNotFound)

// fileScheme starts the URI of a reference part.
const fileScheme = "baton-file:"

// FileRef names one file of a chat: the artifact a reference part points
// at. The owner is the chat's user, never part of the reference.
type FileRef struct {
	ChatID   string
	Name     string // the artifact's file name
	Version  int64
	MIMEType string
	// DisplayName is the name the user gave the file, if any.
	DisplayName string
}

// uri is the reference's FileData URI:
// baton-file:{chat, path-escaped}/{name}/{version}.
func (f FileRef) uri() string {
	return fileScheme + url.PathEscape(f.ChatID) + "/" + url.PathEscape(f.Name) + "/" + strconv.FormatInt(f.Version, 10)
}

// Part is the reference part a session stores for the file.
func (f FileRef) Part() *genai.Part {
	return &genai.Part{FileData: &genai.FileData{FileURI: f.uri(), MIMEType: f.MIMEType, DisplayName: f.DisplayName}}
}

// FileRefOf reads a reference part; ok is false for any other part.
func FileRefOf(p *genai.Part) (ref FileRef, ok bool) {
	if p == nil || p.FileData == nil {
		return FileRef{}, false
	}
	rest, found := strings.CutPrefix(p.FileData.FileURI, fileScheme)
	if !found {
		return FileRef{}, false
	}
	segs := strings.Split(rest, "/")
	if len(segs) != 3 {
		return FileRef{}, false
	}
	chat, err1 := url.PathUnescape(segs[0])
	name, err2 := url.PathUnescape(segs[1])
	version, err3 := strconv.ParseInt(segs[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || chat == "" || name == "" || version < 1 {
		return FileRef{}, false
	}
	return FileRef{ChatID: chat, Name: name, Version: version, MIMEType: p.FileData.MIMEType, DisplayName: p.FileData.DisplayName}, true
}

// storeFiles saves the inline files of a user message as artifacts of the
// chat and returns the message with a reference in place of each (the
// caller's content is not changed). Without a file store, or without
// inline files, it returns c as it is.
//
// A file is saved before the message is committed. A turn or an edit
// refused before writing anything (busy, over a limit, a message sent
// again, an unknown or rewound message to edit) deletes it
// again (dropFiles); one that dies in between leaves an object no session
// refers to, under the chat's prefix, which deleting the chat removes (a
// chat never created keeps it: see docs/files-and-long-chats.md).
func (t *Team) storeFiles(ctx context.Context, user, chat string, c *genai.Content) (*genai.Content, error) {
	if t.opts.Files == nil || !hasInlineData(c) {
		return c, nil
	}
	return saveInlineFiles(ctx, t.opts.Files, t.app, user, chat, "upload-", c)
}

// storeEventFiles saves the inline files of an event the runner appends
// (a model's image output) as artifacts of the chat, as storeFiles does a
// user's, and puts the event's content with references in their place in
// ev itself: the runner yields the event it appended, so the invocation's
// readers, and the session, get the references, never the bytes. It also
// notes the files the event's tools saved (noteSavedFiles, toolfiles.go).
// The chat is the one whose agent session sess is (chatOf); a session
// whose chat id cannot be told (a hashed long id) keeps its files under
// its own id, which deleting the chat removes too (deleteFiles).
func (e *engine) storeEventFiles(ctx context.Context, sess session.Session, ev *session.Event) error {
	if e.opts.Files == nil {
		return nil
	}
	chat := chatOf(sess.ID())
	if len(ev.Actions.ArtifactDelta) > 0 {
		noteSavedFiles(ctx, e.opts.Files, e.opts.Logger, e.app, sess.UserID(), chat, ev)
	}
	if ev.Content == nil || !hasInlineData(ev.Content) {
		return nil
	}
	c, err := saveInlineFiles(ctx, e.opts.Files, e.app, sess.UserID(), chat, "model-", ev.Content)
	if err != nil {
		return fmt.Errorf("event %q: %w", ev.ID, err)
	}
	ev.Content = c
	return nil
}

// saveInlineFiles saves each inline file of c as an artifact of chat
// named prefix and a new uuid, and returns a copy of c with a reference in
// place of each.
func saveInlineFiles(ctx context.Context, files artifact.Service, app, user, chat, prefix string, c *genai.Content) (*genai.Content, error) {
	out := &genai.Content{Role: c.Role, Parts: make([]*genai.Part, len(c.Parts))}
	for i, p := range c.Parts {
		out.Parts[i] = p
		if p == nil || p.InlineData == nil {
			continue
		}
		ref := FileRef{ChatID: chat, Name: prefix + platform.NewUUID(ctx), MIMEType: p.InlineData.MIMEType, DisplayName: p.InlineData.DisplayName}
		saved, err := files.Save(ctx, &artifact.SaveRequest{AppName: app, UserID: user, SessionID: chat, FileName: ref.Name,
			Part: &genai.Part{InlineData: &genai.Blob{Data: p.InlineData.Data, MIMEType: p.InlineData.MIMEType}}})
		if err != nil {
			return nil, fmt.Errorf("save file %d of the message: %w", i, err)
		}
		ref.Version = saved.Version
		out.Parts[i] = ref.Part()
	}
	return out, nil
}

// withFiles stores the inline files of the message sent (storeFiles) in
// user's chat, runs the message with the content that refers to them, and
// deletes them again when run wrote nothing (wroteNothing).
func (t *Team) withFiles(ctx context.Context, user, chat string, sent *genai.Content, run func(*genai.Content) error) error {
	content, err := t.storeFiles(ctx, user, chat, sent)
	if err != nil {
		return err
	}
	err = run(content)
	if wroteNothing(err) {
		t.dropFiles(ctx, user, sent, content)
	}
	return err
}

// wroteNothing reports whether a turn's error says the turn wrote nothing
// (so nothing refers to the files it saved). Any other error may come
// after the message was stored (a client that left while the commit was
// in flight), and its files stay.
func wroteNothing(err error) bool {
	return errors.Is(err, sessionstore.ErrBusy) || errors.Is(err, ErrMessageTaken) ||
		errors.Is(err, ErrRateLimited) || errors.Is(err, ErrBudgetExhausted) ||
		errors.Is(err, ErrMessageNotFound) || errors.Is(err, ErrRewound)
}

// dropFiles deletes the files storeFiles saved for sent (stored as the
// references of saved), best effort: a failure leaves an object only
// deleting the chat removes.
func (t *Team) dropFiles(ctx context.Context, user string, sent, saved *genai.Content) {
	if sent == saved {
		return // nothing was saved
	}
	for i, p := range saved.Parts {
		ref, ok := FileRefOf(p)
		if !ok || sent.Parts[i].InlineData == nil {
			continue
		}
		err := t.opts.Files.Delete(ctx, &artifact.DeleteRequest{AppName: t.app, UserID: user, SessionID: ref.ChatID, FileName: ref.Name})
		if err != nil {
			t.opts.Logger.Warn("delete the file of a refused message", "chat", ref.ChatID, "file", ref.Name, "error", err)
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

// LoadFile reads a file of one of user's chats. A file that does not
// exist, or is another user's, fails with ErrFileNotFound.
func (t *Team) LoadFile(ctx context.Context, user string, ref FileRef) (*genai.Blob, error) {
	if t.opts.Files == nil {
		return nil, fmt.Errorf("%w: no file store", ErrFileNotFound)
	}
	if err := validIDs("user id", user, "chat id", ref.ChatID); err != nil {
		return nil, err
	}
	return loadFile(ctx, t.opts.Files, t.app, user, ref)
}

func loadFile(ctx context.Context, files artifact.Service, app, user string, ref FileRef) (*genai.Blob, error) {
	if ref.Name == "" || strings.ContainsAny(ref.Name, `/\`) || ref.Version < 1 {
		return nil, fmt.Errorf("%w: %q", ErrFileNotFound, ref.Name)
	}
	got, err := files.Load(ctx, &artifact.LoadRequest{AppName: app, UserID: user, SessionID: ref.ChatID, FileName: ref.Name, Version: ref.Version})
	switch {
	// gcsartifact compares Attrs' error with == storage.ErrObjectNotExist,
	// which the storage client wraps: a missing object comes back as that
	// wrapped error, not as fs.ErrNotExist.
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, storage.ErrObjectNotExist):
		return nil, fmt.Errorf("%w: %q version %d", ErrFileNotFound, ref.Name, ref.Version)
	case err != nil:
		return nil, fmt.Errorf("load file %q: %w", ref.Name, err)
	case got.Part == nil || got.Part.InlineData == nil:
		return nil, fmt.Errorf("%w: %q holds no bytes", ErrFileNotFound, ref.Name)
	}
	return got.Part.InlineData, nil
}

// deleteFiles deletes the files of chat: those saved under the chat id
// (the user's files) and those ADK's tools saved under each of its ADK
// sessions. The user's own artifacts ("user:" names, shared by all of the
// user's chats) are left.
func (t *Team) deleteFiles(ctx context.Context, chat *sessionstore.Chat) error {
	if t.opts.Files == nil {
		return nil
	}
	for _, sid := range append([]string{chat.ID, chat.SessionID, chat.Building}, chat.Retired...) {
		if sid == "" {
			continue
		}
		list, err := t.opts.Files.List(ctx, &artifact.ListRequest{AppName: t.app, UserID: chat.UserID, SessionID: sid})
		if err != nil {
			return fmt.Errorf("list the files of chat %q: %w", chat.ID, err)
		}
		for _, name := range list.FileNames {
			if strings.HasPrefix(name, "user:") {
				continue
			}
			if err := t.opts.Files.Delete(ctx, &artifact.DeleteRequest{AppName: t.app, UserID: chat.UserID, SessionID: sid, FileName: name}); err != nil {
				return fmt.Errorf("delete file %q of chat %q: %w", name, chat.ID, err)
			}
		}
	}
	return nil
}

// filesPlugin is the plugin of one invocation's runner that hands the
// model the bytes of the files the request refers to (see the top of this
// file). It keeps what it loaded for the invocation's later model calls.
func filesPlugin(files artifact.Service, app string) (*plugin.Plugin, error) {
	var mu sync.Mutex
	loaded := map[string]*genai.Blob{}
	return plugin.New(plugin.Config{
		Name: "baton-files",
		BeforeModelCallback: func(ctx agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
			for _, c := range req.Contents {
				for i, p := range c.Parts {
					ref, ok := FileRefOf(p)
					if !ok {
						continue
					}
					mu.Lock()
					blob := loaded[p.FileData.FileURI]
					mu.Unlock()
					if blob == nil {
						var err error
						blob, err = loadFile(ctx, files, app, ctx.UserID(), ref)
						if errors.Is(err, ErrFileNotFound) {
							// A transcript that names a lost file stays valid.
							c.Parts[i] = genai.NewPartFromText("[a file that is no longer stored]")
							continue
						}
						if err != nil {
							return nil, err
						}
						mu.Lock()
						loaded[p.FileData.FileURI] = blob
						mu.Unlock()
					}
					// No display name: the Gemini API refuses one, and ADK's
					// processor that removes it has run before this callback.
					c.Parts[i] = &genai.Part{InlineData: &genai.Blob{Data: blob.Data, MIMEType: cmp.Or(ref.MIMEType, blob.MIMEType)}}
				}
			}
			return nil, nil
		},
	})
}
