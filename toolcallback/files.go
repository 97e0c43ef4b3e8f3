package toolcallback

import (
	"context"
	"errors"

	"google.golang.org/genai"

	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
)

// withFiles stores the inline files of the message sent in user's chat
// (Options.Files), runs the message with the content that refers to them,
// and deletes them again when run wrote nothing (wroteNothing).
func (t *Team) withFiles(ctx context.Context, user, chat string, sent *genai.Content, run func(*genai.Content) error) error {
	content, err := t.opts.Files.SaveMessage(ctx, user, chat, sent)
	if err != nil {
		return err
	}
	err = run(content)
	if wroteNothing(err) {
		t.opts.Files.Drop(ctx, user, sent, content)
	}
	return err
}

// wroteNothing reports whether a turn's error says the turn wrote nothing
// (so nothing refers to the files it saved). Any other error may come
// after the message was stored (a client that left while the commit was
// in flight), and its files stay.
func wroteNothing(err error) bool {
	return errors.Is(err, sessionstore.ErrBusy) || errors.Is(err, ErrMessageTaken) ||
		errors.Is(err, limits.ErrRateLimited) || errors.Is(err, limits.ErrBudgetExhausted) ||
		errors.Is(err, ErrMessageNotFound) || errors.Is(err, ErrRewound)
}
