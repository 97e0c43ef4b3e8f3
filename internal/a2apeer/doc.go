// Package a2apeer serves, in tests, a real remote A2A agent: an a2a-go
// server agent (a2asrv over JSON-RPC, with a2a-go's own push sender) on a
// loopback address, which Baton's remote agent tools delegate to. Its
// agent works (a working status with a message, then a result once the
// test releases it), asks a question first (input-required, then
// completes with the answer), or works without sending push
// notifications (so that only polling hears it). It counts what it takes:
// the messages by id (taking a message once per id, as a remote that
// deduplicates retries does), the requests to cancel a task, the cancels
// run; and a test may refuse the requests of an instance it killed
// (SetGate). It stores nothing: its tasks live in a2a-go's in-memory
// store for the test's life.
package a2apeer
