package a2ui

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// list joins messages into a JSON array.
func list(msgs ...string) string { return "[" + strings.Join(msgs, ",") + "]" }

const (
	createS = `{"version":"v0.9","createSurface":{"surfaceId":"s","catalogId":"` + BasicCatalogID + `"}}`
	drawS   = `{"version":"v0.9","updateComponents":{"surfaceId":"s","components":[{"id":"root","component":"Text","text":"Hi"}]}}`
	deleteS = `{"version":"v0.9","deleteSurface":{"surfaceId":"s"}}`
)

// drawWith draws surface s with the given components (JSON objects).
func drawWith(components ...string) string {
	return `{"version":"v0.9","updateComponents":{"surfaceId":"s","components":[` + strings.Join(components, ",") + `]}}`
}

func setData(path, value string) string {
	return `{"version":"v0.9","updateDataModel":{"surfaceId":"s","path":"` + path + `","value":` + value + `}}`
}

// A table row per kind of bad message or list, and the lists that look
// bad but are not.
func TestCatalogMessages(t *testing.T) {
	c := basicCatalog(t)
	shown := &Surfaces{}
	if err := shown.Apply(mustDecode(t, c, list(createS, drawS))...); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input string
		shown *Surfaces
		want  []string
	}{
		{name: "create and draw", input: list(createS, drawS)},
		{name: "v0.9.1", input: strings.ReplaceAll(list(createS, drawS), `"v0.9"`, `"v0.9.1"`)},
		{name: "update a shown surface", input: list(setData("/name", `"Ada"`), drawWith(`{"id":"root","component":"Text","text":{"path":"/name"}}`)), shown: shown},
		{name: "delete a shown surface", input: list(deleteS), shown: shown},
		{name: "delete and create again", input: list(deleteS, createS, drawS), shown: shown},
		{name: "not an array", input: createS, want: []string{"messages: want a non-empty JSON array of messages"}},
		{name: "empty", input: `[]`, want: []string{"messages: want a non-empty JSON array of messages"}},
		{name: "not JSON", input: `[{`, want: []string{"messages: not JSON: unexpected EOF"}},
		{name: "not an object", input: `["createSurface"]`, want: []string{"messages[0]: want an object"}},
		{name: "no kind", input: `[{"version":"v0.9"}]`,
			want: []string{"messages[0]: want exactly one of createSurface, updateComponents, updateDataModel, deleteSurface, got 0"}},
		{name: "two kinds", input: `[{"version":"v0.9","createSurface":{"surfaceId":"s","catalogId":"x"},"deleteSurface":{"surfaceId":"s"}}]`,
			want: []string{"messages[0]: want exactly one of createSurface, updateComponents, updateDataModel, deleteSurface, got 2"}},
		{name: "no version", input: `[{"deleteSurface":{"surfaceId":"s"}}]`, want: []string{"messages[0]: version missing"}},
		{name: "v0.8 version", input: `[{"version":"v0.8","deleteSurface":{"surfaceId":"s"}}]`,
			want: []string{`messages[0]: version: "v0.8" is not one of "v0.9", "v0.9.1"`}},
		{name: "v0.8 root in createSurface", input: `[{"version":"v0.9","createSurface":{"surfaceId":"s","catalogId":"x","root":"root"}}]`,
			want: []string{`messages[0]: createSurface: unknown property "root"`}},
		{name: "no catalog", input: `[{"version":"v0.9","createSurface":{"surfaceId":"s"}}]`, want: []string{"messages[0]: createSurface: catalogId missing"}},
		{name: "other catalog", input: list(strings.Replace(createS, BasicCatalogID, "https://example.com/mine", 1), drawS),
			want: []string{`messages[0].createSurface.catalogId: "https://example.com/mine" is not a catalog Baton serves: use "` + BasicCatalogID + `"`}},
		{name: "no components", input: list(createS, `{"version":"v0.9","updateComponents":{"surfaceId":"s","components":[]}}`),
			want: []string{"messages[1]: updateComponents.components: minItems: got 0, want 1"}},
		{name: "component without id", input: list(createS, drawWith(`{"component":"Text","text":"x"}`)),
			want: []string{"messages[1]: updateComponents.components[0]: id missing"}},
		{name: "bad theme colour", input: `[{"version":"v0.9","createSurface":{"surfaceId":"s","catalogId":"x","theme":{"primaryColor":"red"}}}]`,
			want: []string{"messages[0]: createSurface.theme.primaryColor: 'red' does not match pattern '^#[0-9a-fA-F]{6}$'"}},
		{name: "updated before created", input: list(drawS, createS),
			want: []string{`messages[0].updateComponents: surface "s" is not shown: send createSurface for it first`}},
		{name: "data for a surface never created", input: list(setData("/a", "1")),
			want: []string{`messages[0].updateDataModel: surface "s" is not shown: send createSurface for it first`}},
		{name: "updated after deleted", input: list(deleteS, drawS), shown: shown,
			want: []string{`messages[1].updateComponents: surface "s" is not shown: send createSurface for it first`}},
		{name: "deleted twice", input: list(deleteS, deleteS), shown: shown,
			want: []string{`messages[1].deleteSurface: surface "s" is not shown: send createSurface for it first`}},
		{name: "created twice", input: list(createS, drawS, createS),
			want: []string{`messages[2].createSurface: surface "s" already exists: update it, or delete it before creating it again`}},
		{name: "created while shown", input: list(createS, drawS), shown: shown,
			want: []string{`messages[0].createSurface: surface "s" already exists: update it, or delete it before creating it again`}},
		{name: "dangling child", input: list(createS, drawWith(`{"id":"root","component":"Card","child":"body"}`)),
			want: []string{`messages[1].updateComponents.components[0]: Card "root": child: no component has id "body"`}},
		{name: "dangling tab", input: list(createS, drawWith(`{"id":"root","component":"Tabs","tabs":[{"title":"A","child":"a"}]}`, `{"id":"a","component":"Column","children":["b","a2"]}`, `{"id":"b","component":"Text","text":"x"}`)),
			want: []string{`messages[1].updateComponents.components[1]: Column "a": children[1]: no component has id "a2"`}},
		{name: "child defined later in the list", input: list(createS, drawWith(`{"id":"root","component":"Card","child":"body"}`), drawWith(`{"id":"body","component":"Text","text":"x"}`))},
		{name: "child already shown", input: list(drawWith(`{"id":"card","component":"Card","child":"root"}`)), shown: shown},
		{name: "no root", input: list(createS, drawWith(`{"id":"top","component":"Text","text":"x"}`)),
			want: []string{`surface "s": no component has id "root" (the top of the tree)`}},
		{name: "nothing drawn", input: list(createS), want: []string{`surface "s": no component has id "root" (the top of the tree)`}},
		{name: "cycle", input: list(createS, drawWith(`{"id":"root","component":"Column","children":["a"]}`, `{"id":"a","component":"Card","child":"root"}`)),
			want: []string{`messages[1].updateComponents.components[1]: Card "a": child: "root" contains this component: the tree has a cycle`}},
		{name: "same id twice", input: list(createS, drawWith(`{"id":"root","component":"Text","text":"a"}`, `{"id":"root","component":"Text","text":"b"}`)),
			want: []string{`messages[1].updateComponents.components[1]: Text "root": id "root" is used twice in this message`}},
		{name: "empty binding path", input: list(createS, drawWith(`{"id":"root","component":"Text","text":{"path":""}}`)),
			want: []string{`messages[1].updateComponents.components[0]: Text "root": text.path: empty path: want a JSON Pointer such as "/user/name"`}},
		{name: "empty segment", input: list(createS, drawWith(`{"id":"root","component":"TextField","label":"Name","value":{"path":"/user//name"}}`)),
			want: []string{`messages[1].updateComponents.components[0]: TextField "root": value.path: "/user//name": segment 2 is empty`}},
		{name: "bad escape", input: list(createS, drawWith(`{"id":"root","component":"Text","text":{"path":"/a~2b"}}`)),
			want: []string{`messages[1].updateComponents.components[0]: Text "root": text.path: "/a~2b": segment "a~2b": ~ must be followed by 0 or 1`}},
		{name: "forbidden segment", input: list(createS, drawWith(`{"id":"root","component":"Column","children":{"componentId":"root","path":"/__proto__"}}`)),
			want: []string{
				`messages[1].updateComponents.components[0]: Column "root": children.path: "/__proto__": segment "__proto__" is not allowed`,
				`messages[1].updateComponents.components[0]: Column "root": children.componentId: "root" contains this component: the tree has a cycle`,
			}},
		{name: "bad path in an event's context", input: list(createS, drawWith(`{"id":"root","component":"Button","child":"l","action":{"event":{"name":"go","context":{"x":{"path":"//"}}}}}`, `{"id":"l","component":"Text","text":"Go"}`)),
			want: []string{`messages[1].updateComponents.components[0]: Button "root": action.event.context.x.path: "//": segment 1 is empty`}},
		{name: "relative data path", input: list(createS, drawS, setData("user/name", `"Ada"`)),
			want: []string{`messages[2].updateDataModel.path: "user/name": want a JSON Pointer starting with "/"`}},
		{name: "data written through a string", input: list(createS, drawS, setData("/a", `"x"`), setData("/a/b", "1")),
			want: []string{`messages[3].updateDataModel: data model path cannot be written: "/a/b": segment "b" below a string`}},
		{name: "function without an argument", input: list(createS, drawWith(`{"id":"root","component":"Text","text":{"call":"formatDate","args":{"value":{"path":"/d"}}}}`)),
			want: []string{`messages[1].updateComponents.components[0]: Text "root": text.args: format missing`}},
		{name: "function with an unknown argument", input: list(createS, drawWith(`{"id":"root","component":"Text","text":{"call":"formatNumber","args":{"value":1,"digits":2}}}`)),
			want: []string{`messages[1].updateComponents.components[0]: Text "root": text.args: unknown property "digits"`}},
		{name: "unknown function in arguments", input: list(createS, drawWith(`{"id":"root","component":"CheckBox","label":"OK","value":{"call":"not","args":{"value":{"call":"shout","args":{}}}}}`)),
			want: []string{`messages[1].updateComponents.components[0]: CheckBox "root": value.args.value.call: unknown function "shout"`}},
		{name: "unknown function", input: list(createS, drawWith(`{"id":"root","component":"Text","text":{"call":"shout"}}`)),
			want: []string{`messages[1].updateComponents.components[0]: Text "root": text.call: "shout" is not one of "required", "regex", "length", "numeric", "email", "formatString", "formatNumber", "formatCurrency", "formatDate", "pluralize", "openUrl", "and", "or", "not", "add", "subtract", "multiply", "divide", "greater_than", "less_than", "equals", "not_equals", "contains", "starts_with", "ends_with"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Decode([]byte(tt.input), tt.shown)
			if diff := cmp.Diff(tt.want, problemsOf(t, err)); diff != "" {
				t.Errorf("Decode() problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A list with many problems prints the first few and a count.
func TestValidationErrorText(t *testing.T) {
	var comps []string
	for i := range 10 {
		comps = append(comps, `{"id":"t`+string(rune('a'+i))+`","component":"Text"}`)
	}
	_, err := basicCatalog(t).Decode([]byte(list(createS, drawWith(comps...))), nil)
	text := err.Error()
	if !strings.HasPrefix(text, `messages[1].updateComponents.components[0]: Text "ta": text missing; `) || !strings.HasSuffix(text, "; and 2 more") {
		t.Errorf("Error() = %q, want the first problems then \"; and 2 more\"", text)
	}
	if strings.Contains(text, "\n") {
		t.Errorf("Error() = %q, want one line", text)
	}
}

// Validate checks messages built in Go as Decode checks JSON.
func TestCatalogValidate(t *testing.T) {
	c := basicCatalog(t)
	label := Component{ID: "label", Component: "Text", Properties: map[string]any{"text": "Book"}}
	book := Component{ID: "root", Component: "Button", Properties: map[string]any{
		"child":  "label",
		"action": map[string]any{"event": map[string]any{"name": "book"}},
	}}
	if err := c.Validate([]Message{NewCreateSurface("s"), NewUpdateComponents("s", book, label)}, nil); err != nil {
		t.Errorf("Validate(button) error = %v, want nil", err)
	}
	delete(book.Properties, "action")
	err := c.Validate([]Message{NewCreateSurface("s"), NewUpdateComponents("s", book, label)}, nil)
	want := []string{`messages[1].updateComponents.components[0]: Button "root": action missing`}
	if diff := cmp.Diff(want, problemsOf(t, err)); diff != "" {
		t.Errorf("Validate(button without action) problems mismatch (-want +got):\n%s", diff)
	}
	if err := c.Validate([]Message{{Version: Version}}, nil); err == nil {
		t.Errorf("Validate(empty message) error = nil, want one")
	}
}

func mustDecode(t *testing.T, c *Catalog, input string) []Message {
	t.Helper()
	msgs, err := c.Decode([]byte(input), nil)
	if err != nil {
		t.Fatalf("Decode(%s) error = %v", input, err)
	}
	return msgs
}
