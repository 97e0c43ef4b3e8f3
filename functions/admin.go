package functions

// Admin: the operator's console (docs/operator.md). GET /admin is the
// page (package console/web's build) and GET /admin/config.json what it
// signs in with; /admin/api/ is its API, every route of which is for
// operators only (operatorOf) and is carried out by package console.

import (
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/console"
	"github.com/baton-run/baton/console/web"
	"github.com/baton-run/baton/toolcallback"
)

// adminPath is what follows /admin (or /Admin, the function's name) in
// r's path: "" for the page.
func adminPath(r *http.Request) string {
	p := r.URL.EscapedPath()
	if i := strings.Index(strings.ToLower(p), "/admin"); i >= 0 {
		p = p[i+len("/admin"):]
	}
	return strings.TrimPrefix(p, "/")
}

func (s *Server) admin(w http.ResponseWriter, r *http.Request, log *slog.Logger) error {
	rest := adminPath(r)
	api, isAPI := strings.CutPrefix(rest, "api/")
	if !isAPI {
		if r.Method != http.MethodGet {
			return fmt.Errorf("%w: the console's page is GET /admin", errMethod)
		}
		return s.adminPage(w, r, rest)
	}
	operator, err := s.operatorOf(r.Context(), r)
	if err != nil {
		return err
	}
	return s.adminAPI(w, r, operator, api)
}

// adminPage serves the page's files, and what it signs in with.
func (s *Server) adminPage(w http.ResponseWriter, r *http.Request, rest string) error {
	if rest == "config.json" {
		cfg := map[string]any{"mode": "firebase", "projectId": s.cfg.Project, "apiKey": s.cfg.FirebaseAPIKey,
			"authDomain": s.cfg.Project + ".firebaseapp.com"}
		if s.cfg.DevIdentity {
			cfg = map[string]any{"mode": "dev"}
		} else if s.cfg.AuthEmulator != "" {
			cfg["emulator"] = "http://" + s.cfg.AuthEmulator
		}
		writeJSON(w, http.StatusOK, cfg)
		return nil
	}
	files, err := web.Files()
	if err != nil {
		return err
	}
	if rest == "" || rest == "index.html" {
		if !strings.HasSuffix(r.URL.Path, "/") && rest == "" {
			http.Redirect(w, r, r.URL.Path+"/", http.StatusFound)
			return nil
		}
		rest = "index.html"
	}
	if _, err := fs.Stat(files, rest); err != nil {
		http.NotFound(w, r)
		return nil
	}
	if rest == "index.html" {
		w.Header().Set("Cache-Control", "no-store")
	}
	http.ServeFileFS(w, r, files, rest)
	return nil
}

// segments splits an API path into its unescaped segments.
func segments(p string) ([]string, error) {
	var out []string
	for _, seg := range strings.Split(strings.Trim(p, "/"), "/") {
		v, err := url.PathUnescape(seg)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errBadRequest, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// adminAPI routes a console API request of operator.
func (s *Server) adminAPI(w http.ResponseWriter, r *http.Request, operator, p string) error {
	seg, err := segments(p)
	if err != nil {
		return err
	}
	get, post := r.Method == http.MethodGet, r.Method == http.MethodPost
	switch {
	case get && len(seg) == 1 && seg[0] == "me":
		writeJSON(w, http.StatusOK, map[string]any{"operator": operator})
	case get && len(seg) == 1 && seg[0] == "overview":
		return s.adminOverview(w, r)
	case get && len(seg) == 1 && seg[0] == "metrics":
		return s.adminMetrics(w, r)
	case get && len(seg) == 1 && seg[0] == "chats":
		return s.adminChats(w, r)
	case get && len(seg) == 1 && seg[0] == "actions":
		limit, err := pageLimit(r)
		if err != nil {
			return err
		}
		actions, next, err := s.console.Actions(r.Context(), r.URL.Query().Get("cursor"), limit)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"actions": actions, "next": next})
	case post && len(seg) == 1 && seg[0] == "sweep":
		report, err := s.console.Sweep(r.Context(), operator)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, report)
	case len(seg) >= 3 && seg[0] == "chats":
		return s.adminChat(w, r, operator, seg[1:])
	case len(seg) >= 2 && seg[0] == "users":
		return s.adminUser(w, r, operator, seg[1:])
	default:
		return fmt.Errorf("%w: no console route %s /admin/api/%s", errBadRequest, r.Method, p)
	}
	return nil
}

