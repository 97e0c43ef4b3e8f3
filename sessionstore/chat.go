package sessionstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
)

// ChatKey names a chat: its app, its user and its id.
type ChatKey struct{ App, User, ID string }

// Chat is a chat session: the id a client holds, pointing at the one ADK
// session active for it and the agent that session belongs to. Switching
// agents replaces the ADK session; the chat id stays.
type Chat struct {
	App, UserID, ID string
	Agent           string // the active agent
	SessionID       string // the active ADK session; internal, never shown to clients
	Created         time.Time
	LastActivity    time.Time
	LastSwitch      time.Time
	Switches        int
	// Building is the ADK session a switch in progress is building. If the
	// switch dies, it is an orphan that cleanup deletes.
	Building string
	// Retired lists ADK sessions the chat used before; cleanup makes sure
	// they are gone.
	Retired []string
	// CleanupAt is when cleanup must look at the chat (a switch that may
	// have died, retired sessions to delete); nil when there is nothing to do.
	CleanupAt *time.Time
	// MCP holds the chat's sessions with Streamable HTTP MCP servers, by
	// server name, so that any instance continues them (see SetChatMCP).
	MCP map[string]MCPSession
	// Listing is what a list of the user's chats shows of it (ListChats),
	// kept current by the commits that change it (chatlist.go).
	Listing
	// Deleted, when set, is when the chat's deletion began: the chat is
	// gone for every reader from then on, and its documents are being
	// removed (chatdelete.go).
	Deleted *time.Time

	version time.Time
	// read is the chat's pointer as read or last saved, which SaveChat's
	// compare-and-set compares.
	read chatPointer
}

// chatPointer is what SaveChat's compare-and-set protects: which session
// the chat points at and what its cleanup must find. The fields a list
// shows (Listing) are written beside it by other commits and are not part
// of it.
type chatPointer struct {
	agent, session, building string
	switches                 int
	retired                  string
	// Times as Firestore keeps them: microseconds.
	cleanupAt, deleted int64
}

func (c *Chat) pointer() chatPointer {
	p := chatPointer{agent: c.Agent, session: c.SessionID, building: c.Building, switches: c.Switches,
		retired: strings.Join(c.Retired, "\x00")}
	if c.CleanupAt != nil {
		p.cleanupAt = c.CleanupAt.UnixMicro()
	}
	if c.Deleted != nil {
		p.deleted = c.Deleted.UnixMicro()
	}
	return p
}

// chatDoc is the stored form of a Chat, at {root}/{app}/users/{user}/chats/{id}.
type chatDoc struct {
	App          string     `firestore:"app"`
	User         string     `firestore:"user"`
	ID           string     `firestore:"id"`
	Scope        string     `firestore:"scope"`
	Agent        string     `firestore:"agent"`
	Session      string     `firestore:"session"`
	Created      time.Time  `firestore:"created"`
	LastActivity time.Time  `firestore:"lastActivity"`
	LastSwitch   time.Time  `firestore:"lastSwitch"`
	Switches     int        `firestore:"switches"`
	Building     string     `firestore:"building"`
	Retired      []string   `firestore:"retired"`
	CleanupAt    *time.Time `firestore:"cleanupAt"`
	// MCP is written only by SetChatMCP, never by SaveChat.
	MCP map[string]MCPSession `firestore:"mcp,omitempty"`
	// The listing's fields (chatlist.go), each written by the commits
	// that change it, never by SaveChat.
	Title       string                 `firestore:"title,omitempty"`
	ModelTitle  string                 `firestore:"modelTitle,omitempty"`
	PersonTitle string                 `firestore:"personTitle,omitempty"`
	Waiting     map[string]WaitingCall `firestore:"waiting,omitempty"`
	ActiveUntil *time.Time             `firestore:"activeUntil,omitempty"`
	Live        bool                   `firestore:"live,omitempty"`
	// Deleted is the tombstone (chatdelete.go); GCAt its time to live,
	// once the deletion finished.
	Deleted *time.Time `firestore:"deleted,omitempty"`
	GCAt    *time.Time `firestore:"gcAt,omitempty"`
}

func (s *Service) chatRef(app, user, id string) *firestore.DocumentRef {
	return s.userRef(app, user).Collection("chats").Doc(id)
}

func (c *Chat) doc(scope string) chatDoc {
	retired := c.Retired
	if retired == nil {
		retired = []string{}
	}
	return chatDoc{
		App: c.App, User: c.UserID, ID: c.ID, Scope: scope, Agent: c.Agent, Session: c.SessionID,
		Created: c.Created, LastActivity: c.LastActivity, LastSwitch: c.LastSwitch, Switches: c.Switches,
		Building: c.Building, Retired: retired, CleanupAt: c.CleanupAt,
		Title: c.FirstWords, ActiveUntil: c.ActiveUntil, Live: c.Live,
	}
}

