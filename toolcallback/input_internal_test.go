package toolcallback

import (
	"testing"

	"github.com/baton-run/baton/uistream"
)

// The stream recognises input requests by the key this package writes, and
// names their forms as callers see them here. Neither package may import
// the other (DESIGN.md: uistream imports ADK only, and toolcallback's list
// does not hold uistream), so each declares the two names and this test
// holds them equal.
func TestInputNamesMatchStream(t *testing.T) {
	if inputPayloadKey != uistream.InputPayloadKey || InputToolName != uistream.InputToolName {
		t.Errorf("payload key %q and tool name %q here; %q and %q in uistream", inputPayloadKey, InputToolName, uistream.InputPayloadKey, uistream.InputToolName)
	}
}
