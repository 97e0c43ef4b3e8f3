// Package toolcallback runs a team of ADK agents on chats whose calls only a
// browser, a person or another system can answer: it pauses an agent on
// such a call, and resumes it exactly once, on any instance, when the
// answer arrives. Team is the entry point: Turn, Rewind, Resume, Pending,
// Stop, Sweep. Pausing, resuming, rewinding, stopping, warm turns and agent
// switches share one state machine (the session's lease and its ledger
// records), which is why they live together; the chats' files (package
// chatfiles) and the turn limits (package limits) are parts of their own.
//
// # Tools
//
// The calls that pause are those of Browser, External, Surface,
// Background and Remote tools (the tool announces itself when the model
// request is built; Background and Remote calls are work off the request,
// which the queue carries) and ADK's
// tool confirmations (an Approval, a question asked with userinput.Ask);
// AskInCall asks a person while its tool runs, and the turn stays open.
// Each declaration says how it pauses.
//
// # Turns
//
// A turn is what one user message sets off: the invocation that answers it
// and every resume that continues it (answers to the calls it paused on),
// up to the next user message. A client shows a turn as one assistant
// message, and the id of the turn's first invocation names it (StartsTurn;
// a resume reports it as ResumeOutcome.Turn).
//
// How a turn runs is decided in one place. Team.turn looks at the chat
// (this instance's copy, or one read: a turnView), planTurn decides from
// it alone (a turnPlan: refuse with which error, first turn of a new chat,
// switch agents, claim the lease with the message's commit, or settle what
// the session left open under the lease first), and carryOut does what the
// plan says without deciding again. A plan that loses its race (its commit
// finds the session written, gone, or the message taken) is planned again
// on a fresh read; a switch is carried out and the turn planned again on
// the chat as it now is. Turns, regenerates and edits (Rewind) go through
// the same planner. Actions on A2UI cards travel in the turn request
// (TurnRequest.Actions) and the planner checks them against the surfaces
// of the session it plans on (cardContent, plan.go): the doors (Chat, A2A) only
// decode them, and a card's action costs no read of its own.
//
// # Resumes
//
// How an answer is taken is decided once too, in the same three steps.
// Team.Resume looks (findCall reads the chat, its session and the call in
// one round trip, or the call a token names; lookStep the records of the
// call's model step, when the answer may be taken at once); planResume
// decides from that alone, into a resumePlan: refuse with which error,
// take the answer at once (resumeAtOnce: one commit records it, takes the
// session's lease and delivers the step's answers, when the answer
// completes the step and the session is free and needs no repair), or
// record it first writer wins and deliver the step under the lease
// (resumeRecord, the long way); carryOutResume does what the plan says.
// The request stops at the planner: what carries the answer on is the
// plan, and then the invocation's own value (invocationRun). A commit of
// the short way that finds the record or the session changed wrote
// nothing, and the answer is taken the long way, which finds them as they
// are. Sweep delivers a step whose answers are all recorded the same long
// way (resumeStep).
//
// # Ledger
//
// Each paused call has a record in package ledger (its layout, states and
// first-writer-wins updates are described there). The record is written in
// the same Firestore commit as the event that holds the call: the runner appends through a session
// service (invocationSessions) that adds the records to the event's batch. A
// browser or external call is recognised by its tool's name, which the
// tool announced to the invocation when the model request was built, so
// the record exists from the model's event on, before the tool has run;
// an approval is recognised by ADK's confirmation request. The runner
// yields an event only once it is stored, so a client never sees a call
// that has no record, and no crash can leave one.
//
// An answer is recorded with a precondition on the record's update time:
// the first writer wins and later answers get the recorded outcome. When
// every call of a model step has an answer, the agent is resumed once, under
// the session lease; before running, the engine checks in the session which
// answers no earlier resume delivered, since replaying responses re-runs the
// model and replaying a confirmation re-runs the tool. ADK runs approved
// tools from the latest user event only and hides that event from the
// model, so a step that mixes approvals with other calls gets the other
// answers in a user event of their own first.
//
// # Rewind
//
// Team.Rewind regenerates an answer or edits an earlier user message: it
// takes a turn back, with everything after it, and runs a user message in
// its place, under the session's lease like any turn:
//
//  1. read the chat and the session whole, and find the turn (planRewind):
//     a request refused here (unknown or taken-back message, served
//     before) writes nothing;
//  2. query the ledger for the records still open;
//  3. one commit takes the session's lease (conditional on the session as
//     read: else busy, writing nothing), stores the rewind mark
//     (sessionstore.RewindSession), which puts session-scoped state back,
//     and closes those records: pending ones become cancelled (a late
//     answer gets ErrExpired), and none is resumed;
//  4. the user message runs as a turn (its commit, then the agent).
//
// The mark names the request that made it (rewindRequest.key), so the same
// request again is recognised: after step 4 it is ErrMessageTaken (the
// caller replays the turn); after step 3 only (the process died), the turn
// runs now, without a second mark (docs/conversation-control.md).
//
// # After a crash
//
// A process can die after any write. The next turn, resume or agent switch
// of the session, under its lease, repairs what the dead invocation left
// (repairTail says what each state becomes): calls without a response and
// without a record are closed with an error response, and a message no
// model event answers gets a note that it was interrupted. A call with a
// record stays pending and can be answered.
//
// # One invocation per session
//
// Every turn and resume holds sessionstore's lease on the session, renewed
// every third of LeaseTTL while the holder works, so a holder that dies
// frees the session within LeaseTTL. Because the lease lives in the session
// document, taking it over changes that document's update time, on which
// every write of the previous holder is conditioned: a stalled holder
// writes nothing once its lease was taken, and its invocation is cancelled
// when it notices. Invocations run detached from the caller's
// cancellation, bounded by InvocationTimeout.
//
// # Stop
//
// Team.Stop stops what runs in a chat from any instance. A running
// invocation is asked through a request document beside its session, named
// after its lease's fence (sessionstore.RequestStop); the holder listens to
// that one document (sessionstore.AwaitStop) from stopListenDelay after the
// invocation started until it ends, and cancels the runner's context when
// the request arrives, which cancels the model request. Then, still under
// its lease, it stores what the invocation leaves (closeStopped): every
// call without a response gets one saying it was stopped, pending records
// are cancelled, and the text the model had streamed of its current
// response becomes the final assistant event, marked (IsStopNote). The
// lease is released as after any invocation, so every stream that follows
// the turn ends.
//
// A listener rather than a poll: a poll costs a read per interval per
// running turn, a listener nothing until the request comes. A document of
// its own rather than the session's: a write there would fence the holder
// out before it stored what it had generated. The delay keeps turns
// shorter than it from paying for a listen stream; a request made before
// the listener starts is in its first snapshot. Hence the latency bound: a
// stop is noticed at most stopListenDelay plus one listen round trip after
// it was asked. A paused turn is not running: the stop itself takes the
// lease, cancels the pending calls (a late answer gets 410) and stores the
// same responses and note.
//
// # One invocation, one session service
//
// Each invocation builds its own runner around its own session service
// (invocationSessions), which holds what the request prepared: the
// session handle it read (the runner's Get returns it instead of reading
// again), the lease it holds or the claim the message's commit takes, and
// the client that started it. Nothing of Baton's passes through ADK's
// runner on the context except what tools must reach: the pausing tools'
// declarations, and the chat's MCP sessions as the turn read them
// (ChatMCPSessions).
//
// # Round trips
//
// A turn reads the chat and its session in one round trip (the session id
// guessed from what the instance remembers, which the chat document then
// checks) and hands that handle to ADK's runner, whose Get would otherwise
// read it again; a chat's next turn on the instance that served its last
// one reads nothing (warm turns, below). Either way the model is asked at
// once: the user message is staged on the handle, and the commit that
// stores it and takes the lease (conditional on the session being as
// seen; a new chat's first message creates the chat and the session in
// that same commit) runs beside the model request. Nothing is streamed
// before that commit landed, and one that fails (the session was written,
// the chat created, the lease taken meanwhile) cancels the model request:
// the turn is planned again on a fresh read, or refused as busy, having
// shown and stored nothing. With a token budget, the day's count is read
// beside the model request too, and the commit waits for it: a commit
// cannot be conditioned on a sum, and a refused turn stores nothing. The
// run's next append (a tool call the model made meanwhile) waits for that
// commit's outcome: through the same handle it would store the staged
// message itself, before the checks passed.
//
// The ledger is queried only when the session document says records may
// be open, or when the tail shows something to settle; that turn then
// takes the lease first. A resume that delivered every open record of its
// session records in its releasing commit that none is open, so the next
// turn goes the short way. A resume reads chat, session and call at once,
// and when its answer completes the step, one commit records the answer,
// takes the lease and delivers the step's answers. Every other case takes
// the long path, which reads everything again under the lease: the short
// paths only skip work whose outcome the conditional commit would
// contradict. A reply the model gives whole is shown as soon as it
// arrives (its text, as a partial event's) and stored with the lease's
// release, before the stream's finish.
//
// # Warm turns
//
// An instance keeps the session handle its last turn of a chat left
// (chatMemory): the invocation's final reply is staged and stored with the
// lease's release, so the handle is then the session exactly as stored.
// The chat's next turn on that instance reads nothing before the model.
// The copy may be stale (another instance wrote), so its commit is
// conditional on the copy's version, and a failed one cancels the model
// request and the turn is planned again on a read: speculation costs one
// cancelled model request on a lost race, never a wrong history. The
// app: and user: state a copy holds is shared with other sessions, which
// its version does not cover: unless the agents keep none
// (Options.SessionStateOnly), the app and user state documents are read
// beside the model and the commit waits for them to match the copy
// (sessionstore.Service.SharedStateCurrent), so the state a warm turn runs
// with is as fresh as a cold turn's, read before its claiming commit. A
// copy is used when the caller's rate limits can be checked on this
// instance's copy of the user's turn log (limits.Reading.Cached); a token
// budget is read beside the model as on any turn.
//
// # Live segments
//
// A live segment (LiveSegment, opened by OpenLive) is planned as a turn and
// holds the lease like one, marked live (sessionstore's liveUntil, which
// the user's bound on live segments counts). It adopts the open records
// instead of cancelling them; an answer recorded meanwhile (Resume finds a
// live holder and neither waits nor resumes) reaches it through Answers.
// A turn meanwhile is refused (IsLive).
//
// Who holds a lease is a Holder (the client, live or not, an id per
// acquisition), stored in the lease as a string that only lease.go writes
// and reads. The planner decides a live takeover: a segment opened by the
// device whose live segment holds the chat (Holder.YieldsTo: a tab that
// lost its socket, or whose instance died) asks the older one to stop,
// waits up to takeoverWait for it to end by itself, and takes the lease
// over (sessionstore.LeaseRequest.TakeOver). The lease's fence makes that
// safe when the older holder is alive after all: its next write fails with
// ErrLeaseLost. Waiting out a dead holder's lease made a reconnect take 11
// s; the takeover takes about one.
//
// # Background calls
//
// A Background tool's call pauses as a browser call does; its record is
// written "to be enqueued" with the event, and the task that carries the
// work (package workqueue) is created after the commit, with a name
// derived from the call, so that the repair of a lost enqueue (Sweep, the
// chat's next request: enqueue.go) cannot queue the work twice. Team.Work
// serves the queue's deliveries on any instance and decides on the record
// alone (work.go): each step (claim, progress, release, answer) is first
// writer wins, so duplicate and late deliveries change nothing, and a
// delivery that finds another attempt holding the work asks to be
// delivered again after the hold rather than being acknowledged, since
// acknowledging it would drop the retry the holder may need if it dies.
// While the tool runs (workrun.go), a listener on its record ends its
// context once the call is closed on any instance, and a loop stores the
// latest progress at most once per ProgressInterval, renewing the hold
// with it. The result is recorded as an answer and delivered through the
// answer's path, so the agent is resumed once. Progress is stored on the
// record, never on the session document, whose writes would fence the
// lease holder; readers follow it with FollowedChat.Working.
//
// # Remote agents
//
// A remote A2A agent is a tool (Remote), not an ADK sub-agent: a
// sub-agent (ADK's agent/remoteagent) takes the conversation over and
// streams the remote task inside the caller's invocation, holding the
// instance and the chat for as long as the remote works, and has no way
// to put a remote's question to the person. A remote call pauses like a
// background call: its record (ledger.KindRemote, with the remote task's
// state) is stored with the event that holds it; the queue's worker
// (Team.Work) sends its message, and later its answers to the remote's
// questions and its cancel; the remote's push notifications (Notify) and
// the sweeper's reads (PollEvery) apply the task as the remote describes
// it when read, first writer wins. docs/remote-agents.md has the states.
//
// A completed task's result becomes the call's answer in one place
// (remoteresult.go): its files are stored in the chat's file store under
// names derived from the call and the part (so that a result applied
// twice stores each once) and ride as references among the function
// response's parts, which the files plugin turns into bytes for the
// model; its A2UI parts are checked against the remote tool's catalog
// and kept on the answer, then noted, as a Go tool's surfaces are, on
// the event that delivers the response (noteRemoteShows), where pages
// find them. What cannot be kept is a line of the answer, never a
// failure of the call: the remote's work is done, and the model can say
// what is missing. A question's A2UI is shown as text in the question:
// its form is Baton's own.
//
// Each of a remote call's tasks names its step (WorkRequest.Step: the
// call's message, an answer's "reply-" step, "cancel"), and a delivery
// sends its own step's message alone: the queue delivers at least once,
// and two of a call's tasks delivered at once after a crash would
// otherwise both send what the record says is due. The write that closes
// a call whose task runs leaves its cancel "to be enqueued" (as a send
// is before its task is created), so that the sweeper queues a cancel
// its closer did not (TestRemoteLostCancelRetried).
//
// # Operators
//
// The operator's console (package console) acts through the same paths:
// an answer is Resume with ResumeRequest.Operator (no client check, the
// record names the operator; first writer wins as for any answer), a stop
// is Stop, a sweep is Sweep. ExpireCall closes a call with a reason the
// model reads, first writer wins, and resumes its step as a sweep would;
// ReleaseLease takes a chat's lease over and releases it, so that a
// holder alive after all loses its writes to the fence (operator.go).
//
// # Metrics
//
// The team records invocations and their first-event latency, token
// usage, calls paused and resumed by kind, duplicate answers, live
// segments and sweeps on OpenTelemetry's global meter provider
// (metrics.go; docs/operator.md lists them), with bounded attributes.
//
// # Ledger records
//
// The records themselves, their queries, their first-writer-wins updates,
// their indexes and TTL are package ledger's; toolcallback decides when a
// record is written, answered, closed or marked resumed.
package toolcallback
