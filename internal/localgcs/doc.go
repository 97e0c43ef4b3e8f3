// Package localgcs serves a real Cloud Storage JSON and XML API in
// process, for `go run ./local` and the tests: files go through the same
// storage client and ADK's gcsartifact as in production, against
// github.com/fsouza/fake-gcs-server's fakestorage (chosen because it is a
// Go library that serves the API in process, with no listener, no Docker
// and no network, and the object preconditions gcsartifact's Save relies
// on; the storage client is never mocked).
package localgcs
