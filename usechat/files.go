package usechat

// Files. A file part of a user message (Chat's data URLs, Turn's
// inlineData) is stored through ADK's artifact.Service by the team
// (toolcallback/files.go): Cloud Storage in production (gcsartifact on
// BATON_FILES_BUCKET). The session keeps a reference; the model gets the
// bytes.
//
// A page shows a file with an <img>, which sends no Authorization header
// (and Baton's identity is a bearer token, not a cookie), so GET
// /Chat/{chatId} and Chat's streams give each file a short-lived bearer
// link that Baton serves itself:
//
//	GET /Chat/{chatId}/files/{name}?v={version}&owner={user}&exp={unix seconds}&sig={HMAC}
//
// The signature is an HMAC-SHA256, under a key derived from BATON_TOKEN_KEY,
// of the chat, the file, its version, its owner and the expiry: only
// Baton makes one, only for the chat's owner (a history is read with the
// owner's credentials). Whoever holds the link fetches the file, whoever
// they are, until it expires fileURLLifetime after it was made; then
// nobody does. A URL whose signature does not verify, or that has expired,
// fetches nothing (404, as a file that does not exist). The bucket itself
// is never public. Opened in a browser tab (a request that accepts HTML),
// such a URL gets a short page saying the link expired, or is not valid,
// and what to do, rather than the JSON error an API client reads.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/chatfiles"
)

// fileURLLifetime is how long a file URL stays valid. It is a bearer link
// (see above): a page shows the file as soon as it gets the link, and its
// browser keeps what it fetched (Cache-Control), so minutes are enough; a
// link copied out of the page, or read from a screen or a log, is good for
// as long and no longer. A page that shows a file later loads the
// conversation again for a new link.
const fileURLLifetime = 5 * time.Minute

// errFilesOff refuses a file when the deployment stores none.
var errFilesOff = fmt.Errorf("%w: files are not enabled here (BATON_FILES_BUCKET is not set)", errBadRequest)

// errBadFileURL: a file URL that is forged, altered or expired. It is
// answered as a file that does not exist.
var errBadFileURL = fmt.Errorf("%w: no such file", chatfiles.ErrNotFound)

// errFileURLExpired: a file URL Baton signed, past its expiry.
var errFileURLExpired = fmt.Errorf("%w (expired)", errBadFileURL)

// NewFileURLs returns the signer of the URLs of store's files, its key
// derived from key (BATON_TOKEN_KEY).
func NewFileURLs(store *chatfiles.Store, key []byte) *FileURLs {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("baton-file-url-key-v1"))
	return &FileURLs{key: mac.Sum(nil), store: store}
}

// FileURLs signs and checks file URLs, and reads the files they name.
type FileURLs struct {
	key   []byte
	store *chatfiles.Store
}

