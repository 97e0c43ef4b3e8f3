// Package teamtest is the world Baton's tests run a team in: a fresh
// project on the Firestore emulator (firestoretest), the demo's tools
// declared once for tests, agents of them on a strict scripted model
// (modeltest), a team per instance of the app, and a turn, a resume or a
// rewind collected into the events it streamed.
//
// The packages that run a team (toolcallback, functions, live, a2aserver,
// mcpregistry) build their fixtures on it and keep only what is theirs:
// functions an HTTP server around the members, live a runner of
// conversations, a2aserver an A2A server per instance, mcpregistry the MCP
// servers its agents use.
//
// # The tools
//
// [Tools] are a test declaration of the demo's tools (local/agent's): the
// same names, kinds and arguments (change_bgm, get_location, book_table,
// get_weather, show_surface, and clear_notes for the notes server's
// question), plus ask_crm for the external kind the demo does not use.
// They are not the demo's own declarations, on purpose: tests need answers
// they can predict (the demo's weather is made up from a hash, its booking
// refuses 21 people), counts of what ran (Tools.Booked), and a location any
// device may answer; and a part's tests must not import local, which
// nothing imports. local/agent's own tests test the demo's tools.
//
// # What it stores
//
// Nothing of its own: what the teams store, under sessionstore's root of a
// project named "test-" and random hex. It needs no index.
//
// # Instances
//
// Each [Instance] has a session store and a team of its own (a
// serverless instance holds no state another may need). [World.NewInstance]
// with a nil client shares the first instance's connection and counter;
// [World.Reopen] is a process of its own, whose faults and counts are
// separate.
package teamtest
