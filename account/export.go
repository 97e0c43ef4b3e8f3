package account

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/usechat"
)

// The export is one ZIP file, streamed as it is written: a ZIP holds the
// files as they are (no base64) and any system opens it; its JSON parts
// are NDJSON where they grow with the account (a line per chat, a line
// per message), so that a reader need not load them whole either. The
// writer holds one chat's history, or one file, at a time: its memory
// does not grow with the account (TestExportMemory), and neither does the
// response, which goes out as it is made. A failure part way ends the
// response there, and the download is incomplete.

// exporter writes one user's export.
type exporter struct {
	s    *Server
	user string
	now  time.Time
	zip  *zip.Writer
}

// parts writes each part of an export (Parts).
var parts = map[string]func(x *exporter, ctx context.Context) error{
	sessionstore.ExportAccount:  (*exporter).account,
	sessionstore.ExportState:    (*exporter).state,
	sessionstore.ExportChats:    (*exporter).chats,
	sessionstore.ExportMessages: (*exporter).messages,
	sessionstore.ExportUsage:    (*exporter).usage,
	chatfiles.ExportFiles:       (*exporter).files,
}

// export writes user's export to w: the README, then each part the map
// names, in its order.
func (s *Server) export(ctx context.Context, w io.Writer, user string, now time.Time) error {
	x := &exporter{s: s, user: user, now: now, zip: zip.NewWriter(w)}
	if err := x.write("README.txt", []byte(readme(user))); err != nil {
		return err
	}
	for _, p := range Parts() {
		write, ok := parts[p]
		if !ok {
			return fmt.Errorf("the export has no writer for its part %q", p)
		}
		if err := write(x, ctx); err != nil {
			return fmt.Errorf("export %s: %w", p, err)
		}
	}
	return x.zip.Close()
}

// create starts the file name of the export.
func (x *exporter) create(name string) (io.Writer, error) {
	return x.zip.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: x.now})
}

// write is a file of the export holding b.
func (x *exporter) write(name string, b []byte) error {
	w, err := x.create(name)
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

// writeJSON is a file of the export holding v as indented JSON.
func (x *exporter) writeJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return x.write(name, append(b, '\n'))
}

// chatDir is the folder of chat id in the export: a chat id may hold any
// character, a folder's name may not.
func chatDir(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "chats/" + hex.EncodeToString(sum[:8])
}

func (x *exporter) account(ctx context.Context) error {
	deleting, err := x.s.team.AccountDeletion(ctx, x.user)
	if err != nil {
		return err
	}
	return x.writeJSON("account.json", map[string]any{"user": x.user, "exported": x.now, "deleting": deleting})
}

func (x *exporter) state(ctx context.Context) error {
	state, err := x.s.sessions.UserState(ctx, x.s.team.App(), x.user)
	if err != nil {
		return err
	}
	return x.writeJSON("state.json", state)
}

// chatLine is a line of chats.ndjson.
type chatLine struct {
	ID           string    `json:"id"`
	Dir          string    `json:"dir"`
	Title        string    `json:"title"`
	Agent        string    `json:"agent"`
	Created      time.Time `json:"created"`
	LastActivity time.Time `json:"lastActivity"`
}

func (x *exporter) chats(ctx context.Context) error {
	w, err := x.create("chats.ndjson")
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	for c, err := range x.s.team.Chats(ctx, x.user) {
		if err != nil {
			return err
		}
		line := chatLine{ID: c.ID, Dir: chatDir(c.ID), Title: c.Title(), Agent: c.Agent, Created: c.Created, LastActivity: c.LastActivity}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// messages writes each chat's conversation, with its ratings, and its
// session's state: one chat read at a time.
func (x *exporter) messages(ctx context.Context) error {
	for c, err := range x.s.team.Chats(ctx, x.user) {
		if err != nil {
			return err
		}
		r, err := x.s.team.ChatRecord(ctx, c)
		if err != nil {
			return err
		}
		ratings, err := x.s.team.Feedback().All(ctx, x.user, c.ID)
		if err != nil {
			return err
		}
		w, err := x.create(path.Join(chatDir(c.ID), "messages.ndjson"))
		if err != nil {
			return err
		}
		fileURL := func(ref chatfiles.Ref) string { return "files/" + ref.ExportName() }
		if err := usechat.ExportMessages(w, r, ratings, fileURL); err != nil {
			return err
		}
		if err := x.writeJSON(path.Join(chatDir(c.ID), "state.json"), r.State); err != nil {
			return err
		}
	}
	return nil
}

// files writes each chat's files, then the user's own, one at a time.
func (x *exporter) files(ctx context.Context) error {
	for c, err := range x.s.team.Chats(ctx, x.user) {
		if err != nil {
			return err
		}
		if err := x.fileSet(ctx, c.ID, path.Join(chatDir(c.ID), "files")); err != nil {
			return err
		}
	}
	return x.fileSet(ctx, "", "files")
}

// fileSet writes the files of user's chat (""; the user's own) into dir.
func (x *exporter) fileSet(ctx context.Context, chat, dir string) error {
	return x.s.files.EachFile(ctx, x.user, chat, func(f chatfiles.File) error {
		return x.write(path.Join(dir, f.Ref.ExportName()), f.Blob.Data)
	})
}

func (x *exporter) usage(ctx context.Context) error {
	u, err := x.s.counter.Usage(ctx, x.user, x.now)
	if err != nil {
		return err
	}
	return x.writeJSON("usage.json", u)
}
