package a2ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func basicCatalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := BasicCatalog()
	if err != nil {
		t.Fatalf("BasicCatalog() error = %v", err)
	}
	return c
}

// problemsOf returns the problems err lists (nil for nil), failing t for
// an error that is not a *ValidationError wrapping ErrInvalid.
func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var verr *ValidationError
	if !errors.As(err, &verr) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("error = %v (%T), want a *ValidationError wrapping ErrInvalid", err, err)
	}
	return verr.Problems
}

// onSurface returns a list that creates surface "s" and draws root (a
// Column of comp), comp, and the helper components "label" (a Text) and
// "pane" (a Column of nothing), as JSON.
func onSurface(comp string) string {
	return `[{"version":"v0.9","createSurface":{"surfaceId":"s","catalogId":"` + BasicCatalogID + `"}},
	{"version":"v0.9","updateComponents":{"surfaceId":"s","components":[
		{"id":"root","component":"Column","children":["c"]},
		{"id":"label","component":"Text","text":"Label"},
		{"id":"pane","component":"Column","children":[]},
		` + comp + `]}}]`
}

// componentAt is where a problem with the component onSurface draws is
// reported.
func componentAt(typ string) string {
	return fmt.Sprintf(`messages[1].updateComponents.components[3]: %s "c"`, typ)
}

