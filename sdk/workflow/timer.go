package workflow

import (
	"time"

	"github.com/heddlewf/heddle/internal/replay"
)

// NewTimer returns a future that becomes ready, with no value, d after the
// current workflow time. The worker is handed a timer command that fires at
// Now+d (Unix ms, rounded up). A d of zero or less is ready at once and
// issues nothing. When ctx is cancelled first, the future fails with
// ErrCanceled at once and the worker records timer_canceled and removes the
// timer, so it never fires.
func NewTimer(ctx Context, d time.Duration) Future {
	st := stateOf(ctx)
	f, set := newCommandFuture()
	if ctx.Err() != nil {
		set(nil, ErrCanceled)
		return f
	}
	if d <= 0 {
		set(nil, nil)
		return f
	}
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	fireAt := st.x.Now().UnixMilli() + ms
	cmd := st.x.Issue(replay.KindTimer, "", nil, nil, fireAt, func(r replay.Resolution) {
		if r.Failed {
			set(nil, ErrCanceled) // timer_canceled
			return
		}
		set(nil, nil)
	})
	watchCancel(ctx, st.x, cmd, f, false)
	return f
}

// Sleep blocks for d of workflow time. It returns ErrCanceled if ctx is
// cancelled first, else nil.
func Sleep(ctx Context, d time.Duration) error {
	return NewTimer(ctx, d).Get(ctx, nil)
}

// AwaitWithTimeout blocks until condition returns true (ok == true), until
// d of workflow time has passed (ok == false), or until ctx is cancelled
// (err == ErrCanceled). condition is checked whenever the coroutine gets a
// turn, as for Await; when it holds as the timer fires, ok is true. The
// timer is cancelled when the wait ends.
func AwaitWithTimeout(ctx Context, d time.Duration, condition func() bool) (ok bool, err error) {
	timerCtx, cancel := WithCancel(ctx)
	defer cancel()
	timer := NewTimer(timerCtx, d)
	if err := Await(ctx, func() bool { return condition() || timer.IsReady() }); err != nil {
		return false, err
	}
	return condition(), nil
}
