package toolcallback

import (
	"fmt"

	"github.com/baton-run/baton/userinput"
)

// Check reports whether c can take a as its answer, by the answer's shape
// alone: a decision for an approval, an output or an error for a browser or
// external call, responses that fit a question, an action a form offered.
// It reads nothing, and says nothing of c's state (answered, expired):
// Resume checks both when it records the answer. A door checks answers with
// it before it stores anything of a message that carries them (A2A: before
// a2a-go adds the message to its task).
func (c *Call) Check(a Answer) error {
	switch {
	case c.Kind == KindSurface:
		return checkSurfaceAnswer(c, a)
	case c.Kind == KindInput && c.Input != nil:
		return checkReply(c.Input, a)
	}
	return checkAnswer(c.Kind, a)
}

// checkReply checks an answer to the question req.
func checkReply(req *userinput.Request, a Answer) error {
	if a.Approved != nil || a.Payload != nil || a.Error != "" || a.Output == nil {
		return fmt.Errorf("%w: an input call takes an output {\"responses\": {...}}", ErrInvalidAnswer)
	}
	if _, err := userinput.Check(req, a.Output); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	return nil
}
