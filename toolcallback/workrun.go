package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/ledger"
)

// errCallClosed ends a background tool's context: its call was closed (a
// stop, a new message, a rewind, its expiry) or deleted with its session.
var errCallClosed = errors.New("the background call was closed")

// errToolPanicked is the error of a background tool that panicked, as the
// model reads it (the panic and its stack go to the log).
var errToolPanicked = errors.New("the tool failed unexpectedly")

// workRun is one attempt's run of a background call's work: the record as
// the attempt last wrote or read it (each of its writes is conditional on
// that version), the latest progress not stored yet, and whether the call
// was closed meanwhile. The tool reaches it through its context
// (Progress, Working).
type workRun struct {
	e       *engine
	claimed *Call // the call as the attempt claimed it
	hold    time.Duration

	mu       sync.Mutex
	held     *Call  // the record as last written or read
	progress []byte // the latest report not stored yet; nil: none
	closed   bool
}

type workRunKey struct{}

func newWorkRun(e *engine, claimed *Call, hold time.Duration) *workRun {
	return &workRun{e: e, claimed: claimed, held: claimed, hold: hold}
}

func workFrom(ctx context.Context) *workRun {
	w, _ := ctx.Value(workRunKey{}).(*workRun)
	return w
}

func (w *workRun) report(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.progress = b
}

func (w *workRun) latest() *Call {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held
}

func (w *workRun) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// close notes that the call was closed, and ends the tool's context.
func (w *workRun) close(cancel context.CancelCauseFunc) {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	cancel(errCallClosed)
}

// execute runs bt's work on the call until deadline, while a listener on
// the call's record ends the tool's context once the call is closed, and
// a loop stores the latest progress and renews the attempt's hold. Both
// have stopped when it returns.
//
// The listener is one listen stream per running call: Firestore bills a
// read for its first snapshot and one per change of the record, the
// attempt's own progress writes included, so a call costs a read for each
// write it makes, and its closing is heard within a listen round trip on
// whichever instance it is closed.
func (w *workRun) execute(ctx context.Context, bt *BackgroundTool, deadline time.Time) (map[string]any, error) {
	runCtx, cancelRun := context.WithDeadline(ctx, deadline)
	defer cancelRun()
	runCtx, cancel := context.WithCancelCause(runCtx)
	defer cancel(nil)
	side, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { w.watch(side, cancel) })
	wg.Go(func() { w.keep(side, cancel) })
	res, err := w.call(context.WithValue(runCtx, workRunKey{}, w), bt)
	stop()
	wg.Wait()
	return res, err
}

// call runs bt's work, with a panic turned into an error.
func (w *workRun) call(ctx context.Context, bt *BackgroundTool) (out map[string]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			w.e.opts.Logger.Error("background tool panicked", "tool", bt.Name(), "call", w.claimed.ID,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out, err = nil, fmt.Errorf("%w: %v", errToolPanicked, p)
		}
	}()
	return bt.run(ctx, w.claimed.Args)
}

// watch ends the tool's context once the call's record is no longer
// pending or is gone, until ctx ends. A listen stream that fails is
// opened again.
func (w *workRun) watch(ctx context.Context, cancel context.CancelCauseFunc) {
	for {
		closed, err := w.e.ledger.Await(ctx, w.claimed)
		switch {
		case ctx.Err() != nil:
			return
		case closed != nil || errors.Is(err, ledger.ErrNotFound):
			w.close(cancel)
			return
		}
		w.e.opts.Logger.Warn("listen to a background call's record", "call", w.claimed.ID, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// keep stores the latest progress at most once per ProgressInterval, and
// renews the attempt's hold with it, or on its own when a third of the
// hold is left, until ctx ends.
func (w *workRun) keep(ctx context.Context, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(w.e.opts.ProgressInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// A write is not cut short when the work ends: one cut after it
		// landed would leave the attempt with a stale version.
		write, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := w.store(write)
		done()
		if errors.Is(err, errCallClosed) {
			w.close(cancel)
			return
		} else if err != nil && ctx.Err() == nil {
			w.e.opts.Logger.Warn("store a background call's progress", "call", w.claimed.ID, "error", err)
		}
	}
}

// store writes the progress not stored yet, with the hold renewed, if
// there is some or the hold needs renewing: errCallClosed when the record
// changed because the call was closed or another attempt took the work.
func (w *workRun) store(ctx context.Context) error {
	now := platform.Now(ctx)
	w.mu.Lock()
	held, progress := w.held, w.progress
	w.progress = nil
	w.mu.Unlock()
	if progress == nil && held.Work.HeldUntil.Sub(now) > w.hold/3 {
		return nil
	}
	stored, err := w.e.ledger.Report(ctx, held, progress, now.Add(w.hold), now)
	if errors.Is(err, ledger.ErrChanged) {
		stored, err = w.e.ledger.Get(ctx, held.UserID, held.SessionID, held.ID)
		if err == nil && (stored.Status != StatusPending || stored.Work == nil || stored.Work.Holder != w.claimed.Work.Holder) {
			return errCallClosed
		}
		if err == nil {
			// Another writer touched the record (its enqueue's mark): the
			// report goes with the next tick, on the version read.
			w.mu.Lock()
			w.held = stored
			if w.progress == nil {
				w.progress = progress
			}
			w.mu.Unlock()
			return nil
		}
	}
	if err != nil {
		w.mu.Lock()
		if w.progress == nil {
			w.progress = progress
		}
		w.mu.Unlock()
		return err
	}
	w.mu.Lock()
	w.held = stored
	w.mu.Unlock()
	return nil
}
