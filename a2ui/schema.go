package a2ui

import (
	"bytes"
	"embed"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaFiles are Baton's JSON Schemas for A2UI v0.9 (draft 2020-12),
// written from the v0.9.1 specification: the message envelopes, the shared
// shapes and the basic catalog.
//
//go:embed schema/*.json
var schemaFiles embed.FS

const schemaBase = "https://github.com/baton-run/baton/a2ui/schema/"

// schemas holds the compiled schemas Baton checks against.
type schemas struct {
	messages   map[string]*jsonschema.Schema // by message kind, and "action"
	components map[string]*jsonschema.Schema // by component type
	functions  map[string]*jsonschema.Schema // by function name: its args
	declared   map[string]map[string]bool    // by component type: its property names
	catalogID  string
}

// compiled is built once, on first use: the schemas never change.
var compiled = sync.OnceValues(compileSchemas)

func compileSchemas() (*schemas, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	docs := make(map[string]any)
	for _, name := range []string{"common.json", "messages.json", "basic_catalog.json"} {
		data, err := schemaFiles.ReadFile("schema/" + name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		if err := c.AddResource(schemaBase+name, doc); err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		docs[name] = doc
	}
	catalog, _ := docs["basic_catalog.json"].(map[string]any)
	s := &schemas{
		messages:   make(map[string]*jsonschema.Schema),
		components: make(map[string]*jsonschema.Schema),
		functions:  make(map[string]*jsonschema.Schema),
		declared:   declaredProperties(catalog, docs["common.json"]),
	}
	s.catalogID, _ = catalog["catalogId"].(string)
	compile := func(into map[string]*jsonschema.Schema, name, loc string) error {
		sch, err := c.Compile(schemaBase + loc)
		if err != nil {
			return fmt.Errorf("schema %s: %w", loc, err)
		}
		into[name] = sch
		return nil
	}
	for _, k := range []string{KindCreateSurface, KindUpdateComponents, KindUpdateDataModel, KindDeleteSurface, "action"} {
		if err := compile(s.messages, k, "messages.json#/$defs/"+k); err != nil {
			return nil, err
		}
	}
	for _, group := range []struct {
		key  string
		into map[string]*jsonschema.Schema
	}{{"components", s.components}, {"functions", s.functions}} {
		entries, _ := catalog[group.key].(map[string]any)
		for name := range entries {
			if err := compile(group.into, name, "basic_catalog.json#/"+group.key+"/"+name); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// declaredProperties returns, per component of catalog, the names of the
// properties its schema declares: those of the schemas its allOf lists,
// followed into common's $defs.
func declaredProperties(catalog map[string]any, common any) map[string]map[string]bool {
	out := make(map[string]map[string]bool)
	components, _ := catalog["components"].(map[string]any)
	for name, entry := range components {
		names := make(map[string]bool)
		parts, _ := lookup(entry, "allOf").([]any)
		for _, part := range parts {
			if ref, ok := lookup(part, "$ref").(string); ok {
				_, def, _ := strings.Cut(ref, "#/$defs/")
				part = lookup(common, "$defs", def)
			}
			props, _ := lookup(part, "properties").(map[string]any)
			for p := range props {
				names[p] = true
			}
		}
		out[name] = names
	}
	return out
}

// componentNames returns the catalog's component types, sorted.
func (s *schemas) componentNames() []string {
	names := make([]string, 0, len(s.components))
	for name := range s.components {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// issue is one thing wrong with a value: where (a path of keys and
// indexes inside the value checked) and what, in words for the model.
type issue struct {
	at   []string
	text string
	// unknown is the property an "unknown property" issue is about. A
	// property is reported unknown also when a sibling keyword failed
	// (unevaluatedProperties counts only what validated), so the caller
	// drops those it knows are declared.
	unknown string
}

// describe turns a schema's verdict into issues. Of alternatives (anyOf)
// it reports the one that got furthest into the value, the way a reader
// would guess what was meant; when none got past the value itself, it
// names the types that would have done.
func describe(err error) []issue {
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []issue{{text: err.Error()}}
	}
	var out []issue
	explain(verr, &out)
	return out
}

func explain(e *jsonschema.ValidationError, out *[]issue) {
	at := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if best := deepestBranch(e); best != nil {
			explain(best, out)
			return
		}
		*out = append(*out, issue{at: at, text: alternatives(e)})
	case *kind.Required:
		*out = append(*out, issue{at: at, text: strings.Join(k.Missing, ", ") + " missing"})
	case *kind.AdditionalProperties:
		*out = append(*out, issue{at: at, text: "unknown property " + quoteAll(k.Properties)})
	case *kind.FalseSchema: // unevaluatedProperties: false, at the property
		if len(at) == 0 {
			*out = append(*out, issue{at: at, text: "not allowed"})
			return
		}
		name := at[len(at)-1]
		*out = append(*out, issue{at[:len(at)-1], "unknown property " + strconv.Quote(name), name})
	case *kind.Type:
		*out = append(*out, issue{at: at, text: "want " + strings.Join(k.Want, " or ") + ", got " + k.Got})
	case *kind.Enum:
		*out = append(*out, issue{at: at, text: fmt.Sprintf("%s is not one of %s", jsonText(k.Got), enumText(k.Want))})
	case *kind.Format:
		*out = append(*out, issue{at: at, text: fmt.Sprintf("%s is not a %s", jsonText(k.Got), k.Want)})
	case *kind.Const:
		*out = append(*out, issue{at: at, text: fmt.Sprintf("want %s, got %s", jsonText(k.Want), jsonText(k.Got))})
	case *kind.Group, *kind.AllOf, *kind.Reference, *kind.Schema:
		if len(e.Causes) == 0 {
			*out = append(*out, issue{at: at, text: e.ErrorKind.LocalizedString(english())})
		}
		for _, c := range e.Causes {
			explain(c, out)
		}
	default:
		*out = append(*out, issue{at: at, text: e.ErrorKind.LocalizedString(english())})
	}
}

// deepestBranch returns the alternative of e whose errors reach deepest
// into the value, if deeper than e itself.
func deepestBranch(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	var best *jsonschema.ValidationError
	bestDepth := len(e.InstanceLocation)
	for _, c := range e.Causes {
		if d := depth(c); d > bestDepth {
			best, bestDepth = c, d
		}
	}
	return best
}

// depth is how deep into the value the errors under e reach.
func depth(e *jsonschema.ValidationError) int {
	d := len(e.InstanceLocation)
	if _, ok := e.ErrorKind.(*kind.FalseSchema); ok {
		d-- // reported at the property, but it is the object's fault
	}
	for _, c := range e.Causes {
		d = max(d, depth(c))
	}
	return d
}

// alternatives words the failure of alternatives none of which got past
// the value itself: the types they want ("want string or object"), else
// what each said.
func alternatives(e *jsonschema.ValidationError) string {
	var want, said []string
	got := ""
	var walk func(*jsonschema.ValidationError)
	walk = func(c *jsonschema.ValidationError) {
		if len(c.Causes) > 0 {
			for _, cc := range c.Causes {
				walk(cc)
			}
			return
		}
		if t, ok := c.ErrorKind.(*kind.Type); ok {
			got = t.Got
			for _, w := range t.Want {
				if !slices.Contains(want, w) {
					want = append(want, w)
				}
			}
			return
		}
		var leaf []issue
		explain(c, &leaf)
		for _, is := range leaf {
			if !slices.Contains(said, is.text) {
				said = append(said, is.text)
			}
		}
	}
	walk(e)
	if len(said) == 0 {
		return "want " + strings.Join(want, " or ") + ", got " + got
	}
	return strings.Join(said, ", or ")
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func enumText(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = jsonText(v)
	}
	return strings.Join(parts, ", ")
}

// jsonText prints a JSON value briefly.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// location prints a path inside a value: keys joined with dots, indexes in
// brackets ("action.event.context", "tabs[1].child").
func location(path []string) string {
	var b strings.Builder
	for _, seg := range path {
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// english prints the library's own wording, for the rare kinds explain
// does not word itself.
func english() *message.Printer { return message.NewPrinter(language.English) }
