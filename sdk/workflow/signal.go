package workflow

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
