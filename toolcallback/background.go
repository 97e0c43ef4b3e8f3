package toolcallback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/adk/v2/tool"

	"github.com/baton-run/baton/ledger"
)

// KindBackground calls are a Go tool's work run off the request (see
// Background).
const KindBackground = ledger.KindBackground

// BackgroundConfig declares a tool whose calls run in the background.
type BackgroundConfig struct {
	Name        string
	Description string
	// Timeout bounds a call from the model's request to its result, every
	// attempt and every wait in the queue included; hours are allowed. A
	// call whose time runs out is cancelled (its work's context ends) and
	// the model told so. Zero uses the team's CallTimeout.
	Timeout time.Duration
	// MaxAttempts bounds the attempts of a call whose work fails with an
	// error marked Retryable (the queue's backoff between them); the last
	// error goes to the model. Default 3. The queue's own maximum attempts
	// must allow as many (infra/terraform's does).
	MaxAttempts int
}

// BackgroundTool is a tool whose calls run in the background: the model's
// call pauses the agent like a browser call (its ledger record is stored
// with the event that holds it, and the turn ends), a queue delivers the
// work to a worker of the same deployment on any instance (Team.Work),
// and the work's result resumes the agent, once. Give it to the agent's
// tools and to its team member's Background, where the worker finds it.
type BackgroundTool struct {
	*pausing
	attempts int
	// run runs the work with the call's arguments and returns its result
	// as the model receives it.
	run func(ctx context.Context, args map[string]any) (map[string]any, error)
}

// Background declares a tool whose calls run run in the background, with
// typed arguments and result (the argument schema is inferred from Args).
// run is given a context that ends when the call is cancelled (a stop, a
// new message under the cancel policy, a regenerate or an edit that takes
// the call back, the call's timeout), on whichever instance that happens;
// it may report progress (Progress) and mark an error worth another
// attempt (Retryable). A panic in run is the call's error, never the
// worker's crash.
func Background[Args, Result any](cfg BackgroundConfig, run func(ctx context.Context, args Args) (Result, error)) (*BackgroundTool, error) {
	if run == nil {
		return nil, fmt.Errorf("background tool %q: no function", cfg.Name)
	}
	attempts := cfg.MaxAttempts
	if attempts <= 0 {
		attempts = 3
	}
	p, err := pausingTool[Args](cfg.Name, cfg.Description, pauseSpec{Kind: KindBackground, Timeout: cfg.Timeout, AnyDevice: true, attempts: attempts})
	if err != nil {
		return nil, err
	}
	bt := &BackgroundTool{pausing: p.(*pausing), attempts: attempts}
	bt.run = func(ctx context.Context, raw map[string]any) (map[string]any, error) {
		var args Args
		b, err := json.Marshal(raw)
		if err == nil {
			err = json.Unmarshal(b, &args)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: arguments of %s: %w", errBadArguments, cfg.Name, err)
		}
		res, err := run(ctx, args)
		if err != nil {
			return nil, err
		}
		return resultOf(res)
	}
	return bt, nil
}

var _ tool.Tool = (*BackgroundTool)(nil)

// errBadArguments: the model's arguments do not fit the tool's type.
var errBadArguments = errors.New("bad arguments")

// resultOf is a tool's result as the model receives it: a JSON object as
// it is, anything else under "result".
func resultOf(res any) (map[string]any, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	var out map[string]any
	if json.Unmarshal(b, &out) == nil && out != nil {
		return out, nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return map[string]any{"result": v}, nil
}

// retryable marks an error worth another attempt.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// Retryable marks err, returned by a background tool's work, as worth
// another attempt: the call stays pending and the queue delivers it again
// after its backoff, up to BackgroundConfig.MaxAttempts; the last error
// goes to the model. Errors not marked go to the model at once.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return retryable{err}
}

// isRetryable reports whether err was marked Retryable.
func isRetryable(err error) bool {
	var r retryable
	return errors.As(err, &r)
}

// ErrNotInWork: Progress or Working was called outside a background
// tool's work.
var ErrNotInWork = errors.New("not in a background call's work")

// ErrProgressTooLarge: a progress report is larger than MaxProgressBytes.
var ErrProgressTooLarge = errors.New("progress report too large")

// MaxProgressBytes bounds one progress report's JSON.
const MaxProgressBytes = 4 << 10

// Progress reports how the work of the background call running on ctx
// goes: v is a small JSON value (a string is a line of text), shown to
// every reader of the chat as the call's preliminary output. Reports are
// kept in memory and the latest is stored at most once per
// Options.ProgressInterval, so a tool may report as often as it likes;
// the last one before the result may never be stored.
func Progress(ctx context.Context, v any) error {
	w := workFrom(ctx)
	if w == nil {
		return ErrNotInWork
	}
	var b []byte
	var err error
	if raw, ok := v.(json.RawMessage); ok && json.Valid(raw) {
		b = raw
	} else if b, err = json.Marshal(v); err != nil {
		return fmt.Errorf("encode progress: %w", err)
	}
	if len(b) > MaxProgressBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrProgressTooLarge, len(b), MaxProgressBytes)
	}
	w.report(b)
	return nil
}

// Working returns the background call whose work runs on ctx, as its
// attempt claimed it (its user, session and id, the attempt's number in
// Work.Attempt).
func Working(ctx context.Context) (*Call, error) {
	w := workFrom(ctx)
	if w == nil {
		return nil, ErrNotInWork
	}
	c := *w.claimed
	return &c, nil
}