// One valid and at least one invalid component of each type of the basic
// catalog.
func TestCatalogComponents(t *testing.T) {
	c := basicCatalog(t)
	tests := []struct {
		name, component string
		want            []string
	}{
		{name: "Text", component: `{"id":"c","component":"Text","text":"Hi","variant":"h2"}`},
		{name: "Text bound", component: `{"id":"c","component":"Text","text":{"path":"/user/name"}}`},
		{name: "Text formatted", component: `{"id":"c","component":"Text","text":{"call":"formatString","args":{"value":"Hi ${/name}"},"returnType":"string"}}`},
		{name: "Text without text", component: `{"id":"c","component":"Text"}`, want: []string{componentAt("Text") + ": text missing"}},
		{name: "Text of a number", component: `{"id":"c","component":"Text","text":3}`, want: []string{componentAt("Text") + ": text: want string or object, got number"}},
		{name: "Text variant", component: `{"id":"c","component":"Text","text":"x","variant":"h9"}`,
			want: []string{componentAt("Text") + `: variant: "h9" is not one of "h1", "h2", "h3", "h4", "h5", "caption", "body"`}},
		{name: "Image", component: `{"id":"c","component":"Image","url":"https://example.com/a.png","fit":"cover","variant":"avatar","description":"A cat"}`},
		{name: "Image without url", component: `{"id":"c","component":"Image","fit":"cover"}`, want: []string{componentAt("Image") + ": url missing"}},
		{name: "Icon", component: `{"id":"c","component":"Icon","name":"calendarToday"}`},
		{name: "Icon svg", component: `{"id":"c","component":"Icon","name":{"svgPath":"M0 0h24v24H0z"}}`},
		{name: "Icon of a number", component: `{"id":"c","component":"Icon","name":7}`, want: []string{componentAt("Icon") + ": name: want string or object, got number"}},
		{name: "Video", component: `{"id":"c","component":"Video","url":"https://example.com/a.mp4"}`},
		{name: "Video bad url", component: `{"id":"c","component":"Video","url":["a"]}`, want: []string{componentAt("Video") + ": url: want string or object, got array"}},
		{name: "AudioPlayer", component: `{"id":"c","component":"AudioPlayer","url":"https://example.com/a.mp3","description":"Episode 1"}`},
		{name: "AudioPlayer without url", component: `{"id":"c","component":"AudioPlayer"}`, want: []string{componentAt("AudioPlayer") + ": url missing"}},
		{name: "Row", component: `{"id":"c","component":"Row","children":["label"],"justify":"spaceBetween","align":"center","weight":1}`},
		{name: "Row bad justify", component: `{"id":"c","component":"Row","children":["label"],"justify":"left"}`,
			want: []string{componentAt("Row") + `: justify: "left" is not one of "start", "center", "end", "spaceBetween", "spaceAround", "spaceEvenly", "stretch"`}},
		{name: "Column template", component: `{"id":"c","component":"Column","children":{"componentId":"label","path":"/items"}}`},
		{name: "Column without children", component: `{"id":"c","component":"Column"}`, want: []string{componentAt("Column") + ": children missing"}},
		{name: "List", component: `{"id":"c","component":"List","children":["label"],"direction":"horizontal"}`},
		{name: "List template without path", component: `{"id":"c","component":"List","children":{"componentId":"label"}}`,
			want: []string{componentAt("List") + ": children: path missing"}},
		{name: "Card", component: `{"id":"c","component":"Card","child":"pane"}`},
		{name: "Card with children", component: `{"id":"c","component":"Card","child":"pane","children":["label"]}`,
			want: []string{componentAt("Card") + `: unknown property "children"`}},
		{name: "Tabs", component: `{"id":"c","component":"Tabs","tabs":[{"title":"One","child":"label"},{"title":{"path":"/t"},"child":"pane"}]}`},
		{name: "Tabs empty", component: `{"id":"c","component":"Tabs","tabs":[]}`, want: []string{componentAt("Tabs") + ": tabs: minItems: got 0, want 1"}},
		{name: "Tabs tab without child", component: `{"id":"c","component":"Tabs","tabs":[{"title":"One"}]}`, want: []string{componentAt("Tabs") + ": tabs[0]: child missing"}},
		{name: "Modal", component: `{"id":"c","component":"Modal","trigger":"label","content":"pane"}`},
		{name: "Modal without content", component: `{"id":"c","component":"Modal","trigger":"label"}`, want: []string{componentAt("Modal") + ": content missing"}},
		{name: "Divider", component: `{"id":"c","component":"Divider","axis":"vertical"}`},
		{name: "Divider axis", component: `{"id":"c","component":"Divider","axis":"diagonal"}`,
			want: []string{componentAt("Divider") + `: axis: "diagonal" is not one of "horizontal", "vertical"`}},
		{name: "Button", component: `{"id":"c","component":"Button","child":"label","variant":"primary","action":{"event":{"name":"book","context":{"when":{"path":"/date"},"table":7}}}}`},
		{name: "Button opening a link", component: `{"id":"c","component":"Button","child":"label","action":{"functionCall":{"call":"openUrl","args":{"url":"https://example.com"}}}}`},
		{name: "Button without action", component: `{"id":"c","component":"Button","child":"label"}`, want: []string{componentAt("Button") + ": action missing"}},
		{name: "Button event without name", component: `{"id":"c","component":"Button","child":"label","action":{"event":{"context":{}}}}`,
			want: []string{componentAt("Button") + ": action.event: name missing"}},
		{name: "Button event named nothing", component: `{"id":"c","component":"Button","child":"label","action":{"event":{"name":" "}}}`,
			want: []string{componentAt("Button") + ": action.event.name is empty: name the event the agent receives"}},
		{name: "TextField", component: `{"id":"c","component":"TextField","label":"Name","value":{"path":"/name"},"variant":"shortText","validationRegexp":"^[a-z]+$","checks":[{"condition":{"call":"required","args":{"value":{"path":"/name"}}},"message":"Say your name"}]}`},
		{name: "TextField without label", component: `{"id":"c","component":"TextField","value":{"path":"/name"}}`, want: []string{componentAt("TextField") + ": label missing"}},
		{name: "TextField check without message", component: `{"id":"c","component":"TextField","label":"Name","checks":[{"condition":true}]}`,
			want: []string{componentAt("TextField") + ": checks[0]: message missing"}},
		{name: "CheckBox", component: `{"id":"c","component":"CheckBox","label":"Terrace","value":{"path":"/terrace"}}`},
		{name: "CheckBox of a string", component: `{"id":"c","component":"CheckBox","label":"Terrace","value":"yes"}`,
			want: []string{componentAt("CheckBox") + ": value: want boolean or object, got string"}},
		{name: "ChoicePicker", component: `{"id":"c","component":"ChoicePicker","label":"Seating","variant":"mutuallyExclusive","displayStyle":"chips","filterable":false,"options":[{"label":"Inside","value":"in"},{"label":"Outside","value":"out"}],"value":{"path":"/seating"}}`},
		{name: "ChoicePicker option without value", component: `{"id":"c","component":"ChoicePicker","options":[{"label":"Inside"}],"value":[]}`,
			want: []string{componentAt("ChoicePicker") + ": options[0]: value missing"}},
		{name: "Slider", component: `{"id":"c","component":"Slider","label":"Party size","min":1,"max":12,"value":{"path":"/size"}}`},
		{name: "Slider without max", component: `{"id":"c","component":"Slider","value":3}`, want: []string{componentAt("Slider") + ": max missing"}},
		{name: "DateTimeInput", component: `{"id":"c","component":"DateTimeInput","label":"Date","value":{"path":"/date"},"enableDate":true,"min":"2026-01-01"}`},
		{name: "DateTimeInput bad bound", component: `{"id":"c","component":"DateTimeInput","value":"","min":"soon"}`,
			want: []string{componentAt("DateTimeInput") + `: min: "soon" is not a date, or "soon" is not a time, or "soon" is not a date-time`}},
		{name: "unknown component", component: `{"id":"c","component":"Carousel"}`,
			want: []string{`messages[1].updateComponents.components[3]: unknown component "Carousel" (the catalog has AudioPlayer, Button, Card, CheckBox, ChoicePicker, Column, DateTimeInput, Divider, Icon, Image, List, Modal, Row, Slider, Tabs, Text, TextField, Video)`}},
		{name: "MultipleChoice is v0.8's", component: `{"id":"c","component":"MultipleChoice","options":[],"selections":[]}`,
			want: []string{`messages[1].updateComponents.components[3]: unknown component "MultipleChoice" (the catalog has AudioPlayer, Button, Card, CheckBox, ChoicePicker, Column, DateTimeInput, Divider, Icon, Image, List, Modal, Row, Slider, Tabs, Text, TextField, Video)`}},
	}
	covered := make(map[string]bool)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, err := c.Decode([]byte(onSurface(tt.component)), nil)
			if diff := cmp.Diff(tt.want, problemsOf(t, err)); diff != "" {
				t.Errorf("Decode() problems mismatch (-want +got):\n%s", diff)
			}
			if tt.want == nil && len(msgs) != 2 {
				t.Errorf("Decode() = %d messages, want 2", len(msgs))
			}
		})
		var typ struct{ Component string }
		_ = json.Unmarshal([]byte(tt.component), &typ)
		covered[typ.Component+map[bool]string{true: " valid", false: " invalid"}[tt.want == nil]] = true
	}
	for _, name := range c.Components() {
		for _, kind := range []string{" valid", " invalid"} {
			if !covered[name+kind] {
				t.Errorf("no%s %s case", kind, name)
			}
		}
	}
}
