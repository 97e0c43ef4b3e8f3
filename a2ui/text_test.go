package a2ui

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSurfaceText(t *testing.T) {
	c := basicCatalog(t)
	tests := []struct {
		name     string
		messages string
		want     string
	}{
		{
			name:     "form",
			messages: bookingForm,
			want:     "Book a table\nDate: ____\nParty size: 2\n[ ] Terrace\n[Book]",
		},
		{
			name: "card with a list, choices, media and tabs",
			messages: list(createS, drawWith(
				`{"id":"root","component":"Column","children":["head","people","pick","multi","vol","pic","line","tabs"]}`,
				`{"id":"head","component":"Text","text":{"call":"formatString","args":{"value":"${/count} guests on ${ /day }"}}}`,
				`{"id":"people","component":"List","children":{"componentId":"person","path":"/people"}}`,
				`{"id":"person","component":"Row","children":["name","mail"]}`,
				`{"id":"name","component":"Text","text":{"path":"name"}}`,
				`{"id":"mail","component":"Text","text":{"path":"/people/0/name"}}`,
				`{"id":"pick","component":"ChoicePicker","label":"Seating","options":[{"label":"Inside","value":"in"},{"label":"Outside","value":"out"}],"value":{"path":"/seat"}}`,
				`{"id":"multi","component":"ChoicePicker","label":"Diet","variant":"multipleSelection","options":[{"label":"Vegan","value":"v"},{"label":"Halal","value":"h"}],"value":["h"]}`,
				`{"id":"vol","component":"Slider","label":"Volume","max":10,"value":3}`,
				`{"id":"pic","component":"Image","url":"https://example.com/a.png","description":"The room"}`,
				`{"id":"line","component":"Divider"}`,
				`{"id":"tabs","component":"Tabs","tabs":[{"title":"Menu","child":"menu"}]}`,
				`{"id":"menu","component":"Modal","trigger":"open","content":"dish"}`,
				`{"id":"open","component":"Button","child":"open_text","action":{"functionCall":{"call":"openUrl","args":{"url":"https://example.com"}}}}`,
				`{"id":"open_text","component":"Text","text":"Open"}`,
				`{"id":"dish","component":"Text","text":"Soup"}`),
				setData("/", `{"count":2,"day":"Friday","people":[{"name":"Ada"},{"name":"Grace"}],"seat":["out"]}`)),
			want: "2 guests on Friday\nAda\nAda\nGrace\nAda\nSeating:\n( ) Inside\n(x) Outside\nDiet:\n[ ] Vegan\n[x] Halal\n" +
				"Volume: 3 (0 to 10)\n[Image: The room]\n---\nMenu:\n[Open]\nSoup",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Surfaces
			msgs := mustDecode(t, c, tt.messages)
			if err := s.Apply(msgs...); err != nil {
				t.Fatal(err)
			}
			sf, _ := s.Surface(msgs[0].SurfaceID())
			if diff := cmp.Diff(tt.want, sf.Text()); diff != "" {
				t.Errorf("Text() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
