package a2ui

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// checkedForm is a surface "guest" whose fields declare A2UI's checks: a
// required name, an email checked by a function only the renderer runs,
// and a Send button whose own check wants the name and the date, or a
// walk-in.
const checkedForm = `[
	{"version":"v0.9","createSurface":{"surfaceId":"guest","catalogId":"` + BasicCatalogID + `"}},
	{"version":"v0.9","updateComponents":{"surfaceId":"guest","components":[
		{"id":"root","component":"Column","children":["name","email","date","walkin","send"]},
		{"id":"name","component":"TextField","label":"Name","value":{"path":"/guest/name"},
			"checks":[{"condition":{"call":"required","args":{"value":{"path":"/guest/name"}}},"message":"Give a name"}]},
		{"id":"email","component":"TextField","label":"Email","value":{"path":"/guest/email"},
			"checks":[{"condition":{"call":"email","args":{"value":{"path":"/guest/email"}}},"message":"Give an email address"}]},
		{"id":"date","component":"DateTimeInput","label":"Date","value":{"path":"/guest/date"},"enableDate":true},
		{"id":"walkin","component":"CheckBox","label":"Walk-in","value":{"path":"/guest/walkin"}},
		{"id":"send_text","component":"Text","text":"Send"},
		{"id":"send","component":"Button","child":"send_text","action":{"event":{"name":"send","context":{
			"name":{"path":"/guest/name"},"email":{"path":"/guest/email"},"date":{"path":"/guest/date"},"walkin":{"path":"/guest/walkin"}}}},
			"checks":[{"condition":{"call":"or","args":{"values":[
				{"call":"and","args":{"values":[{"call":"required","args":{"value":{"path":"/guest/name"}}},{"call":"required","args":{"value":{"path":"/guest/date"}}}]}},
				{"call":"not","args":{"value":{"call":"not","args":{"value":{"path":"/guest/walkin"}}}}}]}},
				"message":"Give a name and a date, or tick walk-in"}]}]}}
]`

func TestCheckAnswerRunsTheSurfacesChecks(t *testing.T) {
	msgs := mustDecode(t, basicCatalog(t), checkedForm)
	answer := func(context map[string]any) map[string]any {
		a := Action{Name: "send", SurfaceID: "guest", SourceComponentID: "send", Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Context: context}
		raw, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"action": v}
	}
	tests := []struct {
		name    string
		context map[string]any
		failed  []string // the rules the error names; none: accepted
	}{
		{name: "filled", context: map[string]any{"name": "Ada", "email": "not an address", "date": "2026-12-24", "walkin": false}},
		{name: "a walk-in needs no date", context: map[string]any{"name": "Ada", "walkin": true}},
		{name: "name empty", context: map[string]any{"name": "", "date": "2026-12-24", "walkin": false},
			failed: []string{`TextField "name": Give a name`, `Button "send": Give a name and a date, or tick walk-in`}},
		{name: "name left out", context: map[string]any{"date": "2026-12-24", "walkin": false},
			failed: []string{`TextField "name": Give a name`, `Button "send": Give a name and a date, or tick walk-in`}},
		{name: "name null", context: map[string]any{"name": nil, "date": "2026-12-24", "walkin": false},
			failed: []string{`TextField "name": Give a name`, `Button "send": Give a name and a date, or tick walk-in`}},
		{name: "no date and no walk-in", context: map[string]any{"name": "Ada", "date": "", "walkin": false},
			failed: []string{`Button "send": Give a name and a date, or tick walk-in`}},
		{name: "walk-in left out", context: map[string]any{"name": "Ada"},
			failed: []string{`Button "send": Give a name and a date, or tick walk-in`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CheckAnswer([][]Message{msgs}, answer(tt.context))
			if len(tt.failed) == 0 {
				if err != nil {
					t.Fatalf("CheckAnswer() error = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrCheckFailed) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("CheckAnswer() error = %v, want ErrCheckFailed and ErrInvalid", err)
			}
			for _, rule := range tt.failed {
				if !strings.Contains(err.Error(), rule) {
					t.Errorf("CheckAnswer() error = %q, want it to name %q", err, rule)
				}
			}
			if strings.Contains(err.Error(), "email") {
				t.Errorf("CheckAnswer() error = %q: the email check is the renderer's", err)
			}
		})
	}
}

func TestCheckCardActionRunsTheSurfacesChecks(t *testing.T) {
	cv := &conversation{t: t, c: basicCatalog(t)}
	cv.call("c1", checkedForm, false)
	events := cv.events
	blank := Action{Name: "send", SurfaceID: "guest", SourceComponentID: "send", Timestamp: time.Now().UTC().Format(time.RFC3339Nano),
		Context: map[string]any{"name": "", "date": "2026-12-24"}}
	if err := CheckCardAction(events, blank); !errors.Is(err, ErrCheckFailed) {
		t.Errorf("CheckCardAction(a blank name) error = %v, want ErrCheckFailed", err)
	}
	blank.Context["name"] = "Ada"
	if err := CheckCardAction(events, blank); err != nil {
		t.Errorf("CheckCardAction(filled) error = %v, want nil", err)
	}
}
