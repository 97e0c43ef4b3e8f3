package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
)

// A chat is deleted in steps (toolcallback.Team.DeleteChat carries them
// out), the first of which makes it gone for every reader: MarkChatDeleted
// writes the tombstone into the chat document (Deleted, lastActivity
// removed so that no list finds it, cleanupAt so that the sweeper finishes
// a deletion that died); the chat's sessions, files and the documents
// other parts keep under it go next; FinishChatDeletion removes what is
// under the chat document and leaves the document as a bare tombstone,
// which its time to live (gcAt) collects: until then, a late answer to one
// of the chat's calls learns that the chat is gone rather than that it
// never was.

// MarkChatDeleted writes the tombstone of user's chat id at now, unless the
// chat has one: from then on no list shows the chat, no turn runs in it,
// and its calls take no answer. cleanup is when the sweeper finishes the
// deletion if nothing else has by then. It returns the chat as marked; a
// chat that does not exist wraps ErrNotFound.
func (s *Service) MarkChatDeleted(ctx context.Context, key ChatKey, now, cleanup time.Time) (*Chat, error) {
	c, err := s.GetChat(ctx, key.App, key.User, key.ID)
	if err != nil || c.Deleted != nil {
		return c, err
	}
	// Unconditional: the tombstone wins over whatever is written
	// meanwhile; the document must exist (Update).
	res, err := s.chatRef(key.App, key.User, key.ID).Update(ctx, []firestore.Update{
		{Path: "deleted", Value: now},
		{Path: fieldLastActivity, Value: firestore.Delete},
		{Path: "cleanupAt", Value: cleanup},
	})
	switch err = FirestoreError(err); {
	case errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("%w: chat %q", ErrNotFound, key.ID)
	case err != nil:
		return nil, fmt.Errorf("mark chat %q deleted: %w", key.ID, err)
	}
	c.Deleted, c.CleanupAt, c.LastActivity = &now, &cleanup, time.Time{}
	c.version, c.read = res.UpdateTime, c.pointer()
	return c, nil
}

// FinishChatDeletion is a deletion's last step, once the chat's sessions
// and files are gone: it deletes every document other parts keep under
// the chat (to any depth), then leaves the chat document a bare tombstone
// (its app, user, id and deletion time) that Firestore collects keep after
// it. It returns how many documents it deleted. The chat must be marked
// deleted (MarkChatDeleted).
func (s *Service) FinishChatDeletion(ctx context.Context, c *Chat, keep time.Duration) (int, error) {
	if c.Deleted == nil {
		return 0, fmt.Errorf("finish deleting chat %q: it is not marked deleted", c.ID)
	}
	ref := s.chatRef(c.App, c.UserID, c.ID)
	n, err := s.deleteTree(ctx, ref)
	if err != nil {
		return n, err
	}
	gc := c.Deleted.Add(keep)
	_, err = ref.Set(ctx, chatDoc{App: c.App, User: c.UserID, ID: c.ID, Scope: s.scope(c.App), Deleted: c.Deleted, GCAt: &gc,
		Retired: []string{}})
	if err = FirestoreError(err); err != nil {
		return n, fmt.Errorf("leave the tombstone of chat %q: %w", c.ID, err)
	}
	c.Building, c.Retired, c.CleanupAt, c.MCP, c.Listing = "", nil, nil, nil, Listing{}
	return n, nil
}

// Finished reports whether c's deletion is done: its tombstone is all
// that is left of it (FinishChatDeletion).
func (c *Chat) Finished() bool { return c.Deleted != nil && c.CleanupAt == nil && c.SessionID == "" }

// UserChats returns up to limit of user's chat documents, deleted ones
// included, in the order of their ids, after the id after ("": from the
// first): what an account's deletion walks.
func (s *Service) UserChats(ctx context.Context, app, user string, limit int, after string) ([]*Chat, error) {
	if err := validateID("app name", app); err != nil {
		return nil, err
	}
	if err := validateID("user id", user); err != nil {
		return nil, err
	}
	col := s.userRef(app, user).Collection("chats")
	q := col.OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(col.Doc(after))
	}
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list the chats of a user: %w", FirestoreError(err))
	}
	return chatsFrom(snaps)
}

// deleteTree deletes every subcollection of ref, to any depth (not ref
// itself), and returns how many documents it deleted.
func (s *Service) deleteTree(ctx context.Context, ref *firestore.DocumentRef) (int, error) {
	deleted := 0
	cols := ref.Collections(ctx)
	for {
		col, err := cols.Next()
		if errors.Is(err, iterator.Done) {
			return deleted, nil
		}
		if err != nil {
			return deleted, fmt.Errorf("list collections of %s: %w", ref.Path, FirestoreError(err))
		}
		n, err := s.deleteCollectionTree(ctx, col)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
}

// deleteCollectionTree deletes every document of col with what is under
// each, in bounded batches.
func (s *Service) deleteCollectionTree(ctx context.Context, col *firestore.CollectionRef) (int, error) {
	deleted := 0
	docs := col.DocumentRefs(ctx) // missing documents with subcollections too
	for {
		doc, err := docs.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return deleted, fmt.Errorf("list %s: %w", col.Path, FirestoreError(err))
		}
		n, err := s.deleteTree(ctx, doc)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	n, err := s.deleteCollection(ctx, col)
	return deleted + n, err
}
