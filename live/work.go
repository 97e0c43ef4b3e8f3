package live

import (
	"time"

	"github.com/baton-run/baton/toolcallback"
)

// followWork starts, once, when the client is shown a pending background
// call among calls, a listener on the session's background work
// (LiveSegment.Working) that sends each new progress report as a
// ToolProgress, until the conversation ends. A segment that never shows
// background work opens no listener; one that does pays a read per
// record change delivered (a progress write at most once per
// ProgressInterval per call) while it lasts.
func (c *Conversation) followWork(calls []*toolcallback.Call) {
	background := false
	for _, call := range calls {
		background = background || (toolcallback.IsWork(call.Kind) && call.Status == toolcallback.StatusPending)
	}
	c.mu.Lock()
	start := background && !c.following && !c.ended
	c.following = c.following || start
	c.mu.Unlock()
	if !start {
		return
	}
	c.tools.Add(1)
	go func() {
		defer c.tools.Done()
		shown := map[string]time.Time{} // when each call's progress last sent was stored
		for call, err := range c.seg.Working(c.ctx) {
			if err != nil {
				if c.ctx.Err() == nil {
					c.r.opts.Logger.Warn("live: follow background work", "chat", c.req.ChatID, "error", err)
				}
				continue
			}
			w := call.Work
			if call.Status != toolcallback.StatusPending || w == nil || len(w.Progress) == 0 || w.ProgressAt.Equal(shown[call.ID]) {
				continue
			}
			shown[call.ID] = w.ProgressAt
			c.send(ToolProgress{Type: "tool-progress", ToolCallID: call.OriginalID, ToolName: call.Tool, Progress: w.Progress})
		}
	}()
}
