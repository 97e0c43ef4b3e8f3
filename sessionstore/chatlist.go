package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
)

// Listing is what a list of a user's chats shows of one chat, stored in
// the chat document beside its pointer. Each field is written by a commit
// that is made anyway: the activity by the commits that claim and release
// the chat's session (ChatActivity, ChatIdle), the calls waiting for the
// person by the ledger's commits that create and settle their records
// (ChatWaiting), the first words of the first message by the commit that
// creates the chat, the model's title by the commit that releases the
// first turn (or one of its own when it comes later), the person's title by
// a rename. None is a compare-and-set: each names its own fields, so they
// never undo one another.
type Listing struct {
	// FirstWords are the first words of the chat's first message, its
	// title until a better one is stored.
	FirstWords string
	// ModelTitle is the title a model gave the chat after its first
	// exchange; PersonTitle the one its user gave it (a rename), which
	// wins over it.
	ModelTitle, PersonTitle string
	// Waiting are the chat's calls waiting for the person, by call id.
	Waiting map[string]WaitingCall
	// ActiveUntil, while an invocation or a live segment holds the chat,
	// is the latest it can still be running (its deadline); nil when none
	// does. A holder that dies leaves it set until then.
	ActiveUntil *time.Time
	// Live: a live segment holds the chat (with ActiveUntil).
	Live bool
}

// Title is the chat's title as a list shows it: the person's, else the
// model's, else the first words of the first message.
func (l Listing) Title() string {
	switch {
	case l.PersonTitle != "":
		return l.PersonTitle
	case l.ModelTitle != "":
		return l.ModelTitle
	}
	return l.FirstWords
}

// WaitingCall is a call of the chat that waits for its user, as the
// listing keeps it: the ledger writes it with the call's record and removes
// it with the commit that settles the record, so it follows the record's
// first-writer-wins outcome.
type WaitingCall struct {
	Kind      string    `firestore:"kind"`   // the ledger's kind of call
	Client    string    `firestore:"client"` // the client (device) that may answer it
	AnyDevice bool      `firestore:"anyDevice"`
	Expires   time.Time `firestore:"expires"` // past it, the call waits no more, swept or not
}

// Listed is a chat as a list shows it.
type Listed struct {
	ID, Agent    string
	Created      time.Time
	LastActivity time.Time
	Listing
}

// ListCursor is where a page of ListChats ends: the next page starts after
// it. The zero cursor starts at the most recent chat.
type ListCursor struct {
	LastActivity time.Time
	ID           string
}

// ChatPage is one page of a user's chats, most recent activity first.
type ChatPage struct {
	Chats []Listed
	// Next is where the following page starts; nil after the last page.
	Next *ListCursor
}

// ListChats returns up to limit of user's chats, most recent activity
// first, after cursor: one query over the user's chat documents, ordered
// by lastActivity and then by id, both descending, served by the
// automatic single-field index on lastActivity (the order on the document
// name follows the last ordered field's direction). A deleted chat has no
// lastActivity, so the query does not find it.
func (s *Service) ListChats(ctx context.Context, app, user string, limit int, after ListCursor) (*ChatPage, error) {
	if err := validateID("app name", app); err != nil {
		return nil, err
	}
	if err := validateID("user id", user); err != nil {
		return nil, err
	}
	if after.ID != "" {
		if err := validateID("chat id", after.ID); err != nil {
			return nil, err
		}
	}
	col := s.userRef(app, user).Collection("chats")
	q := col.OrderBy(fieldLastActivity, firestore.Desc).OrderBy(firestore.DocumentID, firestore.Desc).Limit(limit + 1)
	if after.ID != "" {
		q = q.StartAfter(after.LastActivity, col.Doc(after.ID))
	}
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list chats: %w", FirestoreError(err))
	}
	page := &ChatPage{Chats: []Listed{}}
	for i, snap := range snaps {
		if i == limit {
			last := snaps[i-1]
			c, err := chatFrom(last)
			if err != nil {
				return nil, err
			}
			page.Next = &ListCursor{LastActivity: c.LastActivity, ID: last.Ref.ID}
			break
		}
		c, err := chatFrom(snap)
		if err != nil {
			return nil, err
		}
		if c.Deleted != nil {
			continue // its activity came back after the tombstone; still gone
		}
		page.Chats = append(page.Chats, Listed{ID: snap.Ref.ID, Agent: c.Agent, Created: c.Created, LastActivity: c.LastActivity, Listing: c.Listing})
	}
	return page, nil
}

