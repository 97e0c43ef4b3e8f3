package toolcallback

import (
	"strings"
)

// ChatOfSession returns the chat whose n-th agent session sid is (the
// inverse of chatSessionID), so that a tool can keep what it holds per
// chat across agent switches. ok is false for a session that is not a
// chat's (one made outside a Team) and for the hashed form of chat
// ids too long to carry, whose chat id cannot be recovered.
func ChatOfSession(sid string) (chat string, ok bool) {
	i := strings.LastIndexByte(sid, '~')
	if i <= 0 || i == len(sid)-1 {
		return "", false
	}
	for _, c := range sid[i+1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return sid[:i], true
}