// Sign is the signature of a URL of the file ref for owner, expiring at
// exp (Unix seconds).
func (f *FileURLs) Sign(owner string, ref chatfiles.Ref, exp int64) string {
	mac := hmac.New(sha256.New, f.key)
	// Each field is length-prefixed, so no two field lists sign alike.
	for _, v := range []string{ref.ChatID, ref.Name, strconv.FormatInt(ref.Version, 10), owner, strconv.FormatInt(exp, 10)} {
		fmt.Fprintf(mac, "%d:%s;", len(v), v)
	}
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// url is the file's URL for a page that read the history through r.
func (f *FileURLs) url(r *http.Request, owner string, ref chatfiles.Ref, now time.Time) string {
	exp := now.Add(fileURLLifetime).Unix()
	q := url.Values{"v": {strconv.FormatInt(ref.Version, 10)}, "owner": {owner}, "exp": {strconv.FormatInt(exp, 10)}, "sig": {f.Sign(owner, ref, exp)}}
	return chatBase(r) + "/" + url.PathEscape(ref.ChatID) + "/files/" + url.PathEscape(ref.Name) + "?" + q.Encode()
}

// check returns the owner and file a URL names if its signature verifies
// and it has not expired.
func (f *FileURLs) check(chatID, name string, q url.Values, now time.Time) (string, chatfiles.Ref, error) {
	owner, ref, exp, err := f.verify(chatID, name, q)
	if err != nil {
		return "", ref, err
	}
	if now.Unix() > exp {
		return "", ref, errFileURLExpired
	}
	return owner, ref, nil
}

// verify returns the owner and file a URL names, and the URL's expiry (in
// Unix seconds), if its signature verifies; expired or not.
func (f *FileURLs) verify(chatID, name string, q url.Values) (string, chatfiles.Ref, int64, error) {
	version, err1 := strconv.ParseInt(q.Get("v"), 10, 64)
	exp, err2 := strconv.ParseInt(q.Get("exp"), 10, 64)
	owner := q.Get("owner")
	ref := chatfiles.Ref{ChatID: chatID, Name: name, Version: version}
	if err1 != nil || err2 != nil || owner == "" || !hmac.Equal([]byte(q.Get("sig")), []byte(f.Sign(owner, ref, exp))) {
		return "", ref, 0, errBadFileURL
	}
	return owner, ref, exp, nil
}

// chatBase is the absolute URL of the Chat function as r reached it:
// scheme and host, and the path up to the function's name (deployed, the
// function is its URL's root; on one port, /Chat).
func chatBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	base := ""
	if p := r.URL.EscapedPath(); strings.Contains(p, "/"+Name) {
		base = p[:strings.Index(p, "/"+Name)+len(Name)+1]
	}
	return scheme + "://" + r.Host + base
}

// chatFile serves GET /Chat/{chatId}/files/{name}: a file, to whoever
// holds a valid URL for it (no Authorization header: an <img> sends none).
// A browser tab opened on a URL that fetches nothing gets a page that says
// why (fileGonePage).
func (s *Server) chatFile(w http.ResponseWriter, r *http.Request, chatID, rest string) error {
	err := s.serveFile(w, r, chatID, rest)
	if errors.Is(err, chatfiles.ErrNotFound) && acceptsHTML(r) {
		writeFileGonePage(w, errors.Is(err, errFileURLExpired))
		return nil
	}
	return err
}

// serveFile writes the file a URL names, or returns why it cannot.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, chatID, rest string) error {
	seg, _ := strings.CutPrefix(rest, "files/")
	name, err := url.PathUnescape(seg)
	if s.files == nil || err != nil || name == "" || strings.Contains(name, "/") {
		return errBadFileURL
	}
	owner, ref, err := s.files.check(chatID, name, r.URL.Query(), time.Now())
	if err != nil {
		return err
	}
	blob, err := s.files.store.Load(r.Context(), owner, ref)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", blob.MIMEType)
	h.Set("Content-Length", strconv.Itoa(len(blob.Data)))
	h.Set("Cache-Control", "private, max-age=3600")
	// What a user uploaded is never run as a page of Baton's origin.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'")
	if !strings.HasPrefix(blob.MIMEType, "image/") {
		h.Set("Content-Disposition", "attachment")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(blob.Data)
	return nil
}

// errNotChatFile refuses a file part whose URL is neither a data URL nor
// a URL Baton gave the caller for a file of the chat the message is sent
// to.
var errNotChatFile = fmt.Errorf("%w: a file must be a base64 data URL, or the URL GET /Chat/{chatId} gave for a file of this chat", errBadRequest)

// sentBackFiles turns each file part of a new message that names a file by
// URL (content leaves those as FileData parts holding the URL) back into
// the reference the session stores: an edit sends the edited message's
// files back as the URLs the history gave them (docs/files-and-long-chats.md).
// The file is not read or copied. The URL must be Baton's, signed for
// user, and name a file of chatID; it may have expired, since the caller
// is the owner, who may read the chat's history and its file URLs anyway.
// Any other URL is refused (errNotChatFile): another user's or another
// chat's file never becomes part of this chat.
func (s *Server) sentBackFiles(user, chatID string, c *genai.Content) (*genai.Content, error) {
	for i, p := range c.Parts {
		if p.FileData == nil {
			continue
		}
		if s.files == nil {
			return nil, errFilesOff
		}
		fileChat, name, q, ok := parseFileURL(p.FileData.FileURI)
		if !ok || fileChat != chatID {
			return nil, errNotChatFile
		}
		owner, ref, _, err := s.files.verify(fileChat, name, q)
		if err != nil || owner != user {
			return nil, errNotChatFile
		}
		ref.MIMEType, ref.DisplayName = p.FileData.MIMEType, p.FileData.DisplayName
		c.Parts[i] = ref.Part()
	}
	return c, nil
}

