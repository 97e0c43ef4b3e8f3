package uistream

import "testing"

func TestErrorTextShortensUnknownTool(t *testing.T) {
	adk := "tool 'change_bgm' not found.\nAvailable tools: get_weather, calculate\n\nPossible causes:\n  1. LLM hallucinated the function name - review agent instruction clarity"
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"ADK's unknown tool hint", adk, "tool 'change_bgm' not found."},
		{"as an error value", map[string]any{"x": 1}, `{"x":1}`},
		{"another multi-line error", "line one\nline two", "line one\nline two"},
	}
	for _, tt := range tests {
		if got := ErrorText(tt.in); got != tt.want {
			t.Errorf("%s: ErrorText = %q, want %q", tt.name, got, tt.want)
		}
	}
}
