package a2ui

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// checkList checks what the schema cannot say about well-formed messages:
// their order against the surfaces shown (a surface is created before it
// is updated, and not twice), the catalog a surface names, and inside
// components the ids they name, their binding paths, their function
// arguments and their events' names.
func (c *Catalog) checkList(p *problems, msgs []Message, shown *Surfaces) {
	sim := &Surfaces{}
	if shown != nil {
		sim = shown.Clone()
	}
	// Per surface: where each component id was last defined in msgs.
	defined := make(map[string]map[string]string)
	var touched []string
	failed := make(map[string]bool) // a message could not apply: the tree says little
	for i, m := range msgs {
		where := fmt.Sprintf("messages[%d].%s", i, m.Kind())
		c.checkMessage(p, where, m)
		if err := sim.apply(m); err != nil {
			p.add(where, "%s", orderProblem(err, m.SurfaceID()))
			failed[m.SurfaceID()] = true
			continue
		}
		id := m.SurfaceID()
		switch {
		case m.CreateSurface != nil:
			defined[id] = make(map[string]string)
			touched = append(touched, id)
		case m.UpdateComponents != nil:
			if defined[id] == nil {
				defined[id] = make(map[string]string)
				touched = append(touched, id)
			}
			for j, comp := range m.UpdateComponents.Components {
				defined[id][comp.ID] = fmt.Sprintf("%s.components[%d]: %s %q", where, j, comp.Component, comp.ID)
			}
		}
	}
	for _, id := range touched {
		if sf, ok := sim.Surface(id); ok && !failed[id] {
			checkTree(p, sf, defined[id])
		}
	}
}

// orderProblem words an Apply error about a message on surface id.
func orderProblem(err error, id string) string {
	switch {
	case errors.Is(err, ErrNoSurface):
		return fmt.Sprintf("surface %q is not shown: send createSurface for it first", id)
	case errors.Is(err, ErrSurfaceExists):
		return fmt.Sprintf("surface %q already exists: update it, or delete it before creating it again", id)
	}
	return err.Error()
}

// checkMessage checks one message on its own.
func (c *Catalog) checkMessage(p *problems, where string, m Message) {
	switch {
	case m.CreateSurface != nil:
		if got := m.CreateSurface.CatalogID; got != c.ID() {
			p.add(where+".catalogId", "%q is not a catalog Baton serves: use %q", got, c.ID())
		}
	case m.UpdateDataModel != nil:
		if path := m.UpdateDataModel.Path; path != "" {
			if msg := pathProblem(path, true); msg != "" {
				p.add(where+".path", "%s", msg)
			}
		}
	case m.UpdateComponents != nil:
		seen := make(map[string]bool)
		for j, comp := range m.UpdateComponents.Components {
			at := fmt.Sprintf("%s.components[%d]: %s %q", where, j, comp.Component, comp.ID)
			if seen[comp.ID] {
				p.add(at, "id %q is used twice in this message", comp.ID)
			}
			seen[comp.ID] = true
			c.checkProperties(p, at, comp)
		}
	}
}

// checkProperties checks, anywhere in a component's properties, binding
// paths and function calls, and that an event has a name.
func (c *Catalog) checkProperties(p *problems, at string, comp Component) {
	if event, ok := lookup(comp.Properties, "action", "event").(map[string]any); ok {
		if name, _ := event["name"].(string); strings.TrimSpace(name) == "" {
			p.add(at, "action.event.name is empty: name the event the agent receives")
		}
	}
	var walk func(v any, loc []string)
	walk = func(v any, loc []string) {
		switch v := v.(type) {
		case map[string]any:
			c.checkObject(p, at, v, loc)
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k], append(loc, k))
			}
		case []any:
			for i, item := range v {
				walk(item, append(loc, strconv.Itoa(i)))
			}
		}
	}
	walk(comp.Properties, nil)
}

