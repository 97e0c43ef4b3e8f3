package toolcallback

// OnAwaitingClaim makes the Team built with o call fn whenever an append
// starts waiting for its invocation's staged claim (see awaitClaim).
func OnAwaitingClaim(o *Options, fn func()) { o.awaitingClaim = fn }
