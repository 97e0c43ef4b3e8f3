// Package account holds a person's data as a whole: the map of what Baton
// keeps for a person (Map, put together from every part's DataKinds), the
// export of all of it (a ZIP streamed as it is written, export.go) and the
// Account function that serves the export, the deletion of all of it and
// whether one is under way (server.go). The deletion itself is the
// team's (toolcallback.Team.DeleteAccount), which an operator's tools
// call as a client's request does.
//
// This package stores nothing of its own: it reads through the parts
// that own each kind (the team's chats and ratings, the files, the
// limits' counts, sessionstore's user state) and deletes through the team.
// docs/data.md says what is kept, for how long, and how it is exported and
// deleted.
package account
