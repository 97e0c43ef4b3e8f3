// Package firestoretest gives tests and benchmarks a Firestore client backed
// by the local Firestore emulator.
//
// # Emulator
//
// If FIRESTORE_EMULATOR_HOST is set, its emulator is used as is. Otherwise the
// first call to [NewClient] or [NewCountingClient] in a test binary starts one
// with
//
//	gcloud emulators firestore start --host-port=127.0.0.1:<free port>
//
// waits until it answers, and sets FIRESTORE_EMULATOR_HOST for the rest of the
// binary. A package that uses this package calls [Main] from its TestMain, so
// that the emulator it started (gcloud, and the java process gcloud leaves
// behind) is stopped when the tests end:
//
//	func TestMain(m *testing.M) { firestoretest.Main(m) }
//
// A binary killed without running Main's cleanup (a -timeout panic, SIGKILL)
// leaves the emulator running; look for "CloudFirestore" in ps.
//
// If the emulator cannot be started, tests that need it skip, except when
// CI=true, where they fail: a skip is not a pass. The emulator needs the
// gcloud component cloud-firestore-emulator (Debian package
// google-cloud-cli-firestore-emulator) and Java 17 or later.
//
// Every client works in a project of its own ("test-" and random hex), so
// tests and packages running in parallel never see each other's documents.
//
// # Counting operations
//
// [NewCountingClient] also returns a [Counter], installed as gRPC interceptors
// on the client's connection. It counts, per RPC the client sends:
//
//   - round trips: one per unary call or stream opened;
//   - reads: documents returned by BatchGetDocuments, RunQuery, GetDocument
//     and ListDocuments, with at least one read per query or list (an
//     aggregation query counts one read);
//   - missing: documents looked up (BatchGetDocuments, GetDocument) that do
//     not exist. Firestore bills each as a read, so [Ops.Lookups] (reads plus
//     missing) is the read count of the bill; a budget that counts reads
//     alone would let a path grow by lookups that find nothing;
//   - writes: the writes in a successful Commit or BatchWrite.
//
// Listen and Write streams count round trips only; listen streams are also
// counted apart (Ops.Listens).
//
// The Counter also injects faults for crash tests: [Counter.FailNext] fails the
// next call of a method, [Counter.SetHook] can fail any call. A failed call is
// not sent and not counted. The client retries some codes (Commit retries
// Unavailable and ResourceExhausted; RunTransaction retries Aborted), so to
// make a call fail once, inject an error with another code, such as a plain
// errors.New.
package firestoretest