func chatFrom(snap *firestore.DocumentSnapshot) (*Chat, error) {
	var d chatDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, fmt.Errorf("decode chat %s: %w", snap.Ref.ID, err)
	}
	c := &Chat{
		App: d.App, UserID: d.User, ID: d.ID, Agent: d.Agent, SessionID: d.Session,
		Created: d.Created, LastActivity: d.LastActivity, LastSwitch: d.LastSwitch, Switches: d.Switches,
		Building: d.Building, Retired: d.Retired, CleanupAt: d.CleanupAt, MCP: d.MCP, Deleted: d.Deleted,
		Listing: Listing{FirstWords: d.Title, ModelTitle: d.ModelTitle, PersonTitle: d.PersonTitle,
			Waiting: d.Waiting, ActiveUntil: d.ActiveUntil, Live: d.Live},
		version: snap.UpdateTime,
	}
	c.read = c.pointer()
	return c, nil
}

// GetChat reads a chat. A missing chat, or another user's, wraps
// ErrNotFound.
func (s *Service) GetChat(ctx context.Context, app, user, id string) (*Chat, error) {
	if err := validateKey(app, user, id); err != nil {
		return nil, err
	}
	snap, err := s.chatRef(app, user, id).Get(ctx)
	switch err = FirestoreError(err); {
	case errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("%w: chat %q", ErrNotFound, id)
	case err != nil:
		return nil, fmt.Errorf("read chat %q: %w", id, err)
	}
	return chatFrom(snap)
}

// CreateChat stores a new chat on its own, pointing at a session built
// otherwise (CreateWithEvents), as tests and imports do; a chat's first
// turn stores it with its session instead (ClaimNewSession). It fails with
// ErrAlreadyExists when the user has a chat with that id.
func (s *Service) CreateChat(ctx context.Context, c *Chat) error {
	if err := validateKey(c.App, c.UserID, c.ID); err != nil {
		return err
	}
	res, err := s.chatRef(c.App, c.UserID, c.ID).Create(ctx, c.doc(s.scope(c.App)))
	switch err = FirestoreError(err); {
	case errors.Is(err, ErrAlreadyExists):
		return fmt.Errorf("%w: chat %q", ErrAlreadyExists, c.ID)
	case err != nil:
		return fmt.Errorf("create chat %q: %w", c.ID, err)
	}
	c.version, c.read = res.UpdateTime, c.pointer()
	return nil
}

// maxSaveAttempts bounds how often SaveChat reads a chat again whose
// listing changed meanwhile.
const maxSaveAttempts = 4

// SaveChat writes c if the stored chat's pointer (its agent, session,
// switches, the sessions its cleanup must find, its tombstone) has not
// changed since c was read or last saved; otherwise it fails with
// ErrConflict and writes nothing. This compare-and-set is what makes a
// switch's pointer flip atomic. It is a precondition on the document's
// update time; the commits that keep the chat's listing current (an
// answer, a turn's activity) also change that time, so a precondition
// that fails reads the chat again and, when only its listing moved,
// writes on that version.
func (s *Service) SaveChat(ctx context.Context, c *Chat) error {
	d := c.doc(s.scope(c.App))
	ref := s.chatRef(c.App, c.UserID, c.ID)
	updates := []firestore.Update{
		{Path: "agent", Value: d.Agent},
		{Path: "session", Value: d.Session},
		{Path: "lastActivity", Value: d.LastActivity},
		{Path: "lastSwitch", Value: d.LastSwitch},
		{Path: "switches", Value: d.Switches},
		{Path: "building", Value: d.Building},
		{Path: "retired", Value: d.Retired},
		{Path: "cleanupAt", Value: d.CleanupAt},
	}
	if c.Deleted != nil {
		// A deleted chat is seen by no list: its activity stays unset.
		updates[2] = firestore.Update{Path: "lastActivity", Value: firestore.Delete}
	}
	version := c.version
	for attempt := 1; ; attempt++ {
		res, err := ref.Update(ctx, updates, firestore.LastUpdateTime(version))
		switch err = FirestoreError(err); {
		case err == nil:
			c.version, c.read = res.UpdateTime, c.pointer()
			return nil
		case errors.Is(err, ErrNotFound):
			return fmt.Errorf("%w: chat %q", ErrConflict, c.ID)
		case !errors.Is(err, ErrConflict):
			return fmt.Errorf("save chat %q: %w", c.ID, err)
		}
		fresh, ferr := s.GetChat(ctx, c.App, c.UserID, c.ID)
		if ferr != nil || fresh.read != c.read || attempt == maxSaveAttempts {
			return fmt.Errorf("%w: chat %q", ErrConflict, c.ID)
		}
		version = fresh.version
	}
}

