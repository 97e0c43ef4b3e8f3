// Package modeltest provides scripted models for offline tests of agents
// on Baton: no network, no randomness, and a check that every request pairs
// function calls with responses the way Gemini insists on, so that a test
// fails where Gemini would refuse the transcript Baton built (after a
// pause, a resume, an expiry or a repair). It also signs its calls and
// checks their thought signatures as Gemini 3 does (CheckSignatures: the
// current turn's calls must come back with the signature the model gave,
// or Gemini's skip value for a call another model made), and refuses its
// own summaries handed back as text, so that a path that drops or swaps a
// signature, or leaks a thought, fails a test rather than a deployment.
//
// Baton's own tests use it, and so can a user's tests of their own agent:
// give Strict to llmagent.Config.Model in place of Gemini.
//
// LiveServer stands in for Gemini Live (the BidiGenerateContent WebSocket
// protocol) for genai's own client, and so for anything built on it: ADK's
// live flow, Baton's live mode, the local runner without a key. Its model
// turns are the same Reply steps, so one script (or, through LLMReply, one
// model's rules) answers both the HTTP and the live API.
//
// It is a folder of its own, rather than internal/, because users import
// it; it holds nothing but models for tests.
package modeltest
