package feedback

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/firestore"

	"github.com/baton-run/baton/sessionstore"
)

// ErrInvalid: a rating that is not "up" or "down", or a comment over
// MaxCommentRunes or not text. Nothing is written.
var ErrInvalid = errors.New("invalid feedback")

// collection is the collection of ratings under a chat's document.
const collection = "feedback"

// MaxCommentRunes bounds a rating's comment.
const MaxCommentRunes = 2000

// Rating is a person's rating of an assistant message.
type Rating struct {
	// Rating is "up" or "down".
	Rating string `firestore:"rating" json:"rating"`
	// Comment is what the person added, if anything.
	Comment string `firestore:"comment,omitempty" json:"comment,omitempty"`
	// Updated is when it was last given.
	Updated time.Time `firestore:"updated" json:"updated"`
}

// Check reports whether r may be stored: ErrInvalid when it may not.
func (r Rating) Check() error {
	if r.Rating != "up" && r.Rating != "down" {
		return fmt.Errorf(`%w: rating must be "up" or "down"`, ErrInvalid)
	}
	if !utf8.ValidString(r.Comment) || strings.ContainsRune(r.Comment, 0) {
		return fmt.Errorf("%w: the comment is not text", ErrInvalid)
	}
	if n := utf8.RuneCountInString(r.Comment); n > MaxCommentRunes {
		return fmt.Errorf("%w: the comment has %d characters, at most %d", ErrInvalid, n, MaxCommentRunes)
	}
	return nil
}

// Store keeps the ratings of one app's chats.
type Store struct {
	sessions *sessionstore.Service
	app      string
}

// New returns the store of app's ratings, in the database sessions stores
// in.
func New(sessions *sessionstore.Service, app string) *Store {
	return &Store{sessions: sessions, app: app}
}

// Doc names the rating of message in user's chat.
func (s *Store) Doc(user, chat, message string) sessionstore.DocName {
	return s.sessions.ChatDoc(s.app, user, chat).Child(collection, message)
}

func (s *Store) ref(user, chat, message string) *firestore.DocumentRef {
	return s.sessions.Client().Doc(s.Doc(user, chat, message).Path())
}

// Put stores r as user's rating of message in chat, replacing any earlier
// one. The caller has checked that the message is an assistant message of
// the user's chat.
func (s *Store) Put(ctx context.Context, user, chat, message string, r Rating) error {
	if err := r.Check(); err != nil {
		return err
	}
	if err := checkIDs(user, chat, message); err != nil {
		return err
	}
	if _, err := s.ref(user, chat, message).Set(ctx, r); err != nil {
		return fmt.Errorf("store a rating: %w", sessionstore.FirestoreError(err))
	}
	return nil
}

// Delete deletes user's rating of message in chat; deleting one that does
// not exist is no error.
func (s *Store) Delete(ctx context.Context, user, chat, message string) error {
	if err := checkIDs(user, chat, message); err != nil {
		return err
	}
	if _, err := s.ref(user, chat, message).Delete(ctx); err != nil {
		return fmt.Errorf("delete a rating: %w", sessionstore.FirestoreError(err))
	}
	return nil
}

func checkIDs(user, chat, message string) error {
	for _, id := range [][2]string{{"user id", user}, {"chat id", chat}, {"message id", message}} {
		if err := sessionstore.ValidateID(id[0], id[1]); err != nil {
			return err
		}
	}
	return nil
}

// Ratings reads user's ratings of messages in chat, in one round trip: by
// message id, the messages without one left out.
func (s *Store) Ratings(ctx context.Context, user, chat string, messages []string) (map[string]Rating, error) {
	out := map[string]Rating{}
	if len(messages) == 0 {
		return out, nil
	}
	names := make([]sessionstore.DocName, 0, len(messages))
	for _, m := range messages {
		if sessionstore.ValidateID("message id", m) == nil {
			names = append(names, s.Doc(user, chat, m))
		}
	}
	docs, err := s.sessions.ReadDocs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("read ratings: %w", err)
	}
	for _, d := range docs {
		if !d.Exists() {
			continue
		}
		var r Rating
		if err := d.DataTo(&r); err != nil {
			return nil, fmt.Errorf("decode a rating: %w", err)
		}
		out[d.Name().ID()] = r
	}
	return out, nil
}

// All reads every rating of user's chat, by message id (an export's).
func (s *Store) All(ctx context.Context, user, chat string) (map[string]Rating, error) {
	col := s.sessions.Client().Doc(s.sessions.ChatDoc(s.app, user, chat).Path()).Collection(collection)
	snaps, err := col.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("read ratings: %w", sessionstore.FirestoreError(err))
	}
	out := make(map[string]Rating, len(snaps))
	for _, snap := range snaps {
		var r Rating
		if err := snap.DataTo(&r); err != nil {
			return nil, fmt.Errorf("decode a rating: %w", err)
		}
		out[snap.Ref.ID] = r
	}
	return out, nil
}

// Removed are the writes that delete user's ratings of messages in chat,
// for the commit that takes those messages back (a rewind's).
func (s *Store) Removed(user, chat string, messages []string) []sessionstore.Write {
	out := make([]sessionstore.Write, 0, len(messages))
	for _, m := range messages {
		if sessionstore.ValidateID("message id", m) == nil {
			out = append(out, sessionstore.Delete(s.Doc(user, chat, m)))
		}
	}
	return out
}

// DataKinds are the kinds of a person's data this package keeps (see
// sessionstore.DataKind).
var DataKinds = []sessionstore.DataKind{
	{Name: "rating", Owner: "feedback", Collection: collection, Path: "{chat}/feedback/{message}", Scope: sessionstore.ScopeChat,
		Export: sessionstore.ExportMessages, Kept: "until the person deletes it, or its message is taken back, or the chat is deleted"},
}
