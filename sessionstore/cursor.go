package sessionstore

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
)

// ErrBadCursor: a page cursor that no query gave, or another app's.
var ErrBadCursor = errors.New("bad page cursor")

// Cursor is where a page of a query across documents ends: the value of
// the field the query orders by, and the last document's path (relative
// to the database), which breaks ties. The operator's console pages with
// it (this package's queries and the ledger's).
type Cursor struct {
	At   time.Time `json:"t"`
	Path string    `json:"p"`
}

// CursorAfter is the cursor after snap, a document of a query ordered by
// field.
func CursorAfter(snap *firestore.DocumentSnapshot, field string) Cursor {
	v, _ := snap.DataAt(field)
	t, _ := v.(time.Time)
	_, rel, _ := strings.Cut(snap.Ref.Path, "/documents/")
	return Cursor{At: t, Path: rel}
}

// String is c as a page's "next" token.
func (c Cursor) String() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// StartAfter continues q, ordered by a time field and then by document
// id, after the cursor s, which must name a document under prefix (the
// app's documents). "" is the first page.
func StartAfter(client *firestore.Client, q firestore.Query, s, prefix string) (firestore.Query, error) {
	if s == "" {
		return q, nil
	}
	var c Cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || !strings.HasPrefix(c.Path, prefix) {
		return q, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	doc := client.Doc(c.Path)
	if doc == nil {
		return q, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	return q.StartAfter(c.At, doc), nil
}
