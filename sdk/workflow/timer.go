package workflow

import (
	"time"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
)

// NewTimer returns a future that becomes ready, with no value, d after the
// current workflow time. The worker is handed a timer command that fires at
// Now+d (Unix ms, rounded up). A d of zero or less is ready at once and
// issues nothing. When ctx is cancelled first, the future fails with
// ErrCanceled at once and the worker records timer_canceled and removes the
// timer, so it never fires.
func NewTimer(ctx Context, d time.Duration) Future {
	if o := outboundOf(ctx); o != nil {
		return o.NewTimer(ctx, d)
	}
	return newTimer(ctx, d)
}

func newTimer(ctx Context, d time.Duration) Future {
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
	te := testEnvOf(ctx)
	var cmd *replay.Command
	fired := false
	cmd = st.x.Issue(replay.KindTimer, "", nil, nil, fireAt, func(r replay.Resolution) {
		if r.Failed {
			set(nil, ErrCanceled) // timer_canceled
			return
		}
		fired = true
		if te != nil && !st.x.IsReplaying() {
			te.Timer(sdkhook.TimerFired, cmd.Step, d)
		}
		set(nil, nil)
	})
	if te != nil {
		watchTimerForTest(ctx, st.x, te, cmd, d, &fired)
	}
	watchCancel(ctx, st.x, cmd, f, false)
	return f
}

// watchTimerForTest tells a test environment of a timer's scheduling and,
// when ctx is cancelled before it fires, of its cancellation, as the
// workflow code does them (a replay re-running them tells nothing).
func watchTimerForTest(ctx Context, x *replay.Execution, te sdkhook.TestEnv, cmd *replay.Command, d time.Duration, fired *bool) {
	if !cmd.Recorded && !x.IsReplaying() {
		te.Timer(sdkhook.TimerScheduled, cmd.Step, d)
	}
	if ctx.Done() == nil {
		return
	}
	disp := envOf(ctx).Dispatcher()
	disp.Go("timer-test-watch", func() {
		disp.Block(func() bool { return *fired || ctx.Err() != nil })
		if !*fired && !x.IsReplaying() {
			te.Timer(sdkhook.TimerCanceled, cmd.Step, d)
		}
	})
}

// Sleep blocks for d of workflow time. It returns ErrCanceled if ctx is
// cancelled first, else nil.
func Sleep(ctx Context, d time.Duration) error {
	if o := outboundOf(ctx); o != nil {
		return o.Sleep(ctx, d)
	}
	return newTimer(ctx, d).Get(ctx, nil)
}

// AwaitWithTimeout blocks until condition returns true (ok == true), until
// d of workflow time has passed (ok == false), or until ctx is cancelled
// (err == ErrCanceled). condition is checked whenever the coroutine gets a
// turn, as for Await; when it holds as the timer fires, ok is true. The
// timer is cancelled when the wait ends.
func AwaitWithTimeout(ctx Context, d time.Duration, condition func() bool) (ok bool, err error) {
	if o := outboundOf(ctx); o != nil {
		return o.AwaitWithTimeout(ctx, d, condition)
	}
	return awaitWithTimeout(ctx, d, condition)
}

func awaitWithTimeout(ctx Context, d time.Duration, condition func() bool) (ok bool, err error) {
	timerCtx, cancel := WithCancel(ctx)
	defer cancel()
	timer := newTimer(timerCtx, d)
	if err := await(ctx, func() bool { return condition() || timer.IsReady() }); err != nil {
		return false, err
	}
	return condition(), nil
}
