package usechat

// A person's chats (docs/http-api.md, "Chats"):
//
//	GET    /Chat?limit=30&before=<next>   the user's chats, most recent activity first
//	PATCH  /Chat/{chatId}                 {"title": "…"}: a rename
//	DELETE /Chat/{chatId}                 the chat and everything under it
//
// A page of the list is one query (toolcallback.Team.ListChats); next is
// an opaque cursor naming where the page ended.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// defaultChats and maxChats bound a page of the list.
const defaultChats, maxChats = 30, 100

// chatList is GET /Chat.
type chatList struct {
	Chats []chatItem `json:"chats"`
	// Next, when set, is where the next page starts: send it as before.
	Next string `json:"next,omitempty"`
}

// chatItem is a chat as the list shows it.
type chatItem struct {
	ID           string                 `json:"id"`
	Title        string                 `json:"title"`
	Agent        string                 `json:"agent"`
	Created      time.Time              `json:"created"`
	LastActivity time.Time              `json:"lastActivity"`
	State        toolcallback.ChatState `json:"state"` // idle, running, live or waiting
	// Waiting counts the calls waiting for the person: those the asking
	// device may answer, by kind, and those only another device may.
	Waiting toolcallback.Waiting `json:"waiting"`
}

// List serves GET /Chat: a page of the caller's chats.
func (s *Server) List(w http.ResponseWriter, r *http.Request) error {
	user, err := s.userID(r)
	if err != nil {
		return err
	}
	req, err := readListQuery(r.URL.Query())
	if err != nil {
		return err
	}
	req.UserID, req.ClientID = user, r.Header.Get(deviceHeader)
	page, err := s.team.ListChats(r.Context(), req)
	if err != nil {
		return err
	}
	out := chatList{Chats: make([]chatItem, 0, len(page.Chats))}
	for _, c := range page.Chats {
		out.Chats = append(out.Chats, chatItem{ID: c.ID, Title: c.Title, Agent: c.Agent, Created: c.Created,
			LastActivity: c.LastActivity, State: c.State, Waiting: c.Waiting})
	}
	if page.Next != nil {
		out.Next = encodeCursor(*page.Next)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func readListQuery(v url.Values) (toolcallback.ListRequest, error) {
	req := toolcallback.ListRequest{Limit: defaultChats}
	for k := range v {
		if k != "limit" && k != "before" {
			return req, fmt.Errorf("%w: unknown parameter %q (limit, before)", errBadRequest, k)
		}
	}
	if v.Has("limit") {
		n, err := strconv.Atoi(v.Get("limit"))
		if err != nil || n < 1 || n > maxChats {
			return req, fmt.Errorf("%w: limit must be 1 to %d", errBadRequest, maxChats)
		}
		req.Limit = n
	}
	if v.Has("before") {
		c, err := decodeCursor(v.Get("before"))
		if err != nil {
			return req, err
		}
		req.After = c
	}
	return req, nil
}

// encodeCursor is c as the list's next: the last chat's activity time and
// id, base64url.
func encodeCursor(c sessionstore.ListCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.LastActivity.UnixMicro(), 10) + ":" + c.ID))
}

func decodeCursor(s string) (sessionstore.ListCursor, error) {
	bad := fmt.Errorf("%w: before must be the next of an earlier page", errBadRequest)
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return sessionstore.ListCursor{}, bad
	}
	at, id, ok := strings.Cut(string(b), ":")
	micros, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || sessionstore.ValidateID("chat id", id) != nil {
		return sessionstore.ListCursor{}, bad
	}
	return sessionstore.ListCursor{LastActivity: time.UnixMicro(micros).UTC(), ID: id}, nil
}

// renameBody is PATCH /Chat/{chatId}.
type renameBody struct {
	Title *string `json:"title"`
}

// Rename serves PATCH /Chat/{chatId}: the chat's new title.
func (s *Server) Rename(w http.ResponseWriter, r *http.Request, chatID string) error {
	user, err := s.userID(r)
	if err != nil {
		return err
	}
	var body renameBody
	if err := s.decodeSmall(w, r, &body); err != nil {
		return err
	}
	if body.Title == nil {
		return fmt.Errorf("%w: send the new title as title", errBadRequest)
	}
	if err := s.team.RenameChat(r.Context(), user, chatID, *body.Title); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": chatID, "title": strings.TrimSpace(*body.Title)})
	return nil
}

// Delete serves DELETE /Chat/{chatId}: 204 once the chat is gone, 202 when
// something kept holding it (it is gone for every reader already, and the
// sweeper finishes the deletion).
func (s *Server) Delete(w http.ResponseWriter, r *http.Request, chatID string) error {
	user, err := s.userID(r)
	if err != nil {
		return err
	}
	_, err = s.team.DeleteChat(r.Context(), user, chatID)
	switch {
	case errors.Is(err, toolcallback.ErrDeletionPending):
		writeJSON(w, http.StatusAccepted, map[string]string{"status": "deleting"})
		return nil
	case err != nil:
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// decodeSmall reads a small JSON body into v (DecodeJSON, within the
// body limit).
func (s *Server) decodeSmall(w http.ResponseWriter, r *http.Request, v any) error {
	return DecodeJSON(w, r, s.cfg.MaxBodyBytes, v)
}

// DecodeJSON reads a JSON request body of at most max bytes into v: JSON
// content type, no unknown members, nothing after the value, and nothing
// the decoder would not keep as written (CheckExactJSON). The JSON routes
// of every function decode their bodies here.
func DecodeJSON(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errMediaType
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			return errclass.ErrBodyTooLarge
		}
		return fmt.Errorf("%w: read body: %v", errBadRequest, err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the JSON value", errBadRequest)
	}
	if err := CheckExactJSON(body, v); err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return nil
}
