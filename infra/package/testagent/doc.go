// Package testagent is the smallest agent the packaging test deploys into a
// test archive, so that the archive is proven to build and start whether or
// not the default agent (local/agent) is present. It is never deployed; it
// lives under infra/ because only the packaging test uses it.
package testagent
