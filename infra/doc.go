// Package infra holds the deployment: terraform/ (Cloud Run functions,
// Firestore, identities, secrets, the Sweep schedule), package/ (the command
// that builds the upload archive); the README's Deploy section explains them.
//
// This package itself has no code, only the offline checks that hold the
// Terraform to the code it deploys: the registered function names and
// runtime, the environment functions.Config reads, and the Firestore TTL
// fields and indexes the code's queries need. They parse the .tf files with
// HCL and evaluate them with variable defaults, the way Terraform would,
// without providers or credentials.
package infra
