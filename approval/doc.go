// Package approval declares a Go tool that runs only after a person
// approves its call (ADK's tool confirmation), and what the approver's
// payload makes of the model's arguments: a JSON Merge Patch over them.
// A toolcallback.Team records the confirmation as a paused call (an
// approval) and resumes the tool once it is decided; this package is the
// tool's side, which needs neither the ledger nor Firestore.
//
// It is a folder of its own because it is a tool like any other, and the
// payload's merge is written once here (transcript shows the same merge
// in a chat's history).
package approval
