package sessionstore

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestChatSessionID: every valid chat id and switch count name a valid
// session, and two different pairs never name the same one, including chat
// ids chosen to look like derived ids.
func TestChatSessionID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("c", MaxIDBytes)
	hashed := ChatSessionID(long, 1)
	chats := []string{"c", "c~1", strings.Repeat("c", 1480), strings.Repeat("c", 1481), long, hashed, hashed + "~1", "1~sha256-"}
	seen := map[string]string{}
	for _, chat := range chats {
		if err := ValidateID("chat id", chat); err != nil {
			t.Fatalf("test chat id %.20q is invalid: %v", chat, err)
		}
		for _, n := range []int{0, 1, 9, 10, 11, math.MaxInt} {
			id := ChatSessionID(chat, n)
			pair := fmt.Sprintf("(%d-byte chat %.20q, %d)", len(chat), chat, n)
			if err := ValidateID("session id", id); err != nil {
				t.Errorf("ChatSessionID%s = %.40q: %v", pair, id, err)
			}
			if prev, dup := seen[id]; dup {
				t.Errorf("ChatSessionID%s = %.40q, the same as chatSessionID%s", pair, id, prev)
			}
			seen[id] = pair
		}
	}
}
