package toolcallback

// CheckAnswer reports whether c can take a as its answer, by the answer's
// shape alone: a decision for an approval, an output or an error for a
// browser or external call, responses that fit a question, an action a
// form offered. It reads nothing, and says nothing of c's state (answered,
// expired): Resume checks that too when it records the answer. A door
// checks answers with it before it stores anything of a message that
// carries them (A2A: before a2a-go adds the message to its task).
func CheckAnswer(c *Call, a Answer) error {
	switch c.Kind {
	case KindSurface:
		return checkSurfaceAnswer(c, a)
	case KindInput:
		return checkInputAnswer(c, a)
	}
	return checkAnswer(c.Kind, a)
}
