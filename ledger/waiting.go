package ledger

import "github.com/baton-run/baton/sessionstore"

// What waits for a person, in a chat's listing (sessionstore.Listing): a
// call of a kind a person answers is counted there from the commit that
// creates its record to the commit that settles it, because the listing's
// write rides in those commits. A settling commit is conditional on the
// record as read (first writer wins), so the listing follows the outcome
// that won: two answers, or an answer and the sweeper, remove the call
// once, and a loser writes nothing there either. A call of an external
// system, or of a session that is no chat's, is not counted.

// waitsForPerson reports whether calls of kind k wait for a person.
func waitsForPerson(k Kind) bool {
	switch k {
	case KindBrowser, KindApproval, KindInput, KindSurface:
		return true
	}
	return false
}

// chatKey is the chat whose listing counts c.
func (l *Ledger) chatKey(c *Call) sessionstore.ChatKey {
	return sessionstore.ChatKey{App: l.app, User: c.UserID, ID: c.Chat}
}

// waitingWrites are the writes of c's chat listing for a commit that
// creates c's record (waits: true) or settles it, none when the listing
// does not count c.
func (l *Ledger) waitingWrites(c *Call, waits bool) []sessionstore.Write {
	if c.Chat == "" || !waitsForPerson(c.Kind) {
		return nil
	}
	var w *sessionstore.WaitingCall
	if waits {
		w = &sessionstore.WaitingCall{Kind: string(c.Kind), Client: c.ClientID, AnyDevice: c.AnyDevice, Expires: c.Expires}
	}
	return []sessionstore.Write{l.sessions.ChatWaiting(l.chatKey(c), c.ID, w)}
}
