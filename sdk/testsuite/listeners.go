package testsuite

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
)

// listeners are the callbacks a test sets with the SetOn*Listener methods.
// They are set before ExecuteWorkflow and only read while it runs; the
// activity listeners are called on the workers' goroutines, so concurrent
// activities call them concurrently, as in Temporal.
type listeners struct {
	activityStarted   func(info *activity.Info, ctx context.Context, args converter.EncodedValues)
	activityCompleted func(info *activity.Info, result converter.EncodedValue, err error)
	activityCanceled  func(info *activity.Info)
	activityHeartbeat func(info *activity.Info, details converter.EncodedValues)
	timerScheduled    func(timerID string, duration time.Duration)
	timerFired        func(timerID string)
	timerCanceled     func(timerID string)
}

// SetOnActivityStartedListener sets a function called before each
// activity call (mocked or not) runs, with the activity's info, its
// context and its arguments (the context argument left out).
func (env *TestWorkflowEnvironment) SetOnActivityStartedListener(
	listener func(activityInfo *activity.Info, ctx context.Context, args converter.EncodedValues)) *TestWorkflowEnvironment {
	env.mustNotHaveStarted("SetOnActivityStartedListener")
	env.listen.activityStarted = listener
	return env
}

// SetOnActivityCompletedListener sets a function called after each
// activity call returns, with its result (no value for an activity that
// returns only an error) and its error. A call that returns after its
// context was cancelled goes to the canceled listener instead.
func (env *TestWorkflowEnvironment) SetOnActivityCompletedListener(
	listener func(activityInfo *activity.Info, result converter.EncodedValue, err error)) *TestWorkflowEnvironment {
	env.mustNotHaveStarted("SetOnActivityCompletedListener")
	env.listen.activityCompleted = listener
	return env
}

// SetOnActivityCanceledListener sets a function called after an activity
// call returns with its context cancelled (the workflow cancelled it, or
// the run ended).
func (env *TestWorkflowEnvironment) SetOnActivityCanceledListener(
	listener func(activityInfo *activity.Info)) *TestWorkflowEnvironment {
	env.mustNotHaveStarted("SetOnActivityCanceledListener")
	env.listen.activityCanceled = listener
	return env
}

// SetOnActivityHeartbeatListener sets a function called with the details
// of an activity's heartbeats. As in Temporal it sees the heartbeats a
// worker would send, not every activity.RecordHeartbeat: the first, then
// at most one per throttle interval (80% of the activity's
// HeartbeatTimeout, or 30 seconds without one, at most a minute), and,
// when the activity fails, the last one held back. It may be called
// concurrently.
func (env *TestWorkflowEnvironment) SetOnActivityHeartbeatListener(
	listener func(activityInfo *activity.Info, details converter.EncodedValues)) *TestWorkflowEnvironment {
	env.mustNotHaveStarted("SetOnActivityHeartbeatListener")
	env.listen.activityHeartbeat = listener
	return env
}

// SetOnTimerScheduledListener sets a function called when workflow code
// starts a timer (workflow.NewTimer, Sleep, AwaitWithTimeout), with the
// timer's id and duration. Replays of the workflow do not call it again.
func (env *TestWorkflowEnvironment) SetOnTimerScheduledListener(
	listener func(timerID string, duration time.Duration)) *TestWorkflowEnvironment {
	env.mustNotHaveStarted("SetOnTimerScheduledListener")
	env.listen.timerScheduled = listener
	return env
}

// SetOnTimerFiredListener sets a function called when a workflow's timer
// fires, with the id the scheduled listener saw.
func (env *TestWorkflowEnvironment) SetOnTimerFiredListener(listener func(timerID string)) *TestWorkflowEnvironment {
	env.mustNotHaveStarted("SetOnTimerFiredListener")
	env.listen.timerFired = listener
	return env
}

// SetOnTimerCanceledListener sets a function called when a workflow's
// timer is cancelled before it fired, with the id the scheduled listener
// saw.
func (env *TestWorkflowEnvironment) SetOnTimerCanceledListener(listener func(timerID string)) *TestWorkflowEnvironment {
	env.mustNotHaveStarted("SetOnTimerCanceledListener")
	env.listen.timerCanceled = listener
	return env
}

// Timer implements sdkhook.TestEnv: it passes a run's timer event to the
// listener set for it.
func (h envHooks) Timer(event sdkhook.TimerEvent, timerID string, duration time.Duration) {
	l := &h.env.listen
	switch event {
	case sdkhook.TimerScheduled:
		if l.timerScheduled != nil {
			l.timerScheduled(timerID, duration)
		}
	case sdkhook.TimerFired:
		if l.timerFired != nil {
			l.timerFired(timerID)
		}
	case sdkhook.TimerCanceled:
		if l.timerCanceled != nil {
			l.timerCanceled(timerID)
		}
	}
}

// activityCall brackets one activity call for the activity listeners: it
// reports the start, may give the activity a context whose heartbeats
// reach the heartbeat listener, and reports how the call ended.
type activityCall struct {
	l     *listeners
	ctx   context.Context // nil when the function takes no context
	info  *activity.Info
	beats *beatEnv
}

