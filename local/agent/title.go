package agent

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/toolcallback"
)

// Chat titles. The team asks its title model for a new chat's title with
// toolcallback.TitleInstruction as the system instruction; the offline
// model answers such a request from the first message alone: what the
// message asks for, when a rule of answer recognises it ("Weather in
// Tokyo"), and otherwise its first few words.

// titleWords bounds an offline title made of the message's own words.
const titleWords = 5

// asksTitle reports whether req asks for a chat's title.
func asksTitle(req *model.LLMRequest) bool {
	if req.Config == nil || req.Config.SystemInstruction == nil {
		return false
	}
	for _, p := range req.Config.SystemInstruction.Parts {
		if p != nil && p.Text == toolcallback.TitleInstruction {
			return true
		}
	}
	return false
}

// title is the offline model's title for a chat that starts with the
// last of contents.
func title(contents []*genai.Content) string {
	var said []string
	if len(contents) > 0 {
		for _, p := range contents[len(contents)-1].Parts {
			if p != nil && p.Text != "" && !p.Thought {
				said = append(said, p.Text)
			}
		}
	}
	msg := strings.TrimSpace(strings.Join(said, " "))
	switch {
	case msg == "":
		return "New chat"
	case reWeather.MatchString(msg):
		if m := reWeather.FindStringSubmatch(msg); strings.TrimSpace(m[1]) != "" {
			return "Weather in " + strings.TrimRight(strings.TrimSpace(m[1]), "?.! ")
		}
		return "The weather"
	case reForm.MatchString(msg), reTable.MatchString(msg):
		return "A table reservation"
	case reTrack.MatchString(msg):
		return "Music track " + reTrack.FindStringSubmatch(msg)[1]
	case reLocation.MatchString(msg):
		return "Where am I"
	case reNoteAdd.MatchString(msg), reNoteList.MatchString(msg), reNoteClr.MatchString(msg):
		return "Notes"
	}
	words := strings.FieldsFunc(msg, func(r rune) bool { return unicode.IsSpace(r) })
	words = words[:min(len(words), titleWords)]
	t := strings.TrimRight(strings.Join(words, " "), "?.!,;:")
	r, n := utf8.DecodeRuneInString(t)
	return string(unicode.ToUpper(r)) + t[n:]
}
