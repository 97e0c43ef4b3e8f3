// Package modeltest forwards to the public package of the same name
// (github.com/baton-run/baton/modeltest), so that tests written against
// this path keep building. New tests import the public package.
package modeltest

import "github.com/baton-run/baton/modeltest"

type (
	// Strict is modeltest.Strict.
	Strict = modeltest.Strict
	// Reply is modeltest.Reply.
	Reply = modeltest.Reply
)

var (
	CheckPairing = modeltest.CheckPairing
	DumpContents = modeltest.DumpContents
	CallReply    = modeltest.CallReply
	Call         = modeltest.Call
	EchoReply    = modeltest.EchoReply
	FailReply    = modeltest.FailReply
	TextReply    = modeltest.TextReply
	ErrScripted  = modeltest.ErrScripted
)
