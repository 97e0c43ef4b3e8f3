package mcpregistry

import (
	"errors"
	"fmt"
	"regexp"
)

// Server is an MCP server agents may use: over Streamable HTTP when URL is
// set, or as a stdio process when Command is. Its tools appear to the model
// as Name + "_" + the tool's own name.
type Server struct {
	Name string
	// URL of a Streamable HTTP server. Its sessions are kept per chat and
	// continued by any instance.
	URL string
	// Headers are sent with every HTTP request, e.g. Authorization.
	Headers map[string]string
	// Command runs a stdio server (argv; Command[0] is the program). Each
	// instance runs its own processes: stdio sessions do not move between
	// instances.
	Command []string
	// Env is added to a stdio server's environment ("KEY=value").
	Env []string
}

// Transport names how a server is reached: "http" or "stdio".
func (s Server) Transport() string {
	if len(s.Command) > 0 {
		return "stdio"
	}
	return "http"
}

var serverName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,31}$`)

func (s Server) validate() error {
	if !serverName.MatchString(s.Name) {
		return fmt.Errorf("MCP server name %q: want a letter, then up to 31 letters, digits or '-'", s.Name)
	}
	if (s.URL == "") == (len(s.Command) == 0) {
		return errors.New("MCP server " + s.Name + ": set exactly one of URL and Command")
	}
	return nil
}