// ChatsToClean returns chats of app whose cleanup is due at now, oldest
// first, at most limit.
func (s *Service) ChatsToClean(ctx context.Context, app string, now time.Time, limit int) ([]*Chat, error) {
	return s.queryChats(ctx, app, "cleanupAt", now, limit)
}

// IdleChats returns chats of app with no activity since before, oldest
// first, at most limit.
func (s *Service) IdleChats(ctx context.Context, app string, before time.Time, limit int) ([]*Chat, error) {
	return s.queryChats(ctx, app, "lastActivity", before, limit)
}

func (s *Service) queryChats(ctx context.Context, app, field string, upTo time.Time, limit int) ([]*Chat, error) {
	if err := validateID("app name", app); err != nil {
		return nil, err
	}
	snaps, err := s.client.CollectionGroup("chats").
		Where("scope", "==", s.scope(app)).
		Where(field, "<=", upTo).
		OrderBy(field, firestore.Asc).
		Limit(limit).
		Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("query chats by %s: %w", field, FirestoreError(err))
	}
	return chatsFrom(snaps)
}

// chatsFrom decodes the chats snaps hold.
func chatsFrom(snaps []*firestore.DocumentSnapshot) ([]*Chat, error) {
	out := make([]*Chat, 0, len(snaps))
	for _, snap := range snaps {
		c, err := chatFrom(snap)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// maxDeleteBatch bounds one delete commit (Firestore allows 500 writes).
const maxDeleteBatch = 400

// PurgeSession deletes a session with everything stored under its
// document: event chunks and the subcollections of other packages (the
// pending-call ledger). Firestore deletes no subcollection by itself, and TTL
// does not cascade. It deletes in bounded batches and returns the number of
// documents deleted; a session that does not exist is not an error.
func (s *Service) PurgeSession(ctx context.Context, app, user, id string) (int, error) {
	if err := validateKey(app, user, id); err != nil {
		return 0, err
	}
	ref := s.sessionRef(app, user, id)
	deleted := 0
	cols := ref.Collections(ctx)
	for {
		col, err := cols.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return deleted, fmt.Errorf("list collections of %q: %w", id, FirestoreError(err))
		}
		n, err := s.deleteCollection(ctx, col)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	// The document last, with the day's tokens it counted moved to the
	// user's day document.
	err := s.readModifyWrite(ctx, ref, func(doc *sessionDoc, batch *firestore.WriteBatch, pre firestore.Precondition) error {
		batch.Delete(ref, pre)
		s.carryTokens(ctx, batch, app, user, doc)
		return nil
	}, nil)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return deleted, fmt.Errorf("delete session %q: %w", id, err)
	}
	return deleted + 1, nil
}

func (s *Service) deleteCollection(ctx context.Context, col *firestore.CollectionRef) (int, error) {
	deleted := 0
	for {
		refs, err := col.Limit(maxDeleteBatch).Select().Documents(ctx).GetAll()
		if err != nil {
			return deleted, fmt.Errorf("list %s: %w", col.Path, FirestoreError(err))
		}
		if len(refs) == 0 {
			return deleted, nil
		}
		batch := s.client.Batch()
		for _, r := range refs {
			batch.Delete(r.Ref)
		}
		if _, err := batch.Commit(ctx); err != nil {
			return deleted, fmt.Errorf("delete from %s: %w", col.Path, FirestoreError(err))
		}
		deleted += len(refs)
	}
}

// maxSwitchSuffix is the longest suffix ChatSessionID appends to a chat
// id: "~" and a switch count of up to 19 digits.
const maxSwitchSuffix = 20

// ChatSessionID names the ADK session of a chat's n-th agent. It is a valid
// document id for every valid chat id and every n, so a chat id that is
// accepted once works for the chat's whole life: "chat~n" while that fits
// whatever n becomes, and for a longer chat id "n~sha256-<hex of the chat
// id>". The two forms never meet: in the first, the last '~' is followed
// by digits only; in the second, by "sha256-".
func ChatSessionID(chat string, n int) string {
	if len(chat)+maxSwitchSuffix <= MaxIDBytes {
		return fmt.Sprintf("%s~%d", chat, n)
	}
	return fmt.Sprintf("%d~sha256-%x", n, sha256.Sum256([]byte(chat)))
}

// ChatOfSession returns the chat whose n-th agent session sid is (the
// inverse of ChatSessionID), so that a tool can keep what it holds per
// chat across agent switches. ok is false for a session that is not a
// chat's (one made outside a Team) and for the hashed form of chat
// ids too long to carry, whose chat id cannot be recovered.
func ChatOfSession(sid string) (chat string, ok bool) {
	i := strings.LastIndexByte(sid, '~')
	if i <= 0 || i == len(sid)-1 {
		return "", false
	}
	for _, c := range sid[i+1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return sid[:i], true
}