// pageLimit is the limit query parameter (default 50).
func pageLimit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 50, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 200 {
		return 0, fmt.Errorf("%w: limit must be 1 to 200", errBadRequest)
	}
	return n, nil
}

func (s *Server) adminOverview(w http.ResponseWriter, r *http.Request) error {
	o, err := s.console.Overview(r.Context())
	if err != nil {
		return err
	}
	out := map[string]any{"overview": o}
	if s.metrics != nil {
		if out["metrics"], err = s.metrics.Read(r.Context()); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) adminMetrics(w http.ResponseWriter, r *http.Request) error {
	if s.metrics == nil {
		writeJSON(w, http.StatusOK, []MetricView{})
		return nil
	}
	views, err := s.metrics.Read(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, views)
	return nil
}

// adminChats is GET /admin/api/chats?state=&user=&agent=&minAge=&cursor=&limit=.
func (s *Server) adminChats(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := pageLimit(r)
	if err != nil {
		return err
	}
	cq := console.ChatQuery{State: console.State(q.Get("state")), User: q.Get("user"), Agent: q.Get("agent"), Cursor: q.Get("cursor"), Limit: limit}
	if v := q.Get("minAge"); v != "" {
		if cq.MinAge, err = time.ParseDuration(v); err != nil {
			return fmt.Errorf("%w: minAge %q: want a duration such as 10m", errBadRequest, v)
		}
	}
	page, err := s.console.Chats(r.Context(), cq)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// adminChat serves /admin/api/chats/{user}/{chat}[/...].
func (s *Server) adminChat(w http.ResponseWriter, r *http.Request, operator string, seg []string) error {
	t := console.Target{User: seg[0], Chat: seg[1]}
	ctx := r.Context()
	var out any
	var err error
	switch rest := strings.Join(seg[2:], "/"); {
	case r.Method == http.MethodGet && rest == "":
		out, err = s.console.ChatTimeline(ctx, t.User, t.Chat)
	case r.Method == http.MethodPost && rest == "stop":
		out, err = s.console.Stop(ctx, operator, t)
	case r.Method == http.MethodPost && rest == "release":
		out, err = s.console.Release(ctx, operator, t)
	case r.Method == http.MethodPost && len(seg) == 5 && seg[2] == "calls" && seg[4] == "answer":
		var body adminAnswer
		if err := s.decodeJSON(w, r, &body); err != nil {
			return err
		}
		t.Call = seg[3]
		out, err = s.console.Answer(ctx, operator, t, toolcallback.Answer{Output: body.Output, Error: body.Error, Approved: body.Approved, Payload: body.Payload})
	case r.Method == http.MethodPost && len(seg) == 5 && seg[2] == "calls" && seg[4] == "expire":
		var body adminReason
		if err := s.decodeJSON(w, r, &body); err != nil {
			return err
		}
		t.Call = seg[3]
		out, err = s.console.Expire(ctx, operator, t, body.Reason)
	default:
		return fmt.Errorf("%w: no console route %s for a chat", errBadRequest, r.Method)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// adminAnswer is an operator's answer: exactly one of output, error and
// approved (with an approval's optional payload), as ToolResult takes.
type adminAnswer struct {
	Output   map[string]any `json:"output,omitempty"`
	Error    string         `json:"error,omitempty"`
	Approved *bool          `json:"approved,omitempty"`
	Payload  any            `json:"payload,omitempty"`
}

// adminReason is the body of an expiry, a block or an unblock.
type adminReason struct {
	Reason string `json:"reason"`
}

// adminUser serves /admin/api/users/{user}[/block|/unblock].
func (s *Server) adminUser(w http.ResponseWriter, r *http.Request, operator string, seg []string) error {
	user, ctx := seg[0], r.Context()
	switch rest := strings.Join(seg[1:], "/"); {
	case r.Method == http.MethodGet && rest == "":
		limit, err := pageLimit(r)
		if err != nil {
			return err
		}
		page, err := s.console.User(ctx, user, r.URL.Query().Get("cursor"), limit)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, page)
	case r.Method == http.MethodPost && (rest == "block" || rest == "unblock"):
		var body adminReason
		if err := s.decodeJSON(w, r, &body); err != nil {
			return err
		}
		if err := s.console.SetBlocked(ctx, operator, user, rest == "block", body.Reason); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"user": user, "blocked": rest == "block"})
	case r.Method == http.MethodDelete && rest == "":
		if err := s.console.DeleteUser(ctx, operator, user); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		return fmt.Errorf("%w: no console route %s for a user", errBadRequest, r.Method)
	}
	return nil
}
