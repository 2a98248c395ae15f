package workflow

import (
	"time"

	"github.com/heddlewf/heddle/sdk/converter"
)

// The …WithOptions calls below are Temporal's variants of calls heddle
// has, taking an options struct whose fields are descriptions for
// Temporal's UI (a summary, a description). heddle's history does not
// record those texts, so the options change nothing: each call behaves as
// its plain form, and goes through a worker's interceptors as that form
// does. They exist so that code using them ports unchanged.

// TimerOptions describe a timer. Summary is not recorded by heddle.
type TimerOptions struct {
	Summary string
}

// AwaitOptions bound an AwaitWithOptions: Timeout is the longest wait in
// workflow time, and TimerOptions describe the timer that measures it.
type AwaitOptions struct {
	Timeout      time.Duration
	TimerOptions TimerOptions
}

// SideEffectOptions describe a side effect. Summary is not recorded.
type SideEffectOptions struct {
	Summary string
}

// MutableSideEffectOptions describe a mutable side effect. Summary is not
// recorded.
type MutableSideEffectOptions struct {
	Summary string
}

// QueryHandlerOptions describe a query handler. Description is not
// recorded.
type QueryHandlerOptions struct {
	Description string
}

// SignalChannelOptions describe a signal channel. Description is not
// recorded.
type SignalChannelOptions struct {
	Description string
}

// NewTimerWithOptions is NewTimer(ctx, d).
func NewTimerWithOptions(ctx Context, d time.Duration, options TimerOptions) Future {
	return NewTimer(ctx, d)
}

// AwaitWithOptions is AwaitWithTimeout(ctx, options.Timeout, condition):
// ok is false when the timeout passed first.
func AwaitWithOptions(ctx Context, options AwaitOptions, condition func() bool) (ok bool, err error) {
	return AwaitWithTimeout(ctx, options.Timeout, condition)
}

// SideEffectWithOptions is SideEffect(ctx, f).
func SideEffectWithOptions(ctx Context, options SideEffectOptions, f func(ctx Context) any) converter.EncodedValue {
	return SideEffect(ctx, f)
}

// MutableSideEffectWithOptions is MutableSideEffect(ctx, id, f, equals).
func MutableSideEffectWithOptions(ctx Context, id string, options MutableSideEffectOptions, f func(ctx Context) any, equals func(a, b any) bool) converter.EncodedValue {
	return MutableSideEffect(ctx, id, f, equals)
}

// SetQueryHandlerWithOptions is SetQueryHandler(ctx, queryType, handler).
func SetQueryHandlerWithOptions(ctx Context, queryType string, handler any, options QueryHandlerOptions) error {
	return SetQueryHandler(ctx, queryType, handler)
}

// GetSignalChannelWithOptions is GetSignalChannel(ctx, signalName).
func GetSignalChannelWithOptions(ctx Context, signalName string, options SignalChannelOptions) ReceiveChannel {
	return GetSignalChannel(ctx, signalName)
}
