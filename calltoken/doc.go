// Package calltoken signs and verifies call tokens: opaque strings that
// alone authorise answering one paused call, for an external system or an
// approval link (toolcallback.Team.Token). A token binds the call, its
// session and user, a hash of the call's arguments, and an expiry, under an
// HMAC-SHA256 of a key the deployment holds (BATON_TOKEN_KEY); the same
// exactly-once rules apply to answers that carry it.
//
// It is a package of its own because it holds one idea that needs neither
// Firestore nor ADK: a verified token names a call, and the ledger then
// reads that call and checks its arguments (Claims.Binds).
package calltoken
