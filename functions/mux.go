package functions

import (
	"net/http"
	"net/url"
)

// agentCardPath is where A2A clients look for an agent card, below the URL
// they are given (A2A's discovery convention).
const agentCardPath = "/.well-known/agent-card.json"

// Mux returns a new ServeMux that serves every function on one port, as the
// local runner and a hand-written main do: each function at /{Name}, with
// its sub-paths (GET /Chat/{chatId}, GET /Chat/{chatId}/stream,
// /A2A/.well-known/agent-card.json), and the A2A agent card at the host's
// /.well-known/agent-card.json too, where an SDK given the host looks. The
// card names /A2A as the agent's URL wherever it is read from.
//
// Deployed, each function has a URL of its own and serves its sub-paths
// below it; Mux is for serving them all from one process. The caller may
// add routes of its own (a page at "/").
func (s *Server) Mux() *http.ServeMux {
	mux := http.NewServeMux()
	for _, name := range Names {
		h := s.Handler(name)
		mux.Handle("/"+name, h)
		mux.Handle("/"+name+"/", h)
	}
	// The console at /admin, as its page names its own paths.
	admin := s.Handler(NameAdmin)
	mux.Handle("/admin", admin)
	mux.Handle("/admin/", admin)
	a2a := s.Handler(NameA2A)
	mux.Handle(agentCardPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The card takes its URL from the path it was asked at: ask at the
		// one below /A2A.
		r2 := r.Clone(r.Context())
		r2.URL = &url.URL{Path: "/" + NameA2A + agentCardPath, RawQuery: r.URL.RawQuery}
		r2.RequestURI = r2.URL.RequestURI()
		a2a.ServeHTTP(w, r2)
	}))
	return mux
}
