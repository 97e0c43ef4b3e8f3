package a2ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrInvalid is wrapped by the *ValidationError that [Catalog.Decode],
// [Catalog.Validate] and [DecodeAction] return for input that breaks the
// protocol or the catalog.
var ErrInvalid = errors.New("invalid A2UI")

// ValidationError says what is wrong with a list of messages, one problem
// per entry, each "<where>: <what>" in words a model can act on, e.g.
// `messages[1].updateComponents.components[3]: Button "book": action
// missing`.
type ValidationError struct {
	Problems []string
}

// maxShown bounds the problems Error prints: past a few, a model fixes
// the first ones and tries again.
const maxShown = 8

func (e *ValidationError) Error() string {
	shown := e.Problems
	more := ""
	if len(shown) > maxShown {
		more = fmt.Sprintf("; and %d more", len(shown)-maxShown)
		shown = shown[:maxShown]
	}
	return strings.Join(shown, "; ") + more
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// problems collects what a check finds.
type problems []string

func (p *problems) add(where, format string, args ...any) {
	*p = append(*p, where+": "+fmt.Sprintf(format, args...))
}

// addIssues adds a schema's issues about the value at where.
func (p *problems) addIssues(where string, issues []issue) {
	for _, is := range issues {
		at := where
		if loc := location(is.at); loc != "" {
			at += ": " + loc
		}
		p.add(at, "%s", is.text)
	}
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Problems: p}
}

// Catalog checks messages against the A2UI v0.9 message schema and one
// component catalog, and against what a schema cannot say: that surfaces
// are created before they are used, that ids a component names exist, that
// binding paths are JSON Pointers, that a button's event has a name.
type Catalog struct {
	s *schemas
}

// BasicCatalog returns the catalog of the A2UI basic components. Its
// schemas are compiled on the first call; the error is only ever that of
// Baton's embedded schemas, and a test keeps it nil.
func BasicCatalog() (*Catalog, error) {
	s, err := compiled()
	if err != nil {
		return nil, err
	}
	return &Catalog{s: s}, nil
}

// ID returns the catalog id a createSurface must name.
func (c *Catalog) ID() string { return c.s.catalogID }

// Components returns the component types of the catalog, sorted.
func (c *Catalog) Components() []string { return c.s.componentNames() }

// Decode reads data, a JSON array of messages, and checks it: each message
// against the schema, each component against its catalog entry, then the
// list as a whole, given the surfaces already shown (nil: none). It returns
// the messages, or a *ValidationError listing every problem found.
func (c *Catalog) Decode(data []byte, shown *Surfaces) ([]Message, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, &ValidationError{Problems: []string{"messages: not JSON: " + err.Error()}}
	}
	list, ok := doc.([]any)
	if !ok || len(list) == 0 {
		return nil, &ValidationError{Problems: []string{"messages: want a non-empty JSON array of messages"}}
	}
	var p problems
	for i, m := range list {
		c.checkShape(&p, i, m)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	var msgs []Message
	if err := json.Unmarshal(data, &msgs); err != nil {
		// The schema admitted it: only a bug of Baton's could get here.
		return nil, fmt.Errorf("decode checked messages: %w", err)
	}
	c.checkList(&p, msgs, shown)
	if err := p.err(); err != nil {
		return nil, err
	}
	return msgs, nil
}

// Validate checks msgs as [Catalog.Decode] checks their JSON: for
// messages built in Go.
func (c *Catalog) Validate(msgs []Message, shown *Surfaces) error {
	data, err := json.Marshal(msgs)
	if err != nil {
		return fmt.Errorf("%w: messages cannot be encoded: %v", ErrInvalid, err)
	}
	_, err = c.Decode(data, shown)
	return err
}

// kinds are the message kinds, in the order errors name them.
var kinds = []string{KindCreateSurface, KindUpdateComponents, KindUpdateDataModel, KindDeleteSurface}

// checkShape checks message i, a decoded JSON value, against the schema:
// its envelope, then each of its components against the catalog.
func (c *Catalog) checkShape(p *problems, i int, m any) {
	where := fmt.Sprintf("messages[%d]", i)
	obj, ok := m.(map[string]any)
	if !ok {
		p.add(where, "want an object")
		return
	}
	var found []string
	for _, k := range kinds {
		if _, ok := obj[k]; ok {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		p.add(where, "want exactly one of %s, got %d", strings.Join(kinds, ", "), len(found))
		return
	}
	kind := found[0]
	if err := c.s.messages[kind].Validate(m); err != nil {
		p.addIssues(where, describe(err))
		return
	}
	if kind != KindUpdateComponents {
		return
	}
	components := obj[kind].(map[string]any)["components"].([]any)
	for j, comp := range components {
		c.checkComponent(p, fmt.Sprintf("%s.updateComponents.components[%d]", where, j), comp.(map[string]any))
	}
}

// checkComponent checks one component against its catalog entry.
func (c *Catalog) checkComponent(p *problems, where string, comp map[string]any) {
	typ, _ := comp["component"].(string)
	id, _ := comp["id"].(string)
	sch, ok := c.s.components[typ]
	if !ok {
		p.add(where, "unknown component %q (the catalog has %s)", typ, strings.Join(c.Components(), ", "))
		return
	}
	err := sch.Validate(comp)
	if err == nil {
		return
	}
	var issues []issue
	for _, is := range describe(err) {
		if len(is.at) == 0 && c.s.declared[typ][is.unknown] {
			continue // declared, but beside a property that failed
		}
		issues = append(issues, is)
	}
	p.addIssues(fmt.Sprintf("%s: %s %q", where, typ, id), issues)
}
