// Package transcript reads what a chat's stored events say: where turns
// start and which turn an event belongs to, which client message ids a
// chat took, which calls have no response (and so what a holder that died
// left for the next one to close), which confirmations were answered and
// how (approvals, with the arguments a person's payload edited, as a JSON
// Merge Patch), and which turns a user stopped. It only reads: the parts
// that write a session (toolcallback, live) decide what to do about it.
//
// It is a folder of its own because toolcallback, functions (a page's
// history) and live read transcripts the same way, and none of this needs
// Firestore or the ledger.
package transcript
