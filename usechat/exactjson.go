package usechat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// CheckExactJSON refuses a request body that encoding/json would decode
// into v other than as written: bytes that are not UTF-8 and \u escapes
// that name no character (unpaired surrogates), which it replaces with
// U+FFFD, so that two different ids would name one chat; member names that
// match a field of v only when case is ignored (it matches "SESSIONID" to
// sessionId); and members named twice (it keeps the last). Every request
// body goes through it; free-form objects (a tool's output) keep any member
// names but still may not repeat one.
func CheckExactJSON(body []byte, v any) error {
	if !utf8.Valid(body) {
		return errors.New("the body is not valid UTF-8")
	}
	if err := checkEscapes(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	return checkMembers(dec, reflect.TypeOf(v), "")
}

// checkEscapes refuses \u escapes of unpaired UTF-16 surrogates. A
// backslash only ever starts an escape in valid JSON; the decoder reports
// one anywhere else.
func checkEscapes(body []byte) error {
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if i+1 < len(body) && body[i+1] != 'u' {
			i++ // a one-character escape such as \\ or \"
			continue
		}
		r, ok := hex4(body, i)
		if !ok {
			return nil // malformed: the decoder says so
		}
		i += 5
		if !utf16.IsSurrogate(r) {
			continue
		}
		next, ok := hex4(body, i+1)
		if r >= 0xDC00 || !ok || utf16.DecodeRune(r, next) == utf8.RuneError {
			return fmt.Errorf("the body has an unpaired surrogate \\u%04X, which is no character", r)
		}
		i += 6
	}
	return nil
}

// hex4 reads the escape \uXXXX at body[i:].
func hex4(body []byte, i int) (rune, bool) {
	if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range body[i+2 : i+6] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// checkMembers reads one JSON value from dec, which is to be decoded into
// a value of type t (nil for free-form), and checks the member names of
// its objects: exactly a field's name where t is a struct, and no name
// twice anywhere. Type mismatches are left to the decoder.
func checkMembers(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			name, _ := tok.(string)
			if seen[name] {
				return fmt.Errorf("member %q appears twice in %s", name, where(path))
			}
			seen[name] = true
			var ft reflect.Type
			switch {
			case fields != nil:
				var ok bool
				if ft, ok = fields[name]; !ok {
					return fmt.Errorf("unknown member %q in %s (names are case-sensitive)", name, where(path))
				}
			case t != nil && t.Kind() == reflect.Map:
				ft = t.Elem()
			}
			if err := checkMembers(dec, ft, path+"."+name); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := checkMembers(dec, et, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}

func where(path string) string {
	if path == "" {
		return "the body"
	}
	return strings.TrimPrefix(path, ".")
}

// jsonFields maps the member names encoding/json decodes into a struct's
// fields (tag names, or field names; embedded structs' fields promoted) to
// the fields' types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			for n, typ := range jsonFields(ft) {
				if _, shadowed := out[n]; !shadowed {
					out[n] = typ
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// checkTakenJSON is CheckExactJSON for a body that may carry members
// Baton does not use (Chat's, see chatbody.go): raw is to be decoded into
// a value of type t; the members of its objects that name a field of t
// are checked as CheckExactJSON checks a body (as UTF-8, escapes, and
// member names, recursively), and the others are skipped unread, except a
// name that differs from a field's only by case, which encoding/json
// would take for it. Free-form values (a tool's output) are checked
// whole; values of type rawPart are left to their reader.
func checkTakenJSON(raw []byte, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[rawPart]():
		return nil
	case t != nil && t.Kind() == reflect.Struct:
		return checkTakenObject(raw, t, path)
	case t != nil && t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		dec := json.NewDecoder(bytes.NewReader(raw))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return err // null, or a mismatch the decoder reports
		}
		for i := 0; dec.More(); i++ {
			var sub json.RawMessage
			if err := dec.Decode(&sub); err != nil {
				return err
			}
			if err := checkTakenJSON(sub, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if !utf8.Valid(raw) {
		return fmt.Errorf("%s is not valid UTF-8", where(path))
	}
	if err := checkEscapes(raw); err != nil {
		return fmt.Errorf("%s: %w", where(path), err)
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		t = nil
	}
	return checkMembers(json.NewDecoder(bytes.NewReader(raw)), t, path)
}

// checkTakenObject is checkTakenJSON for an object decoded into struct t.
func checkTakenObject(raw []byte, t reflect.Type, path string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return err // null, or a mismatch the decoder reports
	}
	fields := jsonFields(t)
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		ft, ok := fields[name]
		if !ok {
			if err := checkNotCaseVariant(name, names, path); err != nil {
				return err
			}
			if err := dec.Decode(&ignored{}); err != nil {
				return err
			}
			continue
		}
		if seen[name] {
			return fmt.Errorf("member %q appears twice in %s", name, where(path))
		}
		seen[name] = true
		var sub json.RawMessage
		if err := dec.Decode(&sub); err != nil {
			return err
		}
		if err := checkTakenJSON(sub, ft, path+"."+name); err != nil {
			return err
		}
	}
	return nil
}
