package a2ui

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Text renders the surface as plain text, for clients that do not draw
// A2UI (an A2A client without the extension): its texts, each field with
// its label and current value, each button's label in brackets, from the
// root down, one item per line. Bindings read the surface's data model;
// functions other than formatString are left out.
func (sf *Surface) Text() string {
	r := &textRenderer{sf: sf, open: make(map[string]bool)}
	r.component("root", "")
	return strings.Join(r.lines, "\n")
}

type textRenderer struct {
	sf    *Surface
	lines []string
	open  map[string]bool // components being rendered: a cycle stops here
}

func (r *textRenderer) line(format string, args ...any) {
	if s := strings.TrimSpace(fmt.Sprintf(format, args...)); s != "" {
		r.lines = append(r.lines, s)
	}
}

// component renders component id; scope is the data path relative
// bindings start from (a template's item).
func (r *textRenderer) component(id, scope string) {
	c, ok := r.sf.Component(id)
	if !ok || r.open[id] {
		return
	}
	r.open[id] = true
	defer delete(r.open, id)
	p := c.Properties
	label := r.value(p["label"], scope)
	switch c.Component {
	case "Text":
		r.line("%s", r.value(p["text"], scope))
	case "Image", "Video", "AudioPlayer":
		what := r.value(p["description"], scope)
		if what == "" {
			what = r.value(p["url"], scope)
		}
		r.line("[%s: %s]", strings.TrimSuffix(c.Component, "Player"), what)
	case "Divider":
		r.line("---")
	case "Row", "Column", "List":
		r.children(p["children"], scope)
	case "Card":
		r.component(stringOf(p["child"]), scope)
	case "Modal":
		r.component(stringOf(p["trigger"]), scope)
		r.component(stringOf(p["content"]), scope)
	case "Tabs":
		tabs, _ := p["tabs"].([]any)
		for _, t := range tabs {
			r.line("%s:", r.value(lookup(t, "title"), scope))
			r.component(stringOf(lookup(t, "child")), scope)
		}
	case "Button":
		r.line("[%s]", r.inline(stringOf(p["child"]), scope))
	case "TextField", "DateTimeInput":
		r.line("%s: %s", label, orBlank(r.value(p["value"], scope)))
	case "Slider":
		r.line("%s: %s (%s to %s)", label, r.value(p["value"], scope), orZero(r.value(p["min"], scope)), r.value(p["max"], scope))
	case "CheckBox":
		r.line("%s %s", box(r.data(p["value"], scope) == true, "[x]", "[ ]"), label)
	case "ChoicePicker":
		r.choices(label, p, scope)
	}
}

// children renders a child list: fixed ids, or a template per list item.
func (r *textRenderer) children(v any, scope string) {
	switch ch := v.(type) {
	case []any:
		for _, id := range ch {
			r.component(stringOf(id), scope)
		}
	case map[string]any:
		path := resolvePath(stringOf(ch["path"]), scope)
		items, _ := getPointer(r.sf.data, path).([]any)
		for i := range items {
			r.component(stringOf(ch["componentId"]), fmt.Sprintf("%s/%d", path, i))
		}
	}
}

func (r *textRenderer) choices(label string, p map[string]any, scope string) {
	r.line("%s:", label)
	var selected []string
	switch v := r.data(p["value"], scope).(type) {
	case []any:
		for _, s := range v {
			selected = append(selected, stringOf(s))
		}
	case string:
		selected = []string{v}
	}
	on, off := "(x)", "( )"
	if p["variant"] == "multipleSelection" {
		on, off = "[x]", "[ ]"
	}
	options, _ := p["options"].([]any)
	for _, o := range options {
		chosen := slices.Contains(selected, stringOf(lookup(o, "value")))
		r.line("%s %s", box(chosen, on, off), r.value(lookup(o, "label"), scope))
	}
}

// inline renders component id on one line (a button's label).
func (r *textRenderer) inline(id, scope string) string {
	sub := &textRenderer{sf: r.sf, open: r.open}
	sub.component(id, scope)
	return strings.Join(sub.lines, " ")
}

// data resolves a dynamic value to a JSON value: a literal, or what a
// binding names in the data model.
func (r *textRenderer) data(v any, scope string) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if path, ok := obj["path"].(string); ok {
		return getPointer(r.sf.data, resolvePath(path, scope))
	}
	if obj["call"] == "formatString" {
		return r.format(stringOf(r.data(lookup(obj, "args", "value"), scope)), scope)
	}
	return nil
}

// value resolves a dynamic value to text.
func (r *textRenderer) value(v any, scope string) string { return textOf(r.data(v, scope)) }

// interpolation is a ${path} inside a formatString template; templates
// with function calls inside are left as they are.
var interpolation = regexp.MustCompile(`\$\{([^{}()]*)\}`)

func (r *textRenderer) format(template, scope string) string {
	return interpolation.ReplaceAllStringFunc(template, func(m string) string {
		path := strings.TrimSpace(m[2 : len(m)-1])
		return textOf(getPointer(r.sf.data, resolvePath(path, scope)))
	})
}

// resolvePath makes a binding path absolute: one without a leading slash
// is relative to scope.
func resolvePath(path, scope string) string {
	if strings.HasPrefix(path, "/") {
		return path
	}
	return scope + "/" + path
}

// textOf prints a JSON value as the renderer interpolates it: strings as
// they are, nothing for null, lists and objects as JSON.
func textOf(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number, float64, bool:
		return fmt.Sprint(v)
	case []any:
		parts := make([]string, len(v))
		for i, item := range v {
			parts[i] = textOf(item)
		}
		return strings.Join(parts, ", ")
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

func orBlank(s string) string {
	if s == "" {
		return "____"
	}
	return s
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

func box(on bool, yes, no string) string {
	if on {
		return yes
	}
	return no
}
