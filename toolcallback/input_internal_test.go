package toolcallback

import (
	"testing"

	"github.com/baton-run/baton/uistream"
)

// The stream recognises input requests by the key this package writes, and
// names their forms as callers see them here.
func TestInputNamesMatchStream(t *testing.T) {
	if inputPayloadKey != uistream.InputPayloadKey || InputToolName != uistream.InputToolName {
		t.Errorf("payload key %q and tool name %q here; %q and %q in uistream", inputPayloadKey, InputToolName, uistream.InputPayloadKey, uistream.InputToolName)
	}
}
