// Package agent is Baton's default agent: the tools of the original demo
// (weather, calculator, clock, background music, location, and a table
// booking that needs approval) on Gemini, or on a deterministic offline
// model when no Gemini credentials are configured.
//
// It lives with the local runner because it is the demo; the deployment
// packager wires it into the deployed functions unless told to use another
// agent package.
package agent
