// Package feedback keeps people's ratings of assistant messages: a thumbs
// up or down, with an optional comment, one per message and user, which
// the user may replace or delete.
//
// # Where
//
// A rating is a document under the chat's document (sessionstore's
// ChatDoc), named after the message it rates:
//
//	{root}/{app}/users/{user}/chats/{chat}/feedback/{message id}
//
// so that it is the user's by its path (another user's chat id is another
// document), found for a page of messages in one round trip (Ratings:
// the page's message ids, one lookup each), and deleted with the chat
// (sessionstore.FinishChatDeletion removes everything under the chat
// document) and with the account.
//
// # Regenerate and edit
//
// A rating belongs to its message. A regenerate or an edit takes turns
// back (toolcallback's rewind), and the commit that stores the rewind
// mark also deletes the ratings of the assistant messages it takes back
// (Removed): a rating survives a regenerate only for the messages that
// survive it. The message a regenerate answers with has an id of its own,
// and no rating until it is given one.
//
// # Indexes
//
// None: a page's ratings are read by name, an export's (All) by listing
// the chat's collection.
package feedback
