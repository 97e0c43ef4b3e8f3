package a2ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrCheckFailed is returned (wrapped, with [ErrInvalid]) by [CheckAnswer]
// and [CheckCardAction] for an action whose values fail a check its
// surface declares: a required field left empty. The renderer runs the
// same checks and keeps the button disabled while one fails; this is the
// same rule held at the server, for a client that does not.
var ErrCheckFailed = errors.New("a check of the surface fails")

// checkValues runs, on the values action a carries, the checks of its
// surface that those values decide: each check rule of a component
// (its "checks": [{condition, message}]) whose condition is built from
// required, and, or and not over paths the action's event binds to its
// context (or such a path alone, read as a boolean). A rule that reads anything else (another function, a path the
// action does not carry, a template's relative path) is the renderer's
// alone. It returns one line per failed rule, naming the component and
// giving the rule's own message, for the person or the model to act on.
func (sf *Surface) checkValues(a Action) error {
	comp, ok := sf.Component(a.SourceComponentID)
	if !ok {
		return nil // CheckAction refuses it
	}
	declared, _ := lookup(comp.Properties, "action", "event", "context").(map[string]any)
	values := map[string]any{} // by the normalized path the context binds; a field left out is nil
	for key, v := range declared {
		binding, _ := v.(map[string]any)
		if path, ok := binding["path"].(string); ok && strings.HasPrefix(path, "/") {
			values[normalPath(path)] = a.Context[key]
		}
	}
	var failed []string
	for _, c := range sf.components {
		rules, _ := c.Properties["checks"].([]any)
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			if ok, known := evalCheck(rule["condition"], values); known && !ok {
				failed = append(failed, fmt.Sprintf("%s %q: %v", c.Component, c.ID, rule["message"]))
			}
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w: surface %q: %s", ErrInvalid, ErrCheckFailed, sf.ID(), strings.Join(failed, "; "))
}

// normalPath is path as the data model reads it: empty segments dropped.
func normalPath(path string) string {
	segs, err := pointerSegments(path)
	if err != nil {
		return path
	}
	for i, s := range segs {
		segs[i] = strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
	}
	return "/" + strings.Join(segs, "/")
}

// evalCheck evaluates a check's condition over values; known is false when
// the condition reads something values do not decide.
func evalCheck(cond any, values map[string]any) (ok, known bool) {
	switch c := cond.(type) {
	case bool:
		return c, true
	case map[string]any:
		if _, call := c["call"]; !call {
			v, known := argValue(c, values) // a binding: the value's truth, as the renderer takes it
			return known && truthy(v), known
		}
		args, _ := c["args"].(map[string]any)
		switch c["call"] {
		case "required":
			v, known := argValue(args["value"], values)
			return known && filled(v), known
		case "not":
			ok, known := evalCheck(args["value"], values)
			return !ok, known
		case "and", "or":
			list, _ := args["values"].([]any)
			return evalAll(c["call"] == "and", list, values)
		}
	}
	return false, false
}

// evalAll evaluates and (all) or or (any) over list.
func evalAll(all bool, list []any, values map[string]any) (ok, known bool) {
	unknown := false
	for _, item := range list {
		ok, known := evalCheck(item, values)
		switch {
		case !known:
			unknown = true
		case ok != all:
			return !all, true // one false decides an and, one true an or
		}
	}
	return all, !unknown && len(list) > 0
}

// argValue is the value an argument stands for: a literal, or a binding
// to a path the action carries.
func argValue(arg any, values map[string]any) (any, bool) {
	binding, ok := arg.(map[string]any)
	if !ok {
		return arg, true
	}
	if _, call := binding["call"]; call {
		return nil, false
	}
	path, ok := binding["path"].(string)
	if !ok || !strings.HasPrefix(path, "/") {
		return nil, false
	}
	v, ok := values[normalPath(path)]
	return v, ok
}

// filled is the basic catalog's required: not null, not "", not [].
func filled(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	}
	return true
}

// truthy is how the renderer reads a bound value as a condition: false,
// 0, "", null and a missing value are false.
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case float64:
		return v != 0
	case json.Number:
		f, err := v.Float64()
		return err == nil && f != 0
	}
	return true
}
