// Package infra holds the deployment: terraform/ (the functions' Cloud Run
// services and the image they run, Firestore, identities, secrets, the
// Sweep schedule), package/ (the command that builds the upload archive);
// the README's Deploy section and docs/deployment.md explain them.
//
// Every function is a google_cloud_run_v2_service, because only that
// resource can turn on session affinity, which the functions that serve
// chats need so that a chat's requests keep reaching the instance that holds
// its session. Its build_config starts no build, so all six take one other
// path: Cloud Build turns the archive into one image with Google's
// buildpacks for Go functions (a terraform_data running gcloud builds
// submit, tagged with the archive's SHA-256, so that a code change rolls
// out), and each service runs that image with FUNCTION_TARGET set to its
// entry point, which functions-framework-go serves alone.
//
// Live mode's WebSocket (GET /Chat/{chatId}/live) is served by the Chat
// service, so that a page reaches it at the URL it already has and the
// affinity cookie that brings a chat's turns to an instance brings its
// socket there too. Cloud Run holds a socket for at most the service's
// request timeout, so Chat's is live_timeout_seconds (3,600 s, the
// longest) rather than a turn's; a turn's work stays bounded by the
// request and invocation timeouts in code, and a conversation ends a
// minute before the platform would cut it (docs/deployment.md, "Live
// mode", weighs a service of its own).
//
// This package itself has no code, only the offline checks that hold the
// Terraform to the code it deploys: the registered function names and the
// entry point each service serves, the image, session affinity, capacity,
// the environment functions.Config reads, and the Firestore TTL fields and
// indexes the code's queries need. They parse the .tf files with HCL and
// evaluate them with variable defaults, the way Terraform would, without
// providers or credentials.
package infra