// checkObject checks one object inside a component: a binding's (or a
// template's) path, a function call's name and arguments.
func (c *Catalog) checkObject(p *problems, at string, obj map[string]any, loc []string) {
	if path, ok := obj["path"].(string); ok {
		if msg := pathProblem(path, false); msg != "" {
			p.add(at, "%s.path: %s", location(loc), msg)
		}
	}
	call, ok := obj["call"].(string)
	if !ok {
		return
	}
	fn, ok := c.s.functions[call]
	if !ok {
		p.add(at, "%s.call: unknown function %q", location(loc), call)
		return
	}
	args, ok := obj["args"]
	if !ok {
		args = map[string]any{}
	}
	if err := fn.Validate(args); err != nil {
		p.addIssues(at+": "+location(append(loc, "args")), describe(err))
	}
}

// forbiddenSegments are path segments the web renderer refuses.
var forbiddenSegments = map[string]bool{"__proto__": true, "constructor": true, "prototype": true}

// pathProblem says what is wrong with a binding path ("" when nothing is).
// A binding may be relative (inside a template); a data model update's
// path must be absolute.
func pathProblem(path string, absolute bool) string {
	switch {
	case path == "":
		return "empty path: want a JSON Pointer such as \"/user/name\""
	case path == "/":
		return ""
	case absolute && !strings.HasPrefix(path, "/"):
		return fmt.Sprintf("%q: want a JSON Pointer starting with \"/\"", path)
	}
	for i, raw := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if raw == "" {
			return fmt.Sprintf("%q: segment %d is empty", path, i+1)
		}
		seg, err := unescapeSegment(raw)
		if err != nil {
			return fmt.Sprintf("%q: %v", path, err)
		}
		if forbiddenSegments[seg] {
			return fmt.Sprintf("%q: segment %q is not allowed", path, seg)
		}
	}
	return ""
}

// ref is one component id a component names, and where it names it.
type ref struct {
	at string // e.g. "child", "children[2]", "tabs[0].child"
	id string
}

// refs returns the component ids c names: the properties the basic catalog
// types as component ids or child lists.
func refs(c Component) []ref {
	var out []ref
	for _, key := range []string{"child", "trigger", "content"} {
		if id, ok := c.Properties[key].(string); ok {
			out = append(out, ref{key, id})
		}
	}
	switch children := c.Properties["children"].(type) {
	case []any:
		for i, v := range children {
			if id, ok := v.(string); ok {
				out = append(out, ref{fmt.Sprintf("children[%d]", i), id})
			}
		}
	case map[string]any:
		if id, ok := children["componentId"].(string); ok {
			out = append(out, ref{"children.componentId", id})
		}
	}
	if tabs, ok := c.Properties["tabs"].([]any); ok {
		for i, t := range tabs {
			if id, ok := lookup(t, "child").(string); ok {
				out = append(out, ref{fmt.Sprintf("tabs[%d].child", i), id})
			}
		}
	}
	return out
}

// checkTree checks a surface as the list leaves it: it has a root, the
// components the list defined name components that exist, and no
// component contains itself.
func checkTree(p *problems, sf *Surface, defined map[string]string) {
	if _, ok := sf.Component("root"); !ok {
		p.add(fmt.Sprintf("surface %q", sf.ID()), "no component has id \"root\" (the top of the tree)")
	}
	for _, id := range slices.Sorted(maps.Keys(defined)) {
		comp, _ := sf.Component(id)
		for _, r := range refs(comp) {
			if _, ok := sf.Component(r.id); !ok {
				p.add(defined[id], "%s: no component has id %q", r.at, r.id)
			}
		}
	}
	onPath := make(map[string]bool)
	done := make(map[string]bool)
	var visit func(id string)
	visit = func(id string) {
		onPath[id] = true
		comp, _ := sf.Component(id)
		for _, r := range refs(comp) {
			switch {
			case onPath[r.id]:
				at, ok := defined[id]
				if !ok {
					at = fmt.Sprintf("surface %q: %s %q", sf.ID(), comp.Component, id)
				}
				p.add(at, "%s: %q contains this component: the tree has a cycle", r.at, r.id)
			case !done[r.id]:
				if _, ok := sf.Component(r.id); ok {
					visit(r.id)
				}
			}
		}
		onPath[id] = false
		done[id] = true
	}
	if _, ok := sf.Component("root"); ok {
		visit("root")
	}
}

// lookup follows keys through nested objects; nil when one is missing.
func lookup(v any, keys ...string) any {
	for _, k := range keys {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = obj[k]
	}
	return v
}
