// Package functions holds Baton's HTTP entry points for functions-framework-go.
//
// It decodes and authenticates requests, calls the libraries below it
// (sessionstore, toolcallback) and maps their errors to HTTP statuses in one
// place. Identity comes only from a verified Firebase Auth ID token
// (IDTokenVerifier), never from a request body.
package functions