// parseFileURL reads the chat, the file name and the query of a file URL
// (FileURLs.url): its path ends in /{chatId}/files/{name}. The scheme and
// host are not checked: the signature is what makes the URL Baton's.
func parseFileURL(raw string) (chatID, name string, q url.Values, ok bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", nil, false
	}
	segs := strings.Split(u.EscapedPath(), "/")
	if n := len(segs); n < 3 || segs[n-2] != "files" {
		return "", "", nil, false
	}
	chatID, err1 := url.PathUnescape(segs[len(segs)-3])
	name, err2 := url.PathUnescape(segs[len(segs)-1])
	if err1 != nil || err2 != nil || chatID == "" || name == "" {
		return "", "", nil, false
	}
	return chatID, name, u.Query(), true
}

// fileLinks gives a file part of a stream's event the URL and media type
// its file chunk carries ("" leaves it out): see uistream.Encoder.SetFiles.
type fileLinks func(p *genai.Part) (url, mediaType string)

// fileLinks shows a page the files of a turn (a model's image) as
// GET /Chat/{chatId} does: a stored file at a URL signed for user, a file
// the session holds inline at its data URL. Without a file store, a stored
// file is left out.
func (s *Server) fileLinks(r *http.Request, user string) fileLinks {
	return func(p *genai.Part) (string, string) {
		f := newHistoryFile(p)
		switch {
		case f == nil:
			return "", ""
		case f.ref == nil:
			return f.URL, f.MediaType
		case s.files == nil:
			return "", ""
		}
		return s.files.url(r, user, *f.ref, time.Now()), f.MediaType
	}
}

// withSavedFiles is ev as a stream shows it: its parts, then a reference
// part for each file its tools saved (chatfiles.SavedFiles), which
// fileLinks gives a URL. ev is not changed.
func withSavedFiles(ev *session.Event) *session.Event {
	saved := chatfiles.SavedFiles(ev)
	if len(saved) == 0 || ev.Content == nil {
		return ev
	}
	out := *ev
	c := *ev.Content
	c.Parts = append(slices.Clip(c.Parts), saved...)
	out.Content = &c
	return &out
}

// checkFiles refuses a message with files when the deployment stores none.
func (s *Server) checkFiles(c *genai.Content) error {
	if s.files != nil {
		return nil
	}
	for _, p := range c.Parts {
		if p.InlineData != nil {
			return errFilesOff
		}
	}
	return nil
}

// filePart is a file part of a UIMessage, as useChat holds it. A stored
// file's URL is signed for the reader by signFileParts.
type filePart struct {
	Type      string `json:"type"` // "file"
	MediaType string `json:"mediaType"`
	Filename  string `json:"filename,omitempty"`
	URL       string `json:"url"`

	ref *chatfiles.Ref
}

func newFilePart(f *historyFile) filePart {
	return filePart{Type: "file", MediaType: f.MediaType, Filename: f.Filename, URL: f.URL, ref: f.ref}
}

// signFileParts gives each stored file of messages the URL user may show
// it at (see FileURLs). Without a file store a stored file keeps no URL.
func (s *Server) signFileParts(r *http.Request, user string, messages []uiMessageView) {
	if s.files == nil {
		return
	}
	now := time.Now()
	for _, m := range messages {
		for i, p := range m.Parts {
			if f, ok := p.(filePart); ok && f.ref != nil {
				f.URL = s.files.url(r, user, *f.ref, now)
				m.Parts[i] = f
			}
		}
	}
}

func (p filePart) partType() string { return p.Type }
