// Package userinput holds what a paused tool asks a person for (an MCP
// server's input requests, such as elicitation forms) and what the person
// answers: the request as the ledger records it and every client shows it
// (a page's form, an A2A caller's function call named ToolName), how it
// travels through ADK's tool confirmation (Ask, ReplyOf, and the request
// state kept out of stored events), the answer's shape, and its check
// against the request. It knows neither the ledger nor the stream:
// toolcallback records and resumes the tool that asks (or waits inside
// it, AskInCall), uistream and a2aserver show the request, and mcpregistry
// asks on a server's behalf.
//
// It is a folder of its own because those four parts share it and none of
// them may import another for it.
package userinput
