package toolcallback

// OnAwaitingClaim makes the Team built with o call fn whenever the run
// starts waiting for its invocation's staged claim (see awaitStagedClaim).
func OnAwaitingClaim(o *Options, fn func()) { o.awaitingClaim = fn }

// ParseHolder reads a holder as a lease stores it.
var ParseHolder = parseHolder