// startActivityCall reports a call with args to the started listener and
// returns args, their context replaced when heartbeats are listened to.
func (env *TestWorkflowEnvironment) startActivityCall(args []reflect.Value) (*activityCall, []reflect.Value) {
	c := &activityCall{l: &env.listen}
	in := args
	if len(args) > 0 {
		if ctx, ok := args[0].Interface().(context.Context); ok && ctx != nil && activity.IsActivity(ctx) {
			c.ctx = ctx
			info := activity.GetInfo(ctx)
			c.info = &info
			in = args[1:]
		}
	}
	if c.info == nil {
		c.info = &activity.Info{}
	}
	if c.l.activityHeartbeat != nil && c.ctx != nil {
		if inner, ok := c.ctx.Value(sdkhook.ActivityEnvKey{}).(activityEnv); ok {
			c.beats = &beatEnv{activityEnv: inner, info: c.info, listener: c.l.activityHeartbeat,
				interval: heartbeatThrottle(c.info.HeartbeatTimeout)}
			c.ctx = context.WithValue(c.ctx, sdkhook.ActivityEnvKey{}, activityEnv(c.beats))
			args = append([]reflect.Value{reflect.ValueOf(c.ctx)}, args[1:]...)
		}
	}
	if c.l.activityStarted != nil {
		if len(in) == 1 && in[0].Type() == encodedValuesType {
			// A dynamic activity's arguments are encoded already.
			c.l.activityStarted(c.info, c.ctx, in[0].Interface().(converter.EncodedValues))
			return c, args
		}
		values := make([]any, len(in))
		for i, a := range in {
			values[i] = a.Interface()
		}
		payload, err := converter.Encode(values...)
		if err != nil {
			env.logger.Error("testsuite: the activity's arguments do not encode for the started listener", "activity", c.info.ActivityType.Name, "error", err)
		}
		c.l.activityStarted(c.info, c.ctx, converter.NewEncodedValues(payload))
	}
	return c, args
}

// end reports the call's results to the completed or canceled listener.
func (c *activityCall) end(out []reflect.Value) {
	var err error
	if e, ok := out[len(out)-1].Interface().(error); ok {
		err = e
	}
	if c.beats != nil && err != nil {
		c.beats.flush()
	}
	if c.ctx != nil && errors.Is(context.Cause(c.ctx), context.Canceled) {
		if c.l.activityCanceled != nil {
			c.l.activityCanceled(c.info)
		}
		return
	}
	if c.l.activityCompleted == nil {
		return
	}
	result := converter.NewEncodedValue(nil)
	if len(out) == 2 && err == nil {
		if payload, encErr := converter.Encode(out[0].Interface()); encErr == nil {
			result = converter.NewEncodedValue(payload)
		}
	}
	c.l.activityCompleted(c.info, result, err)
}

// activityEnv is what the worker puts in an activity's context (the
// method set sdk/activity asks of it).
type activityEnv interface {
	Info() activity.Info
	Heartbeat(details []byte)
	HeartbeatDetails() []byte
	Logger() *slog.Logger
	WorkerStop() <-chan struct{}
}

// Temporal's worker sends a heartbeat at once and then at most one per
// throttle interval: 80% of the heartbeat timeout, else a default, never
// more than a maximum.
const (
	defaultHeartbeatThrottle = 30 * time.Second
	maxHeartbeatThrottle     = time.Minute
)

func heartbeatThrottle(heartbeatTimeout time.Duration) time.Duration {
	d := defaultHeartbeatThrottle
	if heartbeatTimeout > 0 {
		d = heartbeatTimeout * 4 / 5
	}
	return min(d, maxHeartbeatThrottle)
}

// beatEnv passes an activity's heartbeats on to the worker and, as
// Temporal's worker would send them, to the heartbeat listener.
type beatEnv struct {
	activityEnv
	info     *activity.Info
	listener func(info *activity.Info, details converter.EncodedValues)
	interval time.Duration

	mu       sync.Mutex
	lastSent time.Time // real time: activity code runs in real time
	held     []byte
	holding  bool
}

func (b *beatEnv) Heartbeat(details []byte) {
	b.activityEnv.Heartbeat(details)
	now := time.Now()
	b.mu.Lock()
	send := b.lastSent.IsZero() || now.Sub(b.lastSent) >= b.interval
	if send {
		b.lastSent, b.held, b.holding = now, nil, false
	} else {
		b.held, b.holding = append([]byte(nil), details...), true
	}
	b.mu.Unlock()
	if send {
		b.listener(b.info, converter.NewEncodedValues(details))
	}
}

// flush reports the heartbeat held back, when the activity failed.
func (b *beatEnv) flush() {
	b.mu.Lock()
	details, holding := b.held, b.holding
	b.held, b.holding = nil, false
	b.mu.Unlock()
	if holding {
		b.listener(b.info, converter.NewEncodedValues(details))
	}
}
