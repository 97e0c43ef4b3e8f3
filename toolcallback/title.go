package toolcallback

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
)

// Titles. A new chat's listing shows the first words of its first message
// (the commit that creates the chat stores them, FirstWords). With
// Options.TitleModel, the chat's first turn also asks that model for a
// short title, beside the turn's own model request and from the same
// message: the answer never waits for it. A serverless instance's CPU is
// throttled once no request is in flight, so the title is made while the
// turn's request is: it is stored with the commit that releases the
// turn's lease when it is ready by then (no write of its own), and
// otherwise in a commit of its own once it comes, within titleTimeout, on
// CPU the instance may no longer be given. A title that fails or comes too
// late leaves the first words. A person's rename wins over both
// (sessionstore.Listing.Title).

// TitleInstruction is the system instruction of the request that asks
// Options.TitleModel for a chat's title; the request's one content is the
// chat's first message. An offline model recognises it by this text.
const TitleInstruction = "Give a short title, at most six words, for a conversation that starts with the user's message below. " +
	"Answer with the title alone: no quotes, no final punctuation."

// titleTimeout bounds a title's model request.
const titleTimeout = 10 * time.Second

// MaxTitleRunes bounds a chat's title, a person's or a model's.
const MaxTitleRunes = 80

// maxFirstWordsRunes bounds the first words of a message a listing shows
// until it has a title.
const maxFirstWordsRunes = 60

// titleJob is a chat's title being made beside its first turn.
type titleJob struct {
	store func(ctx context.Context, title string) error // its own commit

	mu     sync.Mutex
	done   bool   // the model answered (or failed)
	title  string // its title, "" when it failed
	taken  bool   // the release commit carries it
	passed bool   // the release went without it: the job stores it
}

// startTitle asks the title model for a title of the chat key from text,
// in the background; nil when there is no title model or no text.
func (t *Team) startTitle(ctx context.Context, key sessionstore.ChatKey, text string) *titleJob {
	if t.opts.TitleModel == nil || strings.TrimSpace(text) == "" {
		return nil
	}
	j := &titleJob{store: func(ctx context.Context, title string) error { return t.sessions.SetModelTitle(ctx, key, title) }}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), titleTimeout)
	go func() {
		defer cancel()
		title, err := askTitle(ctx, t.opts.TitleModel, text)
		if err != nil {
			t.opts.Logger.Info("no title from the model", "chat", key.ID, "error", err)
		}
		j.finish(ctx, title, t.opts.Logger.Warn)
	}()
	return j
}

// finish records the model's title and stores it itself when the release
// went without it.
func (j *titleJob) finish(ctx context.Context, title string, warn func(string, ...any)) {
	j.mu.Lock()
	j.done, j.title = true, title
	store := j.passed && title != ""
	j.mu.Unlock()
	if store {
		if err := j.store(ctx, title); err != nil {
			warn("store a chat's title", "error", err)
		}
	}
}

// take is the title for the commit that releases the turn's lease: the
// model's, when it is ready; "" otherwise, and the job stores it itself
// once it comes.
func (j *titleJob) take() string {
	if j == nil {
		return ""
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.done {
		j.taken = true
		return j.title
	}
	j.passed = true
	return ""
}

// leave says the release commit that was to carry the title failed: the
// job stores it itself.
func (j *titleJob) leave() {
	if j == nil {
		return
	}
	j.mu.Lock()
	store := j.taken && j.title != ""
	j.taken, j.passed = false, true
	title := j.title
	j.mu.Unlock()
	if store {
		ctx, cancel := context.WithTimeout(context.Background(), titleTimeout)
		defer cancel()
		_ = j.store(ctx, title)
	}
}

// askTitle asks m for a title of a conversation that starts with text.
func askTitle(ctx context.Context, m model.LLM, text string) (string, error) {
	req := &model.LLMRequest{
		Contents: []*genai.Content{genai.NewContentFromText(text, genai.RoleUser)},
		Config:   &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText(TitleInstruction, genai.RoleUser)},
	}
	var out strings.Builder
	for resp, err := range m.GenerateContent(ctx, req, false) {
		if err != nil {
			return "", err
		}
		if resp == nil || resp.Partial || resp.Content == nil {
			continue
		}
		for _, p := range resp.Content.Parts {
			if p != nil && !p.Thought {
				out.WriteString(p.Text)
			}
		}
	}
	return CleanTitle(out.String()), nil
}

// CleanTitle is s as a title: its first line, spaces collapsed, without
// surrounding quotes or a final full stop, at most MaxTitleRunes.
func CleanTitle(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Trim(s, "\"'“”‘’`*# ")
	s = strings.TrimRight(s, ".")
	return truncateRunes(s, MaxTitleRunes)
}

// firstWords are the first words of content's text, as a listing shows a
// chat until it has a title.
func firstWords(content *genai.Content) string {
	return shorten(messageText(content), maxFirstWordsRunes)
}

// messageText is the text of content's parts, thoughts left out.
func messageText(content *genai.Content) string {
	if content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range content.Parts {
		if p != nil && p.Text != "" && !p.Thought {
			b.WriteString(p.Text)
			b.WriteString(" ")
		}
	}
	return b.String()
}

// shorten is s with its spaces collapsed, cut at a word boundary to at
// most n runes, an ellipsis marking the cut.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := truncateRunes(s, n-1)
	if i := strings.LastIndexFunc(cut, unicode.IsSpace); i > n/2 {
		cut = cut[:i]
	}
	return cut + "…"
}

func truncateRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// checkTitle is a person's title for a chat as stored: trimmed, not
// empty, at most MaxTitleRunes, text without control characters.
func checkTitle(title string) (string, error) {
	title = strings.TrimSpace(title)
	switch n := utf8.RuneCountInString(title); {
	case !utf8.ValidString(title) || strings.IndexFunc(title, unicode.IsControl) >= 0:
		return "", fmt.Errorf("%w: it must be text, without control characters", ErrInvalidTitle)
	case n == 0:
		return "", fmt.Errorf("%w: it is empty", ErrInvalidTitle)
	case n > MaxTitleRunes:
		return "", fmt.Errorf("%w: it has %d characters, at most %d", ErrInvalidTitle, n, MaxTitleRunes)
	}
	return title, nil
}
