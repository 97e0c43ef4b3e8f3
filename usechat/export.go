package usechat

import (
	"encoding/json"
	"io"

	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/feedback"
	"github.com/baton-run/baton/toolcallback"
)

// ExportMessages writes the conversation of r (package account's export)
// as GET /Chat/{chatId} shows it, every message with its id, one UI
// message per line (NDJSON); an assistant message carries its rating in
// its metadata, as in GET /Chat/{chatId}, and a stored file part the URL
// fileURL gives it (the file's place in the export).
func ExportMessages(w io.Writer, r *toolcallback.ChatRecord, ratings map[string]feedback.Rating, fileURL func(chatfiles.Ref) string) error {
	messages := uiMessages(r.History, r.History.Len(), r.Calls)
	enc := json.NewEncoder(w)
	for _, m := range messages {
		for i, p := range m.Parts {
			if f, ok := p.(filePart); ok && f.ref != nil {
				f.URL = fileURL(*f.ref)
				m.Parts[i] = f
			}
		}
		m.rate(ratings)
		if err := enc.Encode(m); err != nil {
			return err
		}
	}
	return nil
}
