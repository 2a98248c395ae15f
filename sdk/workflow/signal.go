package workflow

import (
	"slices"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/replay"
)

// GetSignalChannel returns the channel of the signals named name sent to
// this workflow, in the order the history received them. There is one
// channel per name and execution: every call with a name returns the same
// channel. Signals that arrived before the first call are kept and are on
// the channel when it is returned. A receiver decodes a signal's payload
// (converter.Encode of the signal's argument) into its value pointer.
func GetSignalChannel(ctx Context, name string) ReceiveChannel {
	if o := outboundOf(ctx); o != nil {
		return o.GetSignalChannel(ctx, name)
	}
	return getSignalChannel(ctx, name)
}

func getSignalChannel(ctx Context, name string) ReceiveChannel {
	st := stateOf(ctx)
	if ch := st.signals[name]; ch != nil {
		return ch
	}
	ch := newChannel(name, 0)
	st.signals[name] = ch
	for _, p := range st.pending[name] {
		_ = deliverToChannel(ch, p) // a new channel is open
	}
	delete(st.pending, name)
	return ch
}

// signalsRead is for the worker (sdkhook.SignalsRead): the names of the
// signal channels the workflow x runs asked for, and the engine's name of
// updates when it has update handlers, sorted.
func signalsRead(x *replay.Execution) []string {
	st, ok := x.Local().(*state)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(st.signals)+1)
	for name := range st.signals {
		names = append(names, name)
	}
	if len(st.upd.handlers) > 0 {
		names = append(names, engine.UpdateSignalName)
	}
	slices.Sort(names)
	return names
}
