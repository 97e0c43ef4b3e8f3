// Package devserver runs a team of agents on one machine as Baton's
// functions run deployed: the Firestore and Firebase Auth emulators started
// and stopped with it, every function with its sub-paths on one port
// (functions.Server.Mux), the demo page at "/", a sweeper doing what Cloud
// Scheduler does, and, if asked, each request's spans printed as a tree.
// go run ./local is the demo agents on it; a user's own main is
//
//	func main() { devserver.Main(&devserver.Options{Agent: myagent.New}) }
//
// It uses FIRESTORE_EMULATOR_HOST when set and otherwise starts the
// emulator itself, stopping it (its whole process group) when Run returns.
// Likewise the Firebase Auth emulator (FIREBASE_AUTH_EMULATOR_HOST; npm
// firebase-tools, installed once with npm ci): the page signs in
// anonymously through the Firebase JS SDK and the functions verify its ID
// tokens with the Admin SDK, as in production. Without node and npm it says
// so and falls back to development identity (BATON_DEV_IDENTITY=true, which
// can also be set by hand for scripts): X-Baton-User then names the user.
// Other settings come from the environment variables of the deployed
// functions (functions.EnvVars); a local run needs none of them:
// GOOGLE_CLOUD_PROJECT defaults to baton-local, BATON_PENDING_POLICY to
// cancel, BATON_TOKEN_KEY to a random key per run, and the turn limits
// of anonymous users and of a chat to 60 a minute (the page signs in
// anonymously); every BATON_*_TURNS_PER_MINUTE and _TOKENS_PER_DAY
// variable set is passed through.
//
// Live mode (GET /Chat/{chatId}/live) talks to Gemini Live when the
// environment configures Gemini, and otherwise, when Options.LiveRules
// are given, to a Gemini Live stand-in run in process
// (modeltest.LiveServer, the real wire protocol through genai's own
// client) with those rules behind it: go run ./local needs no key for
// it. The startup lines name the live model.
//
// The page reads /config.json: the model's name, the live model, the
// agents and their suggestions, how to sign in, and the request limits
// (BATON_MAX_FILE_BYTES, BATON_MAX_BODY_BYTES, BATON_MAX_CHAT_BODY_BYTES),
// so that it says a message is too large before sending it.
//
// It is a package of its own, rather than part of the local command, so
// that a Go developer's own module runs its agents as the demo runs. It
// stores nothing of its own in Firestore.
package devserver
