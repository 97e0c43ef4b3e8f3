package a2ui

import (
	"fmt"
	"strconv"
	"strings"
)

// A surface's data model is a JSON value written at JSON Pointers (RFC
// 6901) the way the web renderer writes it: missing objects and lists on
// the way are created (a list when the next segment is an index), a list
// grows to take an index past its end, and removing from a list leaves
// null in its place.

// pointerSegments splits a JSON Pointer into its unescaped segments.
// Empty segments are dropped, as the renderer drops them, so "a/b" and
// "/a/b" name the same place.
func pointerSegments(path string) ([]string, error) {
	var segs []string
	for _, raw := range strings.Split(path, "/") {
		if raw == "" {
			continue
		}
		seg, err := unescapeSegment(raw)
		if err != nil {
			return nil, err
		}
		segs = append(segs, seg)
	}
	return segs, nil
}

func unescapeSegment(raw string) (string, error) {
	if !strings.Contains(raw, "~") {
		return raw, nil
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] != '~' {
			b.WriteByte(raw[i])
			continue
		}
		if i+1 == len(raw) || (raw[i+1] != '0' && raw[i+1] != '1') {
			return "", fmt.Errorf("segment %q: ~ must be followed by 0 or 1", raw)
		}
		b.WriteByte("~/"[raw[i+1]-'0'])
		i++
	}
	return b.String(), nil
}

// listIndex reports whether seg is a list index (digits, no leading zero).
func listIndex(seg string) (int, bool) {
	if seg == "" || (len(seg) > 1 && seg[0] == '0') {
		return 0, false
	}
	for _, r := range seg {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(seg)
	return n, err == nil
}

// setPointer returns root with value at path (or what is at path removed).
func setPointer(root any, path string, value any, remove bool) (any, error) {
	segs, err := pointerSegments(path)
	if err != nil {
		return root, fmt.Errorf("%w: %v", ErrDataPath, err)
	}
	if len(segs) == 0 {
		if remove {
			return nil, nil
		}
		return value, nil
	}
	out, err := setIn(root, segs, value, remove)
	if err != nil {
		return root, fmt.Errorf("%w: %q: %v", ErrDataPath, path, err)
	}
	return out, nil
}

// setIn writes below node, which may be nil (then it is created).
func setIn(node any, segs []string, value any, remove bool) (any, error) {
	seg, rest := segs[0], segs[1:]
	if node == nil {
		if _, ok := listIndex(seg); ok {
			node = []any{}
		} else {
			node = map[string]any{}
		}
	}
	switch n := node.(type) {
	case map[string]any:
		if len(rest) == 0 {
			if remove {
				delete(n, seg)
			} else {
				n[seg] = value
			}
			return n, nil
		}
		child, err := setIn(n[seg], rest, value, remove)
		if err != nil {
			return nil, err
		}
		n[seg] = child
		return n, nil
	case []any:
		i, ok := listIndex(seg)
		if !ok {
			return nil, fmt.Errorf("segment %q on a list", seg)
		}
		for len(n) <= i {
			n = append(n, nil)
		}
		if len(rest) == 0 {
			if remove {
				n[i] = nil
			} else {
				n[i] = value
			}
			return n, nil
		}
		child, err := setIn(n[i], rest, value, remove)
		if err != nil {
			return nil, err
		}
		n[i] = child
		return n, nil
	default:
		return nil, fmt.Errorf("segment %q below a %T", seg, node)
	}
}

// getPointer returns the value at path below root, nil when there is none.
func getPointer(root any, path string) any {
	segs, err := pointerSegments(path)
	if err != nil {
		return nil
	}
	node := root
	for _, seg := range segs {
		switch n := node.(type) {
		case map[string]any:
			node = n[seg]
		case []any:
			i, ok := listIndex(seg)
			if !ok || i >= len(n) {
				return nil
			}
			node = n[i]
		default:
			return nil
		}
	}
	return node
}