// The listing's field names that more than one function writes.
const (
	fieldLastActivity = "lastActivity"
	fieldActiveUntil  = "activeUntil"
	fieldLive         = "live"
	fieldWaiting      = "waiting"
	fieldModelTitle   = "modelTitle"
	fieldPersonTitle  = "personTitle"
)

// Activity is what ChatActivity records: the chat was used at At, and is
// held until Until at the latest (live: by a live segment).
type Activity struct {
	At, Until time.Time
	Live      bool
}

// ChatActivity is the write, for the commit that claims the chat's
// session (a turn's message, a resume's answers), that records the chat's
// activity in its listing.
func (s *Service) ChatActivity(key ChatKey, a Activity) Write {
	return Update(s.ChatDoc(key.App, key.User, key.ID), time.Time{},
		firestore.Update{Path: fieldLastActivity, Value: a.At},
		firestore.Update{Path: fieldActiveUntil, Value: a.Until},
		firestore.Update{Path: fieldLive, Value: a.Live})
}

// ChatIdle is the write, for the commit that releases the chat's session,
// that records in its listing that nothing holds the chat any more, with
// the model's title when one came (title: "" for none).
func (s *Service) ChatIdle(key ChatKey, title string) Write {
	updates := []firestore.Update{
		{Path: fieldActiveUntil, Value: firestore.Delete},
		{Path: fieldLive, Value: firestore.Delete},
	}
	if title != "" {
		updates = append(updates, firestore.Update{Path: fieldModelTitle, Value: title})
	}
	return Update(s.ChatDoc(key.App, key.User, key.ID), time.Time{}, updates...)
}

// ChatWaiting is the write that records call id of the chat as waiting for
// its user (w), or as not waiting any more (w nil), for the commit that
// creates or settles the call's record.
func (s *Service) ChatWaiting(key ChatKey, id string, w *WaitingCall) Write {
	var v any = firestore.Delete
	if w != nil {
		v = *w
	}
	return Update(s.ChatDoc(key.App, key.User, key.ID), time.Time{}, firestore.Update{FieldPath: firestore.FieldPath{fieldWaiting, id}, Value: v})
}

// SetModelTitle stores the title a model gave the chat, in a commit of its
// own (when it came after the commit that released the first turn). A
// deleted chat keeps none.
func (s *Service) SetModelTitle(ctx context.Context, key ChatKey, title string) error {
	return s.setTitle(ctx, key, fieldModelTitle, title)
}

// RenameChat stores the title the chat's user gave it ("" goes back to the
// model's, or the first words). A chat that does not exist, or is
// deleted, wraps ErrNotFound.
func (s *Service) RenameChat(ctx context.Context, key ChatKey, title string) error {
	return s.setTitle(ctx, key, fieldPersonTitle, title)
}

func (s *Service) setTitle(ctx context.Context, key ChatKey, field, title string) error {
	if err := validateKey(key.App, key.User, key.ID); err != nil {
		return err
	}
	var v any = title
	if title == "" {
		v = firestore.Delete
	}
	ref := s.chatRef(key.App, key.User, key.ID)
	for attempt := 1; ; attempt++ {
		c, err := s.GetChat(ctx, key.App, key.User, key.ID)
		if err != nil {
			return err
		}
		if c.Deleted != nil {
			return fmt.Errorf("%w: chat %q", ErrNotFound, key.ID)
		}
		// Conditional on the chat as read: a tombstone written meanwhile
		// makes the write fail instead of landing on it; a listing's
		// write meanwhile makes it read again.
		_, err = ref.Update(ctx, []firestore.Update{{Path: field, Value: v}}, firestore.LastUpdateTime(c.version))
		switch err = FirestoreError(err); {
		case err == nil:
			return nil
		case errors.Is(err, ErrNotFound):
			return fmt.Errorf("%w: chat %q", ErrNotFound, key.ID)
		case !errors.Is(err, ErrConflict) || attempt == maxSaveAttempts:
			return fmt.Errorf("store the title of chat %q: %w", key.ID, err)
		}
	}
}
